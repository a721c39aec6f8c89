// The node's operations (lib/service/operations.ts) on two cluster nodes:
// a refusal on another node arrives as the same ServiceError, with the same
// kind, as the refusal made here; an unexpected failure there arrives as
// `failed`; the answers are facts (times as numbers), not SPEC records.
import t, { type Test } from 'tap'
import { onHolder } from '../lib/cluster/cluster.js'
import { actionsOf, queriesOf } from '../lib/service/operations.js'
import { ServiceError } from '../lib/service/service-error.js'
import { waitFor } from './helpers/cluster.js'
import { inProcessNode } from './helpers/in-process-cluster.js'
import { closeAll, connect } from './helpers/mqtt.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const cluster = { name: `ops${process.pid}`, redisPort: redis.port }
const a = await inProcessNode(cluster, 'a@127.0.0.1')
const b = await inProcessNode(cluster, 'b@127.0.0.1')
t.teardown(async () => { await a.stop(); await b.stop() })
const A = a.node.service
const B = b.node.service
await waitFor(async () => (await A.cluster.nodes()).length === 2 && (await B.cluster.nodes()).length === 2, 10_000, 'both nodes see each other')

/** What a promise rejects with (undefined when it resolves). */
async function failure (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => undefined, (err: unknown) => err)
}

/** The same operation refused here (on b) and on b through a: the same class, kind and message. */
async function sameRefusal (t: Test, what: string, local: () => Promise<unknown>, remote: () => Promise<unknown>, kind: string): Promise<void> {
  const here = await failure(local())
  const there = await failure(remote())
  t.type(here, ServiceError, `${what}: a ServiceError here`)
  t.type(there, ServiceError, `${what}: a ServiceError from the other node`)
  t.match(here, { name: 'ServiceError', kind }, `${what}: ${kind} here`)
  t.same({ kind: (there as ServiceError).kind, message: (there as ServiceError).message }, { kind: (here as ServiceError).kind, message: (here as ServiceError).message }, `${what}: the same kind and message`)
}

t.test('a refusal on another node arrives with the kind it has here', async (t) => {
  const on = 'b@127.0.0.1'
  await sameRefusal(t, 'subscribe for an unknown client', async () => await B.subscribe('nobody', 't/1', 0), async () => await A.cluster.on(on, 'subscribe', 'nobody', 't/1', 0), 'not_online')
  await sameRefusal(t, 'a bad topic filter', async () => await B.unsubscribe('nobody', 'a/#/b'), async () => await A.cluster.on(on, 'unsubscribe', 'nobody', 'a/#/b'), 'bad_topic')
  await sameRefusal(t, 'an unknown plugin', async () => await B.loadPlugin('broker_no_such'), async () => await A.cluster.on(on, 'loadPlugin', 'broker_no_such'), 'not_found')
  await sameRefusal(t, 'a bad ban', async () => await B.ban({ who: 'x', as: 'nobody' as 'client_id' }), async () => await A.cluster.on(on, 'ban', { who: 'x', as: 'nobody' as 'client_id' }), 'bad_value')
  await sameRefusal(t, 'a bad drain rate', async () => await Promise.resolve().then(() => B.drain(0)), async () => await A.cluster.on(on, 'drain', 0), 'bad_value')
  t.equal(await A.cluster.on(on, 'kick', 'nobody'), false, 'a kick of an unknown client: false there as here')
  t.equal(B.kick('nobody'), false)
  t.notOk(await onHolder(A.cluster, 'subscribe', 'nobody', 't/1', 0), 'not_online on every node: held by none')
})

t.test('the JSON a refusal travels as', async (t) => {
  const err = new ServiceError('not_online', 'client x is not online')
  t.same(JSON.parse(JSON.stringify(err)), { name: 'ServiceError', kind: 'not_online', message: 'client x is not online' })
  t.match(ServiceError.fromJSON(JSON.parse(JSON.stringify(err))), { name: 'ServiceError', kind: 'not_online', message: 'client x is not online' })
  t.match(ServiceError.fromJSON({ kind: 'no such kind', message: 'm' }), { kind: 'failed', message: 'm' })
  t.match(ServiceError.of(new TypeError('boom')), { name: 'ServiceError', kind: 'failed', message: 'boom' })
})

t.test('answers are facts: a connection\'s time is a number, an unknown value absent', async (t) => {
  const client = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'facts-1' })
  t.teardown(async () => await closeAll(client))
  const [facts] = await A.cluster.on('b@127.0.0.1', 'connection', 'facts-1')
  t.type(facts.connected_at, 'number')
  t.ok(Math.abs(facts.connected_at - Date.now()) < 60_000, 'about now')
  t.equal(facts.username, undefined, 'no user name: absent, not the text undefined')
  t.match(facts, { node: 'b@127.0.0.1', client_id: 'facts-1', clean_start: true })
  const [session] = await A.cluster.on('b@127.0.0.1', 'session', 'facts-1')
  t.type(session.created_at, 'number')
  t.same(B.client('facts-1')?.clientId, 'facts-1', 'client(id) is the ClientInfo hooks see')
  t.ok(B.clients().some((c) => c.clientId === 'facts-1'))
})

t.test('the views a plugin gets are picks: queries read, actions act, nothing of the administration', async (t) => {
  const queries = queriesOf(B)
  t.equal(queries.name, 'b@127.0.0.1')
  t.ok(Array.isArray(queries.connections()))
  for (const admin of ['kick', 'publish', 'setConfig', 'loadPlugin', 'ban', 'drain', 'cluster']) t.notOk(admin in queries, `no ${admin} among the queries`)
  t.same(Object.keys(actionsOf(B)).sort(), ['kick', 'publish', 'subscribe', 'unsubscribe'])
  t.equal(actionsOf(B).kick('nobody'), false)
  t.throws(() => queries.setting('cluster.cookie'), { name: 'ServiceError', kind: 'not_found' }, 'a secret setting is not shown')
  t.equal(queries.setting('node.name'), 'b@127.0.0.1')
})
