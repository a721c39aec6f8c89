// Offline persistent sessions in the session listings (SPEC §2.3): found in the store, with their queue.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const api = await startApiNode()
t.teardown(async () => await api.stop())
const node = api.broker.node.name

/** Polls `check` every 50 ms until it is true, for at most `ms`. */
async function until (check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return await check()
}

t.test('a v3.1.1 clean=false client that went offline is listed with its queued message', async (t) => {
  const sleeper = await connect(api.mqttUrl, { clientId: 'off-1', protocolVersion: 4, clean: false })
  await sleeper.subscribeAsync({ 'off/topic': { qos: 1 } })
  await sleeper.endAsync()
  const publisher = await connect(api.mqttUrl, { clientId: 'off-pub', protocolVersion: 4 })
  t.teardown(async () => await closeAll(publisher))
  await publisher.publishAsync('off/topic', 'queued', { qos: 1 })

  const lookup = async (): Promise<Array<Record<string, unknown>>> => (await api.call('GET', '/sessions/off-1')).body as Array<Record<string, unknown>>
  t.ok(await until(async () => (await lookup())[0]?.mqueue_len === 1), 'the queued message is counted within 5 s')

  const page = (await api.call('GET', '/sessions/')).body as { items: Array<Record<string, unknown>>, meta: { count: number } }
  t.equal(page.meta.count, 2, 'the publisher online and off-1 offline')
  const listed = page.items.find((i) => i.client_id === 'off-1')
  t.ok(listed !== undefined, 'off-1 is listed')
  t.same(Object.keys(listed!).sort(), ['awaiting_rel_len', 'binding', 'clean_start', 'client_id', 'created_at', 'deliver_msg', 'enqueue_msg', 'expiry_interval', 'heap_size', 'inflight_len', 'mailbox_len', 'max_awaiting_rel', 'max_inflight', 'max_mqueue', 'max_subscriptions', 'mqueue_dropped', 'mqueue_len', 'node', 'reductions', 'subscriptions_count', 'username'])
  t.match(listed, {
    client_id: 'off-1', clean_start: false, subscriptions_count: 1, mqueue_len: 1, inflight_len: 0, created_at: 'undefined',
    expiry_interval: 7200, node, binding: 'local', username: 'undefined', max_inflight: 32, max_awaiting_rel: 100, max_mqueue: 1000, max_subscriptions: 0,
    awaiting_rel_len: 0, deliver_msg: 0, enqueue_msg: 1, mailbox_len: 1, mqueue_dropped: 0, reductions: 0
  })
  t.same(await lookup(), [listed])
  t.same((await api.call('GET', `/nodes/${node}/sessions/off-1`)).body, [listed])
  t.equal(((await api.call('GET', `/nodes/${node}/sessions/`)).body as { meta: { count: number } }).meta.count, 2)

  // once it reconnects it is listed once, as a live session; it receives the queued message
  const back = await connect(api.mqttUrl, { clientId: 'off-1', protocolVersion: 4, clean: false })
  t.teardown(async () => await closeAll(back))
  const listedOnce = async (): Promise<Array<Record<string, unknown>>> =>
    ((await api.call('GET', '/sessions/')).body as { items: Array<Record<string, unknown>> }).items.filter((i) => i.client_id === 'off-1')
  t.ok(await until(async () => {
    const now = await listedOnce()
    return now.length === 1 && now[0].created_at !== 'undefined'
  }), 'listed as live within 5 s')
  const again = await listedOnce()
  t.equal(again.length, 1)
  t.match(again[0], { created_at: /^\d{4}-/, clean_start: false })
})

t.test('a clean client that went offline is not listed', async (t) => {
  const gone = await connect(api.mqttUrl, { clientId: 'clean-1', protocolVersion: 4, clean: true })
  await gone.subscribeAsync({ 'c/t': { qos: 1 } })
  await gone.endAsync()
  t.same((await api.call('GET', '/sessions/clean-1')).body, [])
  const page = (await api.call('GET', '/sessions/')).body as { items: Array<{ client_id: string }> }
  t.notOk(page.items.some((i) => i.client_id === 'clean-1'))
})
