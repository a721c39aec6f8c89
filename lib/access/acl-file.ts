// Parser for EMQ X 3.x `etc/acl.conf`: a sequence of Erlang terms, each ending
// with `.`, `%` comments to end of line. A tiny tokenizer and recursive-descent
// parser build generic terms, which are then validated into AclRule values.
// Errors are AclFileError with a message starting "<file>:<line>: ".

import { readFile } from 'node:fs/promises';
import { compileTopicFilter, parseCidr } from './acl-match.js';
import type { AclPermission, AclRule, AclTopic, AclWho } from './acl-match.js';

export type {
  AclAccess, AclCidr, AclClient, AclDecision, AclPermission, AclRule, AclTopic, AclWho,
} from './acl-match.js';

export class AclFileError extends Error {
  readonly file: string;
  readonly line: number;
  constructor(file: string, line: number, detail: string) {
    super(`${file}:${line}: ${detail}`);
    this.name = 'AclFileError';
    this.file = file;
    this.line = line;
  }
}

type Token =
  | { type: '{' | '}' | '[' | ']' | ',' | '.' | 'eof'; line: number }
  | { type: 'atom' | 'string'; value: string; line: number };

type Atom = { type: 'atom'; value: string; line: number };
type Term =
  | Atom
  | { type: 'string'; value: string; line: number }
  | { type: 'tuple' | 'list'; items: Term[]; line: number };
type Fail = (line: number, msg: string) => never;

const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', n: '\n', t: '\t', r: '\r', s: ' ' };
const ATOM_START = /[a-z]/;
const ATOM_CHAR = /[A-Za-z0-9_@]/;

function tokenize(text: string, fail: Fail): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') { line++; i++; continue; }
    if (c === ' ' || c === '\t' || c === '\r') { i++; continue; }
    if (c === '%') { while (i < text.length && text[i] !== '\n') i++; continue; }
    if ('{}[],.'.includes(c)) { tokens.push({ type: c as '{', line }); i++; continue; }
    if (c === '"' || c === "'") { // string or quoted atom
      const start = line;
      let value = '';
      for (i++; ; i++) {
        if (i >= text.length) fail(start, `unterminated ${c === '"' ? 'string' : 'quoted atom'}`);
        const d = text[i];
        if (d === c) break;
        if (d === '\n') line++;
        if (d !== '\\') { value += d; continue; }
        const e = text[++i];
        if (e === undefined) continue; // reported as unterminated
        if (!Object.hasOwn(ESCAPES, e)) fail(line, `unsupported escape sequence '\\${e}'`);
        value += ESCAPES[e];
      }
      i++;
      tokens.push({ type: c === '"' ? 'string' : 'atom', value, line: start });
      continue;
    }
    if (ATOM_START.test(c)) {
      let j = i + 1;
      while (j < text.length && ATOM_CHAR.test(text[j])) j++;
      tokens.push({ type: 'atom', value: text.slice(i, j), line });
      i = j;
      continue;
    }
    fail(line, /[A-Z_]/.test(c) ? `unexpected variable-like name starting with '${c}' (atoms are lower case or 'quoted')`
      : `unexpected character '${c}'`);
  }
  tokens.push({ type: 'eof', line });
  return tokens;
}

function describe(t: Token): string {
  if (t.type === 'eof') return 'end of file';
  if (t.type === 'atom') return `atom '${t.value}'`;
  if (t.type === 'string') return `string ${JSON.stringify(t.value)}`;
  return `'${t.type}'`;
}

function parseTerms(text: string, fail: Fail): Term[] {
  const tokens = tokenize(text, fail);
  let pos = 0;
  const term = (): Term => {
    const t = tokens[pos++];
    if (t.type === 'atom' || t.type === 'string') return t;
    if (t.type !== '{' && t.type !== '[') fail(t.line, `unexpected ${describe(t)}`);
    const close = t.type === '{' ? '}' : ']';
    const items: Term[] = [];
    if (tokens[pos].type === close) pos++;
    else {
      for (;;) {
        if (tokens[pos].type === 'eof') fail(t.line, `'${t.type}' opened here is never closed`);
        items.push(term());
        const sep = tokens[pos++];
        if (sep.type === close) break;
        if (sep.type === 'eof') fail(t.line, `'${t.type}' opened here is never closed`);
        if (sep.type !== ',') {
          fail(sep.line, `expected ',' or '${close}' but found ${describe(sep)} ('${t.type}' opened on line ${t.line})`);
        }
      }
    }
    return { type: t.type === '{' ? 'tuple' : 'list', items, line: t.line };
  };
  const terms: Term[] = [];
  while (tokens[pos].type !== 'eof') {
    const start = tokens[pos];
    const value = term();
    const dot = tokens[pos++];
    if (dot.type === '}' || dot.type === ']') fail(dot.line, `unbalanced '${dot.type}'`);
    if (dot.type !== '.') {
      fail(start.line, `missing '.' after the term starting on this line (found ${describe(dot)} on line ${dot.line})`);
    }
    terms.push(value);
  }
  return terms;
}

function show(t: Term): string {
  if (t.type === 'atom') return `'${t.value}'`;
  if (t.type === 'string') return JSON.stringify(t.value);
  return t.type === 'tuple' ? 'a tuple' : 'a list';
}

/** Parse acl.conf text into rules (in file order). Throws AclFileError. */
export function parseAclFile(text: string, fileName: string): AclRule[] {
  const fail: Fail = (line, msg) => { throw new AclFileError(fileName, line, msg); };
  const isAtom = (t: Term, v: string): t is Atom => t.type === 'atom' && t.value === v;
  const str = (t: Term, what: string): string =>
    t.type === 'string' ? t.value : fail(t.line, `${what} must be a "string", got ${show(t)}`);
  const list = (t: Term, what: string): Term[] =>
    t.type === 'list' ? t.items : fail(t.line, `${what} must be a list [...], got ${show(t)}`);

  const who = (t: Term): AclWho => {
    if (isAtom(t, 'all')) return { kind: 'all' };
    if (t.type !== 'tuple' || t.items.length !== 2 || t.items[0].type !== 'atom') {
      return fail(t.line, `invalid subject ${show(t)}: expected all, {user, _}, {client, _}, {ipaddr, _}, {'and', [...]} or {'or', [...]}`);
    }
    const [k, v] = t.items;
    switch (k.value) {
      case 'user': return { kind: 'user', name: isAtom(v, 'all') ? null : str(v, 'user name') };
      case 'client': return { kind: 'client', id: isAtom(v, 'all') ? null : str(v, 'client id') };
      case 'ipaddr': {
        const cidr = parseCidr(str(v, 'ipaddr'));
        return cidr ? { kind: 'ipaddr', cidr } : fail(v.line, `invalid IP address or CIDR ${show(v)}`);
      }
      case 'and': case 'or':
        return { kind: k.value, items: list(v, `'${k.value}'`).map(who) };
      default: return fail(k.line, `unknown subject type ${show(k)} (expected user, client, ipaddr, 'and' or 'or')`);
    }
  };

  const topic = (t: Term): AclTopic => {
    if (t.type === 'tuple') {
      if (t.items.length !== 2 || !isAtom(t.items[0], 'eq')) fail(t.line, 'a topic tuple must be {eq, "topic"}');
      const literal = str(t.items[1], 'eq topic');
      return literal === '' ? fail(t.line, 'empty topic') : { kind: 'eq', topic: literal };
    }
    const filter = str(t, 'topic');
    try { return compileTopicFilter(filter); } catch (e) { return fail(t.line, (e as Error).message); }
  };

  return parseTerms(text, fail).map((t): AclRule => {
    if (t.type !== 'tuple') return fail(t.line, `a rule must be a tuple {...}, got ${show(t)}`);
    const n = t.items.length;
    if (n !== 2 && n !== 4) {
      fail(t.line, `a rule must have 2 or 4 elements ({allow|deny, all} or {allow|deny, Who, Access, Topics}), got ${n}`);
    }
    const p = t.items[0];
    if (!isAtom(p, 'allow') && !isAtom(p, 'deny')) fail(p.line, `unknown permission ${show(p)} (expected allow or deny)`);
    const permission: AclPermission = p.value === 'allow' ? 'allow' : 'deny';
    const base = { permission, file: fileName, line: t.line };
    if (n === 2) {
      if (!isAtom(t.items[1], 'all')) fail(t.items[1].line, `a 2-element rule must be {${permission}, all}, got ${show(t.items[1])}`);
      return { ...base, who: { kind: 'all' }, access: 'pubsub', topics: null };
    }
    const a = t.items[2];
    if (!isAtom(a, 'publish') && !isAtom(a, 'subscribe') && !isAtom(a, 'pubsub')) {
      fail(a.line, `unknown access ${show(a)} (expected publish, subscribe or pubsub)`);
    }
    const topics = t.items[3];
    return {
      ...base,
      who: who(t.items[1]),
      access: a.value === 'pubsub' ? 'pubsub' : a.value === 'publish' ? 'publish' : 'subscribe',
      topics: topics.type === 'list' ? topics.items.map(topic) : [topic(topics)],
    };
  });
}

/** Read and parse an acl.conf file; errors name the path. */
export async function loadAclFile(path: string): Promise<AclRule[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new Error(err.code === 'ENOENT' ? `ACL file not found: ${path}` : `cannot read ACL file ${path}: ${err.message}`, { cause: e });
  }
  return parseAclFile(text, path);
}
