// ACL rule representation and matcher (EMQ X 3.x emqx_access_rule semantics).
//
// Rules are compiled by ./acl-file.ts; everything here that runs per request
// (checkAcl and its helpers) works on precomputed data: topic filters are
// pre-split into levels, CIDRs are numbers (IPv4) or bigints (IPv6), and the
// matcher allocates nothing except when it sees a new client IP string.

export type AclAccess = 'publish' | 'subscribe';
export type AclPermission = 'allow' | 'deny';
export type AclDecision = AclPermission | 'nomatch';

export interface AclClient {
  clientId: string;
  username?: string;
  ipAddress?: string;
}

export type AclCidr =
  | { family: 4; text: string; base: number; mask: number }
  | { family: 6; text: string; base: bigint; mask: bigint };

export type AclWho =
  | { kind: 'all' }
  | { kind: 'user'; name: string | null } // null = {user, all}
  | { kind: 'client'; id: string | null } // null = {client, all}
  | { kind: 'ipaddr'; cidr: AclCidr }
  | { kind: 'and' | 'or'; items: readonly AclWho[] };

export type AclTopic =
  | { kind: 'eq'; topic: string }
  // `vars` is true when a whole level is %u or %c (substituted at match time).
  | { kind: 'filter'; filter: string; levels: readonly string[]; vars: boolean };

export interface AclRule {
  permission: AclPermission;
  who: AclWho;
  access: AclAccess | 'pubsub';
  topics: readonly AclTopic[] | null; // null = any topic ({allow|deny, all})
  file: string;
  line: number;
}

// ---------------------------------------------------------------- compiling

/** Compile a rule topic filter; throws an Error (without file:line) if invalid. */
export function compileTopicFilter(filter: string): AclTopic {
  if (filter === '') throw new Error('empty topic filter');
  const levels = filter.split('/');
  let vars = false;
  for (let i = 0; i < levels.length; i++) {
    const l = levels[i];
    if (l === '%u' || l === '%c') vars = true;
    else if (l === '#' ? i !== levels.length - 1 : l !== '+' && (l.includes('#') || l.includes('+'))) {
      throw new Error(`invalid topic filter "${filter}": '+' and '#' must be whole levels and '#' must be last`);
    }
  }
  return { kind: 'filter', filter, levels, vars };
}

const MAPPED_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function parseIPv4(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let v = 0;
  for (const p of parts) {
    if (p.length === 0 || p.length > 3) return null;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      if (c < 48 || c > 57) return null;
    }
    const n = Number(p);
    if (n > 255) return null;
    v = v * 256 + n;
  }
  return v;
}

function parseIPv6(s: string): bigint | null {
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const lastColon = s.lastIndexOf(':');
  if (lastColon < 0) return null;
  let low = 0n;
  if (s.includes('.', lastColon)) { // embedded IPv4 tail, e.g. ::ffff:1.2.3.4
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (v4 === null) return null;
    low = BigInt(v4);
    s = s.slice(0, lastColon + 1) + '0:0';
  }
  const dbl = s.indexOf('::');
  if (dbl >= 0 && s.includes('::', dbl + 1)) return null;
  const head = dbl >= 0 ? s.slice(0, dbl) : s;
  const tail = dbl >= 0 ? s.slice(dbl + 2) : '';
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  if (dbl < 0 ? h.length !== 8 : h.length + t.length > 7) return null;
  const groups = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  let v = 0n;
  for (const g of groups) {
    if (!HEX_GROUP.test(g)) return null;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v | low;
}

/** Parse "a.b.c.d[/n]" or an IPv6 "x::y[/n]"; null if invalid. Host bits are masked off. */
export function parseCidr(text: string): AclCidr | null {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const lenText = slash < 0 ? null : text.slice(slash + 1);
  if (lenText !== null && !/^[0-9]{1,3}$/.test(lenText)) return null;
  const v4 = parseIPv4(addr);
  if (v4 !== null) {
    const len = lenText === null ? 32 : Number(lenText);
    if (len > 32) return null;
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    return { family: 4, text, base: (v4 & mask) >>> 0, mask };
  }
  if (addr.includes('%')) return null;
  const v6 = parseIPv6(addr);
  if (v6 === null) return null;
  const len = lenText === null ? 128 : Number(lenText);
  if (len > 128) return null;
  if (len >= 96 && (v6 >> 32n) === 0xffffn) { // IPv4-mapped rule: treat as IPv4
    const mask = len === 96 ? 0 : (0xffffffff << (128 - len)) >>> 0;
    return { family: 4, text, base: (Number(v6 & 0xffffffffn) & mask) >>> 0, mask };
  }
  const mask = len === 0 ? 0n : ((1n << BigInt(len)) - 1n) << BigInt(128 - len);
  return { family: 6, text, base: v6 & mask, mask };
}

// ---------------------------------------------------------------- matching

// Single-entry cache of the last client address parsed (the common case is
// many checks in a row for the same connection).
let ipText: string | undefined;
let ipFamily: 0 | 4 | 6 = 0; // 0 = unparseable
let ipV4 = 0;
let ipV6 = 0n; // for IPv4 clients: the ::ffff:a.b.c.d form

function loadClientIp(text: string): void {
  if (text === ipText) return;
  ipText = text;
  const v4 = parseIPv4(text);
  if (v4 !== null) {
    ipFamily = 4; ipV4 = v4; ipV6 = MAPPED_PREFIX | BigInt(v4);
    return;
  }
  const v6 = parseIPv6(text);
  if (v6 === null) { ipFamily = 0; return; }
  if ((v6 >> 32n) === 0xffffn) { ipFamily = 4; ipV4 = Number(v6 & 0xffffffffn); } else ipFamily = 6;
  ipV6 = v6;
}

function matchIp(cidr: AclCidr, address: string | undefined): boolean {
  if (address === undefined) return false;
  loadClientIp(address);
  if (ipFamily === 0) return false;
  if (cidr.family === 4) return ipFamily === 4 && ((ipV4 & cidr.mask) >>> 0) === cidr.base;
  return (ipV6 & cidr.mask) === cidr.base;
}

function matchWho(who: AclWho, client: AclClient): boolean {
  switch (who.kind) {
    case 'all': return true;
    case 'user': return who.name === null || client.username === who.name;
    case 'client': return who.id === null || client.clientId === who.id;
    case 'ipaddr': return matchIp(who.cidr, client.ipAddress);
    case 'and':
      for (let i = 0; i < who.items.length; i++) if (!matchWho(who.items[i], client)) return false;
      return true;
    case 'or':
      for (let i = 0; i < who.items.length; i++) if (matchWho(who.items[i], client)) return true;
      return false;
  }
}

/**
 * Whether a client id or user name can stand for one topic level where a rule
 * or mountpoint says %c / %u: not missing, not empty, no `+`, `#` or `/`
 * (client id `+` must not get `clients/+/#` through `clients/%c/#`).
 */
export function isLevelValue(value: string | undefined): value is string {
  if (value === undefined || value === '') return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 43 /* + */ || c === 35 /* # */ || c === 47 /* / */) return false;
  }
  return true;
}

/** The client's value of a whole-level %u / %c; undefined when it cannot stand for a level. */
function levelValue(variable: '%u' | '%c', client: AclClient): string | undefined {
  const value = variable === '%u' ? client.username : client.clientId;
  return isLevelValue(value) ? value : undefined;
}

/**
 * Match pre-split filter levels against a topic (whose levels are taken
 * literally, so a subscription filter can be checked too). With `client`,
 * whole levels %u / %c are the client's username / id compared literally;
 * one that cannot stand for a level (see levelValue) never matches.
 */
function matchLevels(levels: readonly string[], topic: string, client: AclClient | null): boolean {
  const first = levels[0];
  if (topic.charCodeAt(0) === 36 /* $ */ && (first === '#' || first === '+')) return false;
  let pos = 0; // start of the current topic level, -1 once the topic is used up
  for (let i = 0; i < levels.length; i++) {
    let want = levels[i];
    if (want === '#') return true; // also matches the parent level ("a/#" matches "a")
    if (pos < 0) return false;
    const slash = topic.indexOf('/', pos);
    const end = slash < 0 ? topic.length : slash;
    if (want === '+') {
      // a requested `#` level is wider than `+`: `a/+` does not cover `a/#`
      if (end - pos === 1 && topic.charCodeAt(pos) === 35 /* # */) return false;
    } else {
      if (client !== null && (want === '%u' || want === '%c')) {
        const value = levelValue(want, client);
        if (value === undefined) return false;
        want = value;
      }
      if (end - pos !== want.length || !topic.startsWith(want, pos)) return false;
    }
    pos = slash < 0 ? -1 : slash + 1;
  }
  return pos < 0;
}

/** Plain MQTT topic filter matching (including MQTT-4.7.2-1 for `$` topics). */
export function topicMatches(filter: string, topic: string): boolean {
  return matchLevels(filter.split('/'), topic, null);
}

/** `topicMatches` with the filter split once: a matcher for one filter, called per topic without allocating. */
export function topicMatcher(filter: string): (topic: string) => boolean {
  const levels = filter.split('/');
  return (topic) => matchLevels(levels, topic, null);
}

/**
 * Whether a rule filter and a requested subscription filter can both match
 * some topic (a deny rule applies to any subscription that would receive
 * what it denies: `{deny, …, ["a/b"]}` refuses a subscription to `a/+`).
 */
function intersectLevels(levels: readonly string[], requested: string, client: AclClient | null): boolean {
  const other = requested.split('/');
  const dollarRule = levels[0].charCodeAt(0) === 36 /* $ */;
  const dollarRequest = other[0].charCodeAt(0) === 36;
  if ((dollarRequest && !dollarRule && (levels[0] === '#' || levels[0] === '+')) ||
      (dollarRule && !dollarRequest && (other[0] === '#' || other[0] === '+'))) return false;
  for (let i = 0; ; i++) {
    let a = levels[i];
    const b = other[i];
    if (a === '#' || b === '#') return true;
    if (a === undefined || b === undefined) return a === b;
    if (client !== null && (a === '%u' || a === '%c')) {
      const value = levelValue(a, client);
      if (value === undefined) return false;
      a = value;
    }
    if (a !== '+' && b !== '+' && a !== b) return false;
  }
}

function matchTopics(rule: AclRule, client: AclClient, access: AclAccess, topic: string): boolean {
  const topics = rule.topics!;
  // subscribe: an allow rule must cover the whole requested filter, a deny rule
  // applies as soon as the filter overlaps it; publish: plain topic matching
  const overlap = access === 'subscribe' && rule.permission === 'deny';
  for (let i = 0; i < topics.length; i++) {
    const t = topics[i];
    if (t.kind === 'eq') {
      if (t.topic === topic) return true;
      continue;
    }
    const vars = t.vars ? client : null;
    if (overlap ? intersectLevels(t.levels, topic, vars) : matchLevels(t.levels, topic, vars)) return true;
  }
  return false;
}

/**
 * First rule whose subject, access and topics all match decides; otherwise
 * 'nomatch' (the caller applies mqtt.acl_nomatch). For 'subscribe', `topic`
 * is the requested filter: an allow rule must cover it (`a/+` covers `a/b`
 * and `a/+`, not `a/#`), a deny rule applies when they overlap.
 */
export function checkAcl(rules: readonly AclRule[], client: AclClient, access: AclAccess, topic: string): AclDecision {
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    if (r.access !== 'pubsub' && r.access !== access) continue;
    if (!matchWho(r.who, client)) continue;
    if (r.topics !== null && !matchTopics(r, client, access, topic)) continue;
    return r.permission;
  }
  return 'nomatch';
}
