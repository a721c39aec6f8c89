import t from 'tap'
import { aclRuleOfRow, decideAcl, type AclRule } from '../../../lib/plugin-kit/backend/acl-rules.js'
import type { AclAccess } from '../../../lib/hooks/types.js'
import { clientInfo } from '../../../lib/plugin-kit/fake-context.js'

const alice = clientInfo({ clientId: 'c-alice', username: 'alice', ipAddress: '10.1.2.3' })
const bob = clientInfo({ clientId: 'c-bob', username: 'bob', ipAddress: '192.168.0.7' })
const decide = (rules: AclRule[], client = alice, access: AclAccess = 'publish', topic = 't'): string => decideAcl(rules, { client, access, topic })

t.test('no rules or no matching rule → ignore', async (t) => {
  t.equal(decide([]), 'ignore')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: 'bob' }]), 'ignore')
})

t.test('subjects: $all, username, clientid, ipaddr (CIDR), all given columns together', async (t) => {
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: '$all' }], bob), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: '$all', clientid: 'other' }], bob), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: 'alice' }]), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', clientid: 'c-alice' }]), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', clientid: 'c-bob' }]), 'ignore')
  t.equal(decide([{ allow: false, access: 3, topic: 't', ipaddr: '10.1.2.3' }]), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', ipaddr: '10.1.0.0/16' }]), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', ipaddr: '10.2.0.0/16' }]), 'ignore')
  t.equal(decide([{ allow: false, access: 3, topic: 't', ipaddr: 'not an address' }]), 'ignore')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: 'alice', clientid: 'c-bob' }]), 'ignore', 'and of the columns')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: 'alice', clientid: 'c-alice', ipaddr: '10.1.2.3' }]), 'deny')
  t.equal(decide([{ allow: false, access: 3, topic: 't', username: '', clientid: '' }]), 'ignore', 'no subject never matches')
})

t.test('access 1 subscribe, 2 publish, 3 pubsub', async (t) => {
  const rule = (access: 1 | 2 | 3): AclRule[] => [{ allow: false, access, topic: 't', username: 'alice' }]
  t.equal(decide(rule(1), alice, 'subscribe'), 'deny')
  t.equal(decide(rule(1), alice, 'publish'), 'ignore')
  t.equal(decide(rule(2), alice, 'publish'), 'deny')
  t.equal(decide(rule(2), alice, 'subscribe'), 'ignore')
  t.equal(decide(rule(3), alice, 'publish'), 'deny')
  t.equal(decide(rule(3), alice, 'subscribe'), 'deny')
})

t.test('topics: filters, eq, %u/%c, allow covers and deny overlaps; first match decides', async (t) => {
  const all = (topic: string, allow = true): AclRule => ({ allow, access: 3, topic, username: '$all' })
  t.equal(decide([all('a/+')], alice, 'publish', 'a/b'), 'allow')
  t.equal(decide([all('a/+')], alice, 'subscribe', 'a/#'), 'ignore', 'allow must cover the filter')
  t.equal(decide([all('a/b', false)], alice, 'subscribe', 'a/+'), 'deny', 'deny applies on overlap')
  t.equal(decide([all('eq a/#')], alice, 'subscribe', 'a/#'), 'allow')
  t.equal(decide([all('eq a/#')], alice, 'subscribe', 'a/b'), 'ignore')
  t.equal(decide([all('eq a/#')], alice, 'publish', 'a'), 'ignore')
  t.equal(decide([all('users/%u/#')], alice, 'publish', 'users/alice/x'), 'allow')
  t.equal(decide([all('users/%u/#')], bob, 'publish', 'users/alice/x'), 'ignore')
  t.equal(decide([all('c/%c')], alice, 'publish', 'c/c-alice'), 'allow')
  t.equal(decide([all('users/%u/#')], clientInfo({ clientId: 'anon' }), 'publish', 'users//x'), 'ignore')
  t.equal(decide([all('t', false), all('t')]), 'deny')
  t.equal(decide([all('t'), all('t', false)]), 'allow')
  t.equal(decide([all('a/#/b'), all('t', false)]), 'deny', 'a bad filter is skipped')
})

t.test('aclRuleOfRow reads driver values', async (t) => {
  t.same(aclRuleOfRow({ allow: 1, ipaddr: null, username: '$all', clientid: null, access: 3, topic: '#' }), { allow: true, access: 3, topic: '#', username: '$all' })
  t.same(aclRuleOfRow({ allow: '0', ipaddr: '127.0.0.1', username: null, clientid: Buffer.from('c'), access: '1', topic: 'eq a' }),
    { allow: false, access: 1, topic: 'eq a', ipaddr: '127.0.0.1', clientid: 'c' })
  t.equal(aclRuleOfRow({ allow: 1, access: 4, topic: 't' }), undefined)
  t.equal(aclRuleOfRow({ allow: 1, access: 1, topic: null }), undefined)
  t.equal(aclRuleOfRow({ allow: true, access: 2, topic: 't' })?.allow, true)
})
