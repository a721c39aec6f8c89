import t, { type Test } from 'tap';
import { join } from 'node:path';
import { AclFileError, loadAclFile, parseAclFile, type AclRule } from '../../lib/access/acl-file.js';

const FILE = 'etc/acl.conf';
const parse = (text: string): AclRule[] => parseAclFile(text, FILE);

/** Parse `text`, expecting a syntax error; returns the error. */
function errorOf(text: string): AclFileError {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof AclFileError) return e;
    throw e;
  }
  throw new Error(`expected a parse error for: ${text}`);
}

/** Assert that `text` fails at `line` with a message matching `re`. */
function failsAt(tt: Test, text: string, line: number, re: RegExp): void {
  const err = errorOf(text);
  tt.ok(err.message.startsWith(`${FILE}:${line}: `), `prefix ${FILE}:${line}: in "${err.message}"`);
  tt.equal(err.line, line, 'line');
  tt.equal(err.file, FILE, 'file');
  tt.match(err.message, re);
}

t.test('empty and comment-only files give no rules', async (tt) => {
  tt.same(parse(''), []);
  tt.same(parse('%% just a comment\n% another\n\n'), []);
});

t.test('{allow|deny, all} rules', async (tt) => {
  const rules = parse('{allow, all}.\n{deny, all}.');
  tt.equal(rules.length, 2);
  tt.match(rules[0], { permission: 'allow', who: { kind: 'all' }, access: 'pubsub', topics: null, file: FILE, line: 1 });
  tt.match(rules[1], { permission: 'deny', who: { kind: 'all' }, access: 'pubsub', topics: null, line: 2 });
});

t.test('subject forms', async (tt) => {
  const rules = parse(`
{allow, all, publish, ["t"]}.
{allow, {user, "alice"}, publish, ["t"]}.
{allow, {user, all}, publish, ["t"]}.
{allow, {client, "c1"}, publish, ["t"]}.
{allow, {client, all}, publish, ["t"]}.
{allow, {ipaddr, "192.168.0.5/24"}, publish, ["t"]}.
{allow, {ipaddr, "fd00::/8"}, publish, ["t"]}.
{allow, {'and', [{user, "u"}, {client, "c"}]}, publish, ["t"]}.
{allow, {or, [{user, "u"}, {'and', [{client, all}, all]}]}, publish, ["t"]}.
`);
  tt.equal(rules.length, 9);
  tt.same(rules.map((r) => r.who), [
    { kind: 'all' },
    { kind: 'user', name: 'alice' },
    { kind: 'user', name: null },
    { kind: 'client', id: 'c1' },
    { kind: 'client', id: null },
    { kind: 'ipaddr', cidr: { family: 4, text: '192.168.0.5/24', base: 0xc0a80000, mask: 0xffffff00 } },
    { kind: 'ipaddr', cidr: { family: 6, text: 'fd00::/8', base: 0xfdn << 120n, mask: 0xffn << 120n } },
    { kind: 'and', items: [{ kind: 'user', name: 'u' }, { kind: 'client', id: 'c' }] },
    { kind: 'or', items: [{ kind: 'user', name: 'u' }, { kind: 'and', items: [{ kind: 'client', id: null }, { kind: 'all' }] }] },
  ]);
  tt.same(rules.map((r) => r.line), [2, 3, 4, 5, 6, 7, 8, 9, 10]);
});

t.test('IPv4-mapped IPv6 rule address is stored as IPv4', async (tt) => {
  const [r] = parse('{allow, {ipaddr, "::ffff:10.0.0.0/104"}, publish, ["t"]}.');
  tt.same(r.who, { kind: 'ipaddr', cidr: { family: 4, text: '::ffff:10.0.0.0/104', base: 0x0a000000, mask: 0xff000000 } });
  const [single] = parse('{allow, {ipaddr, "::1"}, publish, ["t"]}.');
  tt.same(single.who, { kind: 'ipaddr', cidr: { family: 6, text: '::1', base: 1n, mask: (1n << 128n) - 1n } });
});

t.test('access kinds and topic forms', async (tt) => {
  const rules = parse(`
{deny, all, subscribe, ["a/+/b", {eq, "abc/#"}, "users/%u/#", "c/%c", "x%u/y"]}.
{allow, all, publish, "single/topic"}.
{allow, all, pubsub, []}.
`);
  tt.same(rules.map((r) => r.access), ['subscribe', 'publish', 'pubsub']);
  tt.same(rules[0].topics, [
    { kind: 'filter', filter: 'a/+/b', levels: ['a', '+', 'b'], vars: false },
    { kind: 'eq', topic: 'abc/#' },
    { kind: 'filter', filter: 'users/%u/#', levels: ['users', '%u', '#'], vars: true },
    { kind: 'filter', filter: 'c/%c', levels: ['c', '%c'], vars: true },
    { kind: 'filter', filter: 'x%u/y', levels: ['x%u', 'y'], vars: false },
  ]);
  tt.same(rules[1].topics, [{ kind: 'filter', filter: 'single/topic', levels: ['single', 'topic'], vars: false }]);
  tt.same(rules[2].topics, []);
});

t.test('lexical details: quoted atoms, escapes, comments, multi-line terms', async (tt) => {
  const rules = parse(`%% header
{'allow',   % trailing comment, the term continues
  {user, "a\\"b\\\\c"},
  'publish',
  ["100%/x"]   % a '%' inside a string is not a comment
}.
{'deny', 'all'}.`);
  tt.equal(rules.length, 2);
  tt.match(rules[0], { permission: 'allow', who: { kind: 'user', name: 'a"b\\c' }, access: 'publish', line: 2 });
  tt.same(rules[0].topics, [{ kind: 'filter', filter: '100%/x', levels: ['100%', 'x'], vars: false }]);
  tt.match(rules[1], { permission: 'deny', who: { kind: 'all' }, line: 7 });
});

t.test('syntax errors: unbalanced braces', async (tt) => {
  failsAt(tt, '{allow, all}.\n\n{allow, all.\n', 3, /expected ',' or '}' but found '\.'.*opened on line 3/);
  failsAt(tt, '{allow, all}.\n{allow, all}}.\n', 2, /unbalanced '}'/);
  failsAt(tt, '\n{allow, all, publish, ["a", "b"}.\n', 2, /expected ',' or '\]' but found '}'/);
  failsAt(tt, '{allow, all}.\n\n{deny, {user, "x"}, publish,\n  ["t"]\n', 3, /'\{' opened here is never closed/);
  failsAt(tt, '{allow, all}.\n]\n', 2, /unexpected '\]'/);
  failsAt(tt, '{allow, all}.\n{allow,\n', 2, /'\{' opened here is never closed/);
  failsAt(tt, '\n[\n', 2, /'\[' opened here is never closed/);
  failsAt(tt, '{allow, all publish, ["t"]}.', 1, /expected ',' or '}' but found atom 'publish'/);
});

t.test('syntax errors: unknown atoms', async (tt) => {
  failsAt(tt, '%% c\n\n\n{allw, all}.', 4, /unknown permission 'allw' \(expected allow or deny\)/);
  failsAt(tt, '{allow, all, publsh, ["t"]}.', 1, /unknown access 'publsh'/);
  failsAt(tt, '{allow,\n {usr, "a"},\n publish, ["t"]}.', 2, /unknown subject type 'usr'/);
  failsAt(tt, '{allow, everyone, publish, ["t"]}.', 1, /invalid subject 'everyone'/);
  failsAt(tt, '{allow, {user, "a"}}.', 1, /2-element rule must be \{allow, all\}/);
  failsAt(tt, '{allow, all, publish, [{eq, "a", "b"}]}.', 1, /\{eq, "topic"\}/);
  failsAt(tt, '{allow, all, publish, [{neq, "a"}]}.', 1, /\{eq, "topic"\}/);
});

t.test('syntax errors: missing dot', async (tt) => {
  failsAt(tt, '{allow, all}.\n{deny, {user, "x"},\n  publish, ["t"]}\n{allow, all}.\n', 2,
    /missing '\.' after the term starting on this line \(found '\{' on line 4\)/);
  failsAt(tt, '{allow, all}.\n\n{allow, all}', 3, /missing '\.'.*end of file/);
  failsAt(tt, '{allow, all}\nfoo.', 1, /missing '\.'.*found atom 'foo' on line 2/);
  failsAt(tt, '{allow, all}\n\n"x".', 1, /missing '\.'.*found string "x" on line 3/);
});

t.test('syntax errors: bad CIDR is reported at the address', async (tt) => {
  failsAt(tt, '{allow,\n  {ipaddr, "10.0.0.0/33"},\n  pubsub, ["#"]}.', 2, /invalid IP address or CIDR "10\.0\.0\.0\/33"/);
  for (const bad of ['300.1.1.1', '1.2.3', '1.2.3.4/', '1.2.3.4/x', 'fd00::/129', '1:2:3', 'fd00::1::2', 'host.example', '1.2.3.a', '::ffff:1.2.3', 'gggg::1', 'fe80::1%eth0', '']) {
    failsAt(tt, `\n{allow, {ipaddr, "${bad}"}, pubsub, ["#"]}.`, 2, /invalid IP address or CIDR/);
  }
  failsAt(tt, '{allow, {ipaddr, all}, pubsub, ["#"]}.', 1, /ipaddr must be a "string", got 'all'/);
});

t.test('syntax errors: wrong arity', async (tt) => {
  failsAt(tt, '{allow, all}.\n{allow, all, publish}.', 2, /must have 2 or 4 elements .* got 3/);
  failsAt(tt, '\n\n{allow,\n all, publish, ["t"], extra}.', 3, /got 5/);
  failsAt(tt, '{allow}.', 1, /got 1/);
  failsAt(tt, '{}.', 1, /got 0/);
  failsAt(tt, '{allow, {user, "a", "b"}, publish, ["t"]}.', 1, /invalid subject a tuple/);
  failsAt(tt, 'allow.', 1, /a rule must be a tuple/);
});

t.test('syntax errors: strings, tokens and topics', async (tt) => {
  failsAt(tt, '{allow, all}.\n{allow, {user, "abc}, publish, ["t"]}.\n', 2, /unterminated string/);
  failsAt(tt, '{allow, all}.\n{allow, {user, "a\nb}.', 2, /unterminated string/);
  failsAt(tt, "\n{'allow, all}.", 2, /unterminated quoted atom/);
  failsAt(tt, '{allow, {user, "a\\qb"}, publish, ["t"]}.', 1, /unsupported escape sequence '\\q'/);
  failsAt(tt, '\n{allow, {user, "a\\', 2, /unterminated string/);
  failsAt(tt, '{allow, [all], publish, ["t"]}.', 1, /invalid subject a list/);
  failsAt(tt, '{allow, {user, 42}, publish, ["t"]}.', 1, /unexpected character '4'/);
  failsAt(tt, '\n{allow, User, publish, ["t"]}.', 2, /variable-like name starting with 'U'/);
  failsAt(tt, '{allow, all, publish,\n ["ok", "a/#/b"]}.', 2, /invalid topic filter "a\/#\/b"/);
  failsAt(tt, '{allow, all, publish, ["a+/b"]}.', 1, /invalid topic filter/);
  failsAt(tt, '{allow, all, publish, ["a/b#"]}.', 1, /invalid topic filter/);
  failsAt(tt, '{allow, all, publish, [""]}.', 1, /empty topic filter/);
  failsAt(tt, '{allow, all, publish, [{eq, ""}]}.', 1, /empty topic/);
  failsAt(tt, '{allow, all, publish, [t]}.', 1, /topic must be a "string", got 't'/);
  failsAt(tt, '{allow, {\'and\', {user, "a"}}, publish, ["t"]}.', 1, /'and' must be a list/);
});

t.test('loadAclFile', async (tt) => {
  const dir = tt.testdir({
    'good.conf': '{deny, {user, "x"}, publish, ["t"]}.\n{allow, all}.\n',
    'bad.conf': '%% ok\n{allow, all}\n',
  });
  const rules = await loadAclFile(join(dir, 'good.conf'));
  tt.equal(rules.length, 2);
  tt.match(rules[0], { permission: 'deny', file: join(dir, 'good.conf'), line: 1 });

  await tt.rejects(loadAclFile(join(dir, 'bad.conf')), { message: `${join(dir, 'bad.conf')}:2: missing '.' after the term starting on this line (found end of file on line 3)` });

  const missing = join(dir, 'nope.conf');
  await tt.rejects(loadAclFile(missing), { message: `ACL file not found: ${missing}` });

  await tt.rejects(loadAclFile(dir), { message: new RegExp(`cannot read ACL file ${dir}`) });
});
