import t from 'tap';
import { fileURLToPath } from 'node:url';
import { loadAclFile, parseAclFile, type AclRule } from '../../lib/access/acl-file.js';
import { checkAcl, topicMatches, type AclClient } from '../../lib/access/acl-match.js';

const rules = (text: string): AclRule[] => parseAclFile(text, 'test.conf');
const anon: AclClient = { clientId: 'c1' };
const alice: AclClient = { clientId: 'c-alice', username: 'alice', ipAddress: '10.1.2.3' };
const bob: AclClient = { clientId: 'c-bob', username: 'bob', ipAddress: '192.168.0.7' };

/** Decision of a one-rule set for a publish to `topic`. */
const pub = (text: string, client: AclClient, topic = 't'): string => checkAcl(rules(text), client, 'publish', topic);

t.test('empty rule set and non-matching rules give nomatch', async (tt) => {
  tt.equal(checkAcl([], alice, 'publish', 't'), 'nomatch');
  tt.equal(pub('{deny, {user, "zed"}, pubsub, ["#"]}.', alice), 'nomatch');
});

t.test('{allow|deny, all} matches any client, action and topic', async (tt) => {
  for (const c of [anon, alice, bob]) {
    for (const topic of ['t', '$SYS/x', 'a/+', '#']) {
      tt.equal(checkAcl(rules('{deny, all}.'), c, 'publish', topic), 'deny');
      tt.equal(checkAcl(rules('{allow, all}.'), c, 'subscribe', topic), 'allow');
    }
  }
});

t.test('subject: all', async (tt) => {
  tt.equal(pub('{deny, all, publish, ["t"]}.', anon), 'deny');
  tt.equal(pub('{deny, all, publish, ["t"]}.', alice), 'deny');
});

t.test('subject: user', async (tt) => {
  const r = '{deny, {user, "alice"}, publish, ["t"]}.';
  tt.equal(pub(r, alice), 'deny');
  tt.equal(pub(r, bob), 'nomatch');
  tt.equal(pub(r, anon), 'nomatch');
  tt.equal(pub(r, { clientId: 'alice' }), 'nomatch', 'client id is not the username');
  const all = '{deny, {user, all}, publish, ["t"]}.';
  tt.equal(pub(all, alice), 'deny');
  tt.equal(pub(all, anon), 'deny', '{user, all} also covers clients without a username');
});

t.test('subject: client', async (tt) => {
  const r = '{deny, {client, "c-bob"}, publish, ["t"]}.';
  tt.equal(pub(r, bob), 'deny');
  tt.equal(pub(r, alice), 'nomatch');
  tt.equal(pub(r, { clientId: 'x', username: 'c-bob' }), 'nomatch', 'username is not the client id');
  tt.equal(pub('{deny, {client, all}, publish, ["t"]}.', anon), 'deny');
});

t.test('subject: ipaddr IPv4', async (tt) => {
  const exact = '{deny, {ipaddr, "127.0.0.1"}, publish, ["t"]}.';
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '127.0.0.1' }), 'deny');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '127.0.0.2' }), 'nomatch');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '::ffff:127.0.0.1' }), 'deny', 'IPv4-mapped IPv6 address');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '::ffff:7f00:1' }), 'deny', 'mapped address in hex form');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '::1' }), 'nomatch', 'IPv6 loopback is not 127.0.0.1');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '::7f00:1' }), 'nomatch', 'IPv4-compatible (not mapped) address');
  tt.equal(pub(exact, { clientId: 'a' }), 'nomatch', 'no address');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: 'garbage' }), 'nomatch', 'unparseable address');

  const net = '{deny, {ipaddr, "192.168.0.0/24"}, publish, ["t"]}.';
  tt.equal(pub(net, bob), 'deny');
  tt.equal(pub(net, { clientId: 'a', ipAddress: '192.168.0.255' }), 'deny');
  tt.equal(pub(net, { clientId: 'a', ipAddress: '192.168.1.0' }), 'nomatch');
  tt.equal(pub(net, { clientId: 'a', ipAddress: '::ffff:192.168.0.200' }), 'deny');
  tt.equal(pub(net, alice), 'nomatch');

  tt.equal(pub('{deny, {ipaddr, "192.168.0.77/24"}, publish, ["t"]}.', bob), 'deny', 'host bits are ignored');
  tt.equal(pub('{deny, {ipaddr, "0.0.0.0/0"}, publish, ["t"]}.', alice), 'deny', '/0 matches any IPv4');
  tt.equal(pub('{deny, {ipaddr, "0.0.0.0/0"}, publish, ["t"]}.', { clientId: 'a', ipAddress: '::1' }), 'nomatch');
  tt.equal(pub('{deny, {ipaddr, "255.255.255.255/32"}, publish, ["t"]}.', { clientId: 'a', ipAddress: '255.255.255.255' }), 'deny');
  tt.equal(pub('{deny, {ipaddr, "10.0.0.0/8"}, publish, ["t"]}.', alice), 'deny');
  tt.equal(pub('{deny, {ipaddr, "::ffff:10.0.0.0/104"}, publish, ["t"]}.', alice), 'deny', 'mapped rule, plain IPv4 client');
  tt.equal(pub('{deny, {ipaddr, "::ffff:0.0.0.0/96"}, publish, ["t"]}.', bob), 'deny', '::ffff:0:0/96 covers all IPv4');
  tt.equal(pub('{deny, {ipaddr, "::ffff:0.0.0.0/96"}, publish, ["t"]}.', { clientId: 'a', ipAddress: '::1' }), 'nomatch');
  tt.equal(pub(exact, { clientId: 'a', ipAddress: '127.0.0.x' }), 'nomatch', 'malformed IPv4');
});

t.test('subject: ipaddr IPv6', async (tt) => {
  const lo = '{deny, {ipaddr, "::1"}, publish, ["t"]}.';
  tt.equal(pub(lo, { clientId: 'a', ipAddress: '::1' }), 'deny');
  tt.equal(pub(lo, { clientId: 'a', ipAddress: '0:0:0:0:0:0:0:1' }), 'deny');
  tt.equal(pub(lo, { clientId: 'a', ipAddress: '::2' }), 'nomatch');
  tt.equal(pub(lo, { clientId: 'a', ipAddress: '127.0.0.1' }), 'nomatch');

  const ula = '{deny, {ipaddr, "fd00::/8"}, publish, ["t"]}.';
  tt.equal(pub(ula, { clientId: 'a', ipAddress: 'fd12:3456:789a::1' }), 'deny');
  tt.equal(pub(ula, { clientId: 'a', ipAddress: 'FDFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF' }), 'deny');
  tt.equal(pub(ula, { clientId: 'a', ipAddress: 'fe80::1' }), 'nomatch');
  tt.equal(pub(ula, { clientId: 'a', ipAddress: '10.0.0.1' }), 'nomatch');

  tt.equal(pub('{deny, {ipaddr, "fe80::/10"}, publish, ["t"]}.', { clientId: 'a', ipAddress: 'fe80::1%eth0' }), 'deny', 'zone id ignored');
  tt.equal(pub('{deny, {ipaddr, "2001:db8::/32"}, publish, ["t"]}.', { clientId: 'a', ipAddress: '2001:db8:ffff::' }), 'deny');
  tt.equal(pub('{deny, {ipaddr, "2001:db8::/32"}, publish, ["t"]}.', { clientId: 'a', ipAddress: '2001:db9::' }), 'nomatch');
  tt.equal(pub('{deny, {ipaddr, "::/0"}, publish, ["t"]}.', alice), 'deny', '::/0 covers IPv4 clients too');
});

t.test('ipaddr matching is correct when clients alternate (address cache)', async (tt) => {
  const r = rules('{deny, {ipaddr, "10.0.0.0/8"}, publish, ["t"]}.');
  for (let i = 0; i < 3; i++) {
    tt.equal(checkAcl(r, alice, 'publish', 't'), 'deny');
    tt.equal(checkAcl(r, bob, 'publish', 't'), 'nomatch');
    tt.equal(checkAcl(r, { clientId: 'x', ipAddress: '::ffff:10.9.9.9' }, 'publish', 't'), 'deny');
    tt.equal(checkAcl(r, { clientId: 'x', ipAddress: 'fd00::1' }, 'publish', 't'), 'nomatch');
  }
});

t.test('subject: and / or, nested', async (tt) => {
  const and = `{deny, {'and', [{user, "alice"}, {ipaddr, "10.0.0.0/8"}]}, publish, ["t"]}.`;
  tt.equal(pub(and, alice), 'deny');
  tt.equal(pub(and, { ...alice, ipAddress: '11.0.0.1' }), 'nomatch');
  tt.equal(pub(and, { ...bob, ipAddress: '10.0.0.1' }), 'nomatch');

  const or = '{deny, {or, [{user, "alice"}, {client, "c-bob"}]}, publish, ["t"]}.';
  tt.equal(pub(or, alice), 'deny');
  tt.equal(pub(or, bob), 'deny');
  tt.equal(pub(or, anon), 'nomatch');

  const nested = `{deny, {'or', [{'and', [{user, "bob"}, {ipaddr, "192.168.0.0/16"}]}, {and, [{client, "c1"}, {user, all}]}]}, publish, ["t"]}.`;
  tt.equal(pub(nested, bob), 'deny');
  tt.equal(pub(nested, { ...bob, ipAddress: '10.0.0.1' }), 'nomatch');
  tt.equal(pub(nested, anon), 'deny');
  tt.equal(pub(nested, alice), 'nomatch');

  tt.equal(pub("{deny, {'and', []}, publish, [\"t\"]}.", anon), 'deny', 'empty and is true');
  tt.equal(pub("{deny, {'or', []}, publish, [\"t\"]}.", anon), 'nomatch', 'empty or is false');
});

t.test('access: publish, subscribe, pubsub', async (tt) => {
  const r = rules('{deny, all, publish, ["p"]}.\n{deny, all, subscribe, ["s"]}.\n{deny, all, pubsub, ["b"]}.');
  tt.equal(checkAcl(r, anon, 'publish', 'p'), 'deny');
  tt.equal(checkAcl(r, anon, 'subscribe', 'p'), 'nomatch');
  tt.equal(checkAcl(r, anon, 'subscribe', 's'), 'deny');
  tt.equal(checkAcl(r, anon, 'publish', 's'), 'nomatch');
  tt.equal(checkAcl(r, anon, 'publish', 'b'), 'deny');
  tt.equal(checkAcl(r, anon, 'subscribe', 'b'), 'deny');
});

t.test('topics: wildcard filters against published topics', async (tt) => {
  const r = rules('{deny, all, publish, ["a/+/c", "x/#", "exact/t", "e//f"]}.');
  const d = (topic: string): string => checkAcl(r, anon, 'publish', topic);
  tt.equal(d('a/b/c'), 'deny');
  tt.equal(d('a//c'), 'deny', '+ matches an empty level');
  tt.equal(d('a/b/c/d'), 'nomatch');
  tt.equal(d('a/c'), 'nomatch');
  tt.equal(d('x'), 'deny', '# matches the parent level');
  tt.equal(d('x/y/z'), 'deny');
  tt.equal(d('xy'), 'nomatch');
  tt.equal(d('exact/t'), 'deny');
  tt.equal(d('exact/tt'), 'nomatch');
  tt.equal(d('exact'), 'nomatch');
  tt.equal(d('e//f'), 'deny');
  tt.equal(d('e/f'), 'nomatch');
  tt.equal(pub('{deny, all, publish, "single"}.', anon, 'single'), 'deny', 'single string topic');
  tt.equal(pub('{deny, all, publish, []}.', anon, 'single'), 'nomatch', 'empty topic list matches nothing');
});

t.test('topics: an allow rule must cover the requested subscription filter', async (tt) => {
  const sub = (filter: string, requested: string): string =>
    checkAcl(rules(`{allow, all, subscribe, ["${filter}"]}.`), anon, 'subscribe', requested);
  tt.equal(sub('#', 'a/+'), 'allow');
  tt.equal(sub('#', '#'), 'allow');
  tt.equal(sub('a/+', 'a/b'), 'allow');
  tt.equal(sub('a/+', 'a/+'), 'allow', '+ covers the level +');
  tt.equal(sub('a/+', 'a/#'), 'nomatch', '+ does not cover # (EMQ X let it: a hole)');
  tt.equal(sub('+', '#'), 'nomatch');
  tt.equal(sub('a/#', 'a/#'), 'allow');
  tt.equal(sub('a/b', 'a/+'), 'nomatch', 'a literal rule does not cover a wildcard request');
  tt.equal(sub('a/b', 'a/#'), 'nomatch');
  tt.equal(sub('a/+/c', 'a/#'), 'nomatch');
});

t.test('topics: a deny rule applies to any subscription filter that overlaps it', async (tt) => {
  const sub = (filter: string, requested: string): string =>
    checkAcl(rules(`{deny, all, subscribe, ["${filter}"]}.`), anon, 'subscribe', requested);
  tt.equal(sub('#', 'a/+'), 'deny');
  tt.equal(sub('a/+', 'a/#'), 'deny');
  tt.equal(sub('a/b', 'a/+'), 'deny', 'a/+ would receive a/b');
  tt.equal(sub('a/b', '#'), 'deny');
  tt.equal(sub('a/+/c', 'a/#'), 'deny');
  tt.equal(sub('a/+/c', 'a/b/d'), 'nomatch');
  tt.equal(sub('a/b', 'a/b/c'), 'nomatch');
  tt.equal(sub('a/b', 'a'), 'nomatch');
  tt.equal(sub('$SYS/#', '#'), 'nomatch', '# does not receive $SYS topics');
  tt.equal(sub('#', '$SYS/x'), 'nomatch', 'nor does a rule #');
  tt.equal(sub('$SYS/#', '$SYS/+'), 'deny');
});

t.test('topics: {eq, ...} is literal equality', async (tt) => {
  const eq = rules('{deny, all, pubsub, [{eq, "abc/#"}]}.');
  const plain = rules('{deny, all, pubsub, ["abc/#"]}.');
  tt.equal(checkAcl(eq, anon, 'subscribe', 'abc/#'), 'deny');
  tt.equal(checkAcl(eq, anon, 'subscribe', 'abc'), 'nomatch');
  tt.equal(checkAcl(eq, anon, 'subscribe', 'abc/d'), 'nomatch');
  tt.equal(checkAcl(eq, anon, 'subscribe', 'abc/+'), 'nomatch');
  tt.equal(checkAcl(eq, anon, 'publish', 'abc/d'), 'nomatch');
  tt.equal(checkAcl(plain, anon, 'subscribe', 'abc'), 'deny');
  tt.equal(checkAcl(plain, anon, 'subscribe', 'abc/d'), 'deny');
  tt.equal(checkAcl(plain, anon, 'subscribe', 'abc/#'), 'deny');
  const eqUser = rules('{deny, all, publish, [{eq, "u/%u"}]}.');
  tt.equal(checkAcl(eqUser, alice, 'publish', 'u/alice'), 'nomatch', 'no substitution inside eq');
  tt.equal(checkAcl(eqUser, alice, 'publish', 'u/%u'), 'deny');
});

t.test('topics: %u and %c substitution', async (tt) => {
  const r = rules('{deny, all, publish, ["users/%u/#", "clients/%c", "mixed/x%u", "both/%u/%c"]}.');
  const d = (c: AclClient, topic: string): string => checkAcl(r, c, 'publish', topic);
  tt.equal(d(alice, 'users/alice/inbox'), 'deny');
  tt.equal(d(alice, 'users/alice'), 'deny');
  tt.equal(d(alice, 'users/bob/inbox'), 'nomatch');
  tt.equal(d(bob, 'users/bob/inbox'), 'deny');
  tt.equal(d(bob, 'clients/c-bob'), 'deny');
  tt.equal(d(bob, 'clients/c-alice'), 'nomatch');
  tt.equal(d(alice, 'both/alice/c-alice'), 'deny');
  tt.equal(d(alice, 'both/alice/c-bob'), 'nomatch');
  tt.equal(d(alice, 'mixed/xalice'), 'nomatch', 'placeholder inside a level is not substituted');
  tt.equal(d(alice, 'mixed/x%u'), 'deny', 'placeholder inside a level is literal');
  tt.equal(d(alice, 'users/%u/inbox'), 'nomatch', 'a substituted level is not the literal %u');
});

t.test('topics: %u never matches a client without a username', async (tt) => {
  const r = rules('{deny, all, publish, ["users/%u/#"]}.');
  tt.equal(checkAcl(r, anon, 'publish', 'users/%u/x'), 'nomatch');
  tt.equal(checkAcl(r, anon, 'publish', 'users/undefined/x'), 'nomatch');
  tt.equal(checkAcl(r, anon, 'publish', 'users//x'), 'nomatch');
  tt.equal(checkAcl(r, { clientId: 'c', username: '' }, 'publish', 'users//x'), 'nomatch', 'empty username');
  tt.equal(checkAcl(r, { clientId: 'c', username: 'u' }, 'publish', 'users/u/x'), 'deny');
  tt.equal(checkAcl(rules('{deny, all, publish, ["a", "users/%u"]}.'), anon, 'publish', 'a'), 'deny', 'other topics of the rule still match');
});

t.test('topics: substituted values are literal, not wildcards', async (tt) => {
  const r = rules('{allow, all, publish, ["users/%u/x", "c/%c"]}.');
  tt.equal(checkAcl(r, { clientId: '#', username: '+' }, 'publish', 'users/bob/x'), 'nomatch');
  tt.equal(checkAcl(r, { clientId: '#', username: '+' }, 'publish', 'users/+/x'), 'nomatch', 'a user name + is not the level + either (issue 14 #4)');
  tt.equal(checkAcl(r, { clientId: '#', username: '+' }, 'publish', 'c/anything'), 'nomatch');
  tt.equal(checkAcl(r, { clientId: 'a/b' }, 'publish', 'c/a/b'), 'nomatch', 'a client id with / never matches');
});

t.test('topics: $-topics and leading wildcards (MQTT-4.7.2-1)', async (tt) => {
  const wild = rules('{deny, all, pubsub, ["#", "+/brokers"]}.');
  tt.equal(checkAcl(wild, anon, 'publish', '$SYS/brokers'), 'nomatch');
  tt.equal(checkAcl(wild, anon, 'publish', '$SYS'), 'nomatch');
  tt.equal(checkAcl(wild, anon, 'subscribe', '$SYS/#'), 'nomatch');
  tt.equal(checkAcl(wild, anon, 'publish', 'SYS/brokers'), 'deny');
  const sys = rules('{deny, all, pubsub, ["$SYS/#"]}.');
  tt.equal(checkAcl(sys, anon, 'publish', '$SYS/brokers/x'), 'deny');
  tt.equal(checkAcl(sys, anon, 'subscribe', '$SYS/#'), 'deny');
  tt.equal(checkAcl(sys, anon, 'subscribe', '$SYS/+/x'), 'deny');
  tt.equal(checkAcl(sys, anon, 'publish', 'a/$SYS'), 'nomatch');
  tt.equal(checkAcl(rules('{deny, all, pubsub, ["a/#"]}.'), anon, 'publish', 'a/$b'), 'deny', '$ only matters at the start');
});

t.test('first matching rule wins', async (tt) => {
  const denyFirst = rules('{deny, {user, "alice"}, publish, ["t/#"]}.\n{allow, all, publish, ["t/#"]}.');
  tt.equal(checkAcl(denyFirst, alice, 'publish', 't/1'), 'deny');
  tt.equal(checkAcl(denyFirst, bob, 'publish', 't/1'), 'allow');
  const allowFirst = rules('{allow, all, publish, ["t/#"]}.\n{deny, {user, "alice"}, publish, ["t/#"]}.');
  tt.equal(checkAcl(allowFirst, alice, 'publish', 't/1'), 'allow');
  const skip = rules('{deny, {user, "alice"}, publish, ["other"]}.\n{deny, {user, "alice"}, subscribe, ["t/#"]}.\n{allow, {user, "alice"}, pubsub, ["t/#"]}.\n{deny, all}.');
  tt.equal(checkAcl(skip, alice, 'publish', 't/1'), 'allow', 'rules with a matching subject but other topic/access are skipped');
  tt.equal(checkAcl(skip, alice, 'subscribe', 't/1'), 'deny');
  tt.equal(checkAcl(skip, alice, 'publish', 'zzz'), 'deny');
});

t.test('topicMatches: plain MQTT matching', async (tt) => {
  const yes: [string, string][] = [
    ['a/b', 'a/b'], ['a/+', 'a/b'], ['+/b', 'a/b'], ['#', 'a/b/c'], ['a/#', 'a'], ['a/#', 'a/b/c'],
    ['+', ''], ['+/+', '/'], ['#', ''], ['$SYS/#', '$SYS/x'], ['$SYS/+', '$SYS/x'], ['%u', '%u'], ['a/+/c', 'a//c'],
  ];
  const no: [string, string][] = [
    ['a/b', 'a'], ['a', 'a/b'], ['a/+', 'a'], ['a/+', 'a/b/c'], ['+', 'a/b'], ['#', '$SYS/x'], ['+/x', '$SYS/x'],
    ['+', '$'], ['a/#', 'ab'], ['%u', 'alice'], ['a/b', 'a/b/'], ['', 'a'],
  ];
  for (const [f, topic] of yes) tt.ok(topicMatches(f, topic), `${f} matches ${topic}`);
  for (const [f, topic] of no) tt.notOk(topicMatches(f, topic), `${f} does not match ${topic}`);
});

t.test('shipped etc/acl.conf', async (tt) => {
  const path = fileURLToPath(new URL('../../etc/acl.conf', import.meta.url));
  const shipped = await loadAclFile(path);
  tt.same(shipped.map((r) => [r.permission, r.who.kind, r.access, r.topics?.length ?? null]), [
    ['allow', 'user', 'subscribe', 1],
    ['allow', 'ipaddr', 'pubsub', 2],
    ['deny', 'all', 'subscribe', 2],
    ['allow', 'all', 'pubsub', null],
  ]);

  const local: AclClient = { clientId: 'local', ipAddress: '127.0.0.1' };
  const localMapped: AclClient = { clientId: 'local6', ipAddress: '::ffff:127.0.0.1' };
  const dashboard: AclClient = { clientId: 'dash', username: 'dashboard', ipAddress: '203.0.113.9' };
  const remote: AclClient = { clientId: 'remote', ipAddress: '203.0.113.10' };
  const d = (c: AclClient, access: 'publish' | 'subscribe', topic: string): string => checkAcl(shipped, c, access, topic);

  for (const c of [local, localMapped]) {
    tt.equal(d(c, 'subscribe', '$SYS/#'), 'allow', `${c.clientId} subscribe $SYS/#`);
    tt.equal(d(c, 'subscribe', '#'), 'allow', `${c.clientId} subscribe #`);
    tt.equal(d(c, 'publish', 'a/b'), 'allow');
    tt.equal(d(c, 'publish', '$SYS/x'), 'allow');
  }

  tt.equal(d(dashboard, 'subscribe', '$SYS/#'), 'allow');
  tt.equal(d(dashboard, 'subscribe', '$SYS/brokers/+/clients'), 'allow');
  tt.equal(d(dashboard, 'subscribe', '#'), 'deny');
  tt.equal(d(dashboard, 'subscribe', 'a/#'), 'allow');
  tt.equal(d(dashboard, 'publish', 'a/b'), 'allow');

  tt.equal(d(remote, 'subscribe', '$SYS/#'), 'deny');
  tt.equal(d(remote, 'subscribe', '$SYS/brokers'), 'deny');
  tt.equal(d(remote, 'subscribe', '#'), 'deny');
  tt.equal(d(remote, 'subscribe', 'a/#'), 'allow');
  tt.equal(d(remote, 'subscribe', '+/x'), 'allow');
  tt.equal(d(remote, 'publish', 'a/b'), 'allow');
  tt.equal(d({ ...remote, username: 'dashboard2' }, 'subscribe', '$SYS/#'), 'deny');
});
