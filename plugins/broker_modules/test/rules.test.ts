// The settings and rules without a node: the shipped conf file loads, broken
// lines are refused with their file:line, rewrite rules behave as EMQ X's
// (first matching filter decides, groups, shared subscriptions), results
// that are no valid topic are refused, and hostile client ids or user names
// never fill a subscription template.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { parseRule, rewrite, type RewriteRule } from '../rewrite.js'
import { rewriteRules, schema, subscriptionItems, type ModulesConfig } from '../settings.js'
import { fillTemplate } from '../subscription.js'

const FILE = '/etc/plugins/broker_modules.conf'
const validate = (text: string): ModulesConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the shipped conf file loads: presence on, subscription and rewrite off, no rule', async (t) => {
  const file = join(INSTALL_ROOT, 'etc', 'plugins', 'broker_modules.conf')
  const config = validatePluginConfig(schema, parseConfigText(await readFile(file, 'utf8'), file), file)
  t.match(config, { 'module.presence': true, 'module.presence.qos': 1, 'module.presence.format': 'full', 'module.subscription': false, 'module.rewrite': false })
  t.same(subscriptionItems(config), [])
  t.same(rewriteRules(config), { publish: [], subscribe: [] })
})

t.test('every example of the conf file is a valid line', async (t) => {
  const text = await readFile(join(INSTALL_ROOT, 'etc', 'plugins', 'broker_modules.conf'), 'utf8')
  const examples = text.split('\n').map((line) => /^##\s+(?:Example:\s+)?(module\.[a-z0-9._]+ = .+)$/.exec(line)?.[1]).filter((line): line is string => line !== undefined)
  t.ok(examples.length >= 8, `${examples.length} examples`)
  const config = validate(examples.join('\n'))
  t.equal(subscriptionItems(config).length, 2)
  t.equal(rewriteRules(config).publish.length, 3)
})

t.test('broken lines are refused with their file:line and what is wrong', async (t) => {
  const refused = (text: string): string => {
    try {
      validate(text)
    } catch (err) {
      return (err as Error).message
    }
    return 'accepted'
  }
  const cases: Array<[string, RegExp]> = [
    ['module.rewrite.rule.1 = x/# ^x/(.+$ y/$1', /:2: module\.rewrite\.rule\.1: bad regex \^x\/\(\.\+\$/],
    ['module.rewrite.rule.1 = x/# ^x/(.+)$', /:2: module\.rewrite\.rule\.1: expected "<topic filter> <regex> <dest>", got 2 fields/],
    ['module.rewrite.rule.1 =', /:2: module\.rewrite\.rule\.1: /],
    ['module.rewrite.rule.1 = x/# ^x/(.+)$ y/$2', /:2: module\.rewrite\.rule\.1: dest y\/\$2 refers to \$2 but the regex has 1 group/],
    ['module.rewrite.rule.1 = x/#/y ^x$ y', /:2: module\.rewrite\.rule\.1: not a topic filter: x\/#\/y/],
    ['module.rewrite.rule.1 = x/# ^x/(.+)$ y/a#/$1', /:2: module\.rewrite\.rule\.1: dest is not a topic filter/],
    ['module.rewrite.pub.rule.1 = x/# ^x/(.+)$ y/+/$1', /:2: module\.rewrite\.pub\.rule\.1: dest of a publish rule may hold no wildcard/],
    ['module.rewrite.rule.0 = x/# ^x/(.+)$ y/$1', /:2: module\.rewrite\.rule\.0: unknown setting$/],
    ['module.rewrite.rules.1 = x/# ^x/(.+)$ y/$1', /:2: module\.rewrite\.rules\.1: unknown setting$/],
    ['module.subscription.1.topic = a/#/b', /:2: module\.subscription\.1\.topic: not a topic filter/],
    ['module.subscription.1.topic = a/%c+', /:2: module\.subscription\.1\.topic: not a topic filter/],
    ['module.subscription.1.qos = 1', /:2: module\.subscription\.1\.qos: no module\.subscription\.1\.topic for it/],
    ['module.subscription.1.topic = a\nmodule.subscription.1.qos = 3', /:3: module\.subscription\.1\.qos: /],
    ['module.subscription.1.topic = a\nmodule.subscription.1.rh = 3', /:3: module\.subscription\.1\.rh: /],
    ['module.subscription.1.topic = a\nmodule.subscription.1.nl = maybe', /:3: module\.subscription\.1\.nl: /],
    ['module.presence = maybe', /:2: module\.presence: /],
    ['module.presence.qos = 3', /:2: module\.presence\.qos: /],
    ['module.presence.format = long', /:2: module\.presence\.format: /]
  ]
  for (const [line, why] of cases) t.match(refused(`module.presence = on\n${line}\n`), new RegExp(`^${FILE.replaceAll('/', '\\/').replaceAll('.', '\\.')}${why.source}`), line)
})

t.test('the numbered keys: subscriptions by number with their options; rules in order, both forms', async (t) => {
  const config = validate([
    'module.subscription.10.topic = ten/%c', 'module.subscription.2.topic = two/%u', 'module.subscription.2.qos = 2',
    'module.subscription.2.nl = 1', 'module.subscription.2.rap = on', 'module.subscription.2.rh = 2',
    'module.rewrite.sub.rule.1 = s/# ^s/(.*)$ S/$1', 'module.rewrite.pub.rule.1 = p/# ^p/(.*)$ P/$1',
    'module.rewrite.rule.1 = b/# ^b/(.*)$ B/$1', 'module.rewrite.rule.12 = c/# ^c/(.*)$ C/$1', 'module.rewrite.rule.3 = d/# ^d/(.*)$ D/$1'
  ].join('\n'))
  t.same(subscriptionItems(config), [
    { n: 2, topic: 'two/%u', qos: 2, nl: true, rap: true, rh: 2 },
    { n: 10, topic: 'ten/%c', qos: 1, nl: false, rap: false, rh: 0 }
  ])
  const { publish, subscribe } = rewriteRules(config)
  t.same(publish.map((r) => r.filter), ['b/#', 'p/#', 'd/#', 'c/#'], 'publish: rule.1, pub.rule.1, rule.3, rule.12')
  t.same(subscribe.map((r) => r.filter), ['b/#', 's/#', 'd/#', 'c/#'], 'subscribe: rule.1, sub.rule.1, rule.3, rule.12')
})

const rules = (...texts: string[]): RewriteRule[] => texts.map((text) => parseRule(text))
const topicOf = (list: RewriteRule[], topic: string, name = true): string | undefined => {
  const outcome = rewrite(list, topic, name)
  return outcome !== undefined && 'topic' in outcome ? outcome.topic : undefined
}

t.test('rewrite: groups, the first matching filter decides, a regex that does not match leaves the topic', async (t) => {
  const list = rules('x/# ^x/y/(.+)$ z/y/$1', 'y/+/z/# ^y/(.+)/z/(.+)$ y/z/$2', 'x/# ^x/(.+)$ never/$1', 'a/+ ^a/(b)?(c)?$ a/$2$1/end')
  t.equal(topicOf(list, 'x/y/1/2'), 'z/y/1/2')
  t.equal(topicOf(list, 'y/a/z/b'), 'y/z/b')
  t.equal(topicOf(list, 'x/q'), undefined, 'rule 1 matched by filter, its regex did not: no later rule is tried (EMQ X)')
  t.equal(topicOf(list, 'q/y/1'), undefined, 'no filter matches')
  t.equal(topicOf(list, 'a/c'), 'a/c/end', 'a group that took no part is empty')
  t.equal(topicOf(rules('r/# ^r/(.+)$ $1/$1/$1'), 'r/é/ü'), 'é/ü/é/ü/é/ü', 'a group used several times, non-ASCII')
  t.equal(topicOf(rules('# ^(.*)$ $1'), 'same'), undefined, 'an unchanged topic is no rewrite')
  t.equal(topicOf(rules('# ^(.*)$ all/$1'), '$SYS/x'), undefined, 'a filter starting with a wildcard does not match $ topics')
})

t.test('rewrite of filters: wildcards in the filter, shared subscriptions keep their prefix', async (t) => {
  const list = rules('x/# ^x/(.+)$ y/$1')
  t.equal(topicOf(list, 'x/+/a', false), 'y/+/a')
  t.equal(topicOf(list, 'x/#', false), 'y/#')
  t.equal(topicOf(list, '$share/g/x/a/#', false), '$share/g/y/a/#')
  t.equal(topicOf(list, '$queue/x/a', false), '$queue/y/a')
  t.equal(topicOf(list, '$share/x/a', false), undefined, '$share/x/ is the group x: the filter behind it is a, no match')
})

t.test('a result that is no valid topic is refused, with the reason', async (t) => {
  t.match(rewrite(rules('x/# ^x/(.+)$ y/+/$1'), 'x/a', true), { refused: /wildcard/, result: 'y/+/a' }, 'a wildcard in a publish topic')
  t.match(rewrite(rules('x/# ^x/(.+)$ y/$1/z'), 'x/#', false), { refused: /not a topic filter/, result: 'y/#/z' }, '# in the middle of a filter')
  t.match(rewrite(rules('x/# ^x/(.+)$ y/a$1'), 'x/+', false), { refused: /not a topic filter/ }, '+ inside a level')
  t.match(rewrite(rules('x/# ^x/(.*)$ $1'), 'x/', true), { refused: /wildcard, or empty/ }, 'an empty topic')
  const long = 'x/' + 'a'.repeat(30_000)
  t.match(rewrite(rules('x/# ^x/(.+)$ $1/$1/$1'), long, true), { refused: /65535 bytes/ }, 'longer than MQTT can carry')
})

t.test('subscription templates: %c and %u, hostile or missing values are skipped', async (t) => {
  t.same(fillTemplate('$client/%c', { clientId: 'dev-1' }), { topic: '$client/dev-1' })
  t.same(fillTemplate('u/%u/c/%c/#', { clientId: 'c1', username: 'al' }), { topic: 'u/al/c/c1/#' })
  t.same(fillTemplate('pre-%c-post', { clientId: 'x' }), { topic: 'pre-x-post' })
  t.same(fillTemplate('a/%c', { clientId: '%u', username: 'bob' }), { topic: 'a/%u' }, 'a client id holding %u is taken literally')
  t.same(fillTemplate('a/%c', { clientId: '$&' }), { topic: 'a/$&' }, 'no replacement patterns')
  for (const clientId of ['+', '#', 'a/b', 'a+', '']) t.match(fillTemplate('c/%c', { clientId }), { skipped: /client id/ }, `client id ${JSON.stringify(clientId)}`)
  for (const username of ['+', '#', 'a/b', '', undefined]) t.match(fillTemplate('u/%u', { clientId: 'ok', username }), { skipped: /user name/ }, `user name ${JSON.stringify(username)}`)
  t.same(fillTemplate('fixed/#', { clientId: '#' }), { topic: 'fixed/#' }, 'no placeholder: the client id does not matter')
})
