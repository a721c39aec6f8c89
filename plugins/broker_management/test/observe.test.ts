// GET /metrics/, /stats/ (SPEC §2.11, §2.12) and /alarms/ over a real socket, moved by real MQTT clients.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const METRICS = ['bytes/received', 'bytes/sent', 'packets/received', 'packets/sent', 'packets/connect', 'packets/connack', 'packets/publish/received', 'packets/publish/sent', 'packets/puback/received', 'packets/puback/sent', 'packets/puback/missed', 'packets/pubrec/received', 'packets/pubrec/sent', 'packets/pubrec/missed', 'packets/pubrel/received', 'packets/pubrel/sent', 'packets/pubrel/missed', 'packets/pubcomp/received', 'packets/pubcomp/sent', 'packets/pubcomp/missed', 'packets/subscribe', 'packets/suback', 'packets/unsubscribe', 'packets/unsuback', 'packets/pingreq', 'packets/pingresp', 'packets/disconnect/received', 'packets/disconnect/sent', 'packets/auth', 'messages/received', 'messages/sent', 'messages/expired', 'messages/retained', 'messages/dropped', 'messages/forward', 'messages/qos0/received', 'messages/qos0/sent', 'messages/qos1/received', 'messages/qos1/sent', 'messages/qos2/received', 'messages/qos2/sent', 'messages/qos2/expired', 'messages/qos2/dropped']
const STATS = ['connections/count', 'connections/max', 'sessions/count', 'sessions/max', 'sessions/persistent/count', 'sessions/persistent/max', 'subscriptions/count', 'subscriptions/max', 'subscriptions/shared/count', 'subscriptions/shared/max', 'subscribers/count', 'subscribers/max', 'topics/count', 'topics/max', 'retained/count', 'retained/max', 'routes/count', 'routes/max']

// the machine's own alarms (memory, CPU) are checked rarely here, and cleared before the alarm test
const api = await startApiNode({ 'os_mon.cpu_check_interval': '1h', 'os_mon.mem_check_interval': '1h' })
t.teardown(async () => await api.stop())
const node = api.broker.node.name

t.test('metrics: every v3 key, cluster and node forms; a real client moves the counters', async (t) => {
  const before = (await api.call('GET', `/nodes/${node}/metrics/`)).body as Record<string, number>
  t.same(Object.keys(before).sort(), [...METRICS].sort())
  for (const key of METRICS) t.equal(typeof before[key], 'number', key)

  const client = await connect(api.mqttUrl, { clientId: 'metered' })
  await client.publishAsync('m/x', 'abc', { qos: 1 })
  await closeAll(client)

  const all = (await api.call('GET', '/metrics/')).body as Array<{ node: string, metrics: Record<string, number> }>
  t.equal(all.length, 1)
  t.same(Object.keys(all[0]).sort(), ['metrics', 'node'])
  t.equal(all[0].node, node)
  t.ok(all[0].metrics['packets/connect'] >= before['packets/connect'] + 1)
  t.ok(all[0].metrics['messages/qos1/received'] >= before['messages/qos1/received'] + 1)
  t.match(await api.call('GET', '/nodes/other@host/metrics/'), { status: 404 })
})

t.test('stats: every v3 key; a connected client and its subscription are counted', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'counted' })
  t.teardown(async () => await closeAll(client))
  await client.subscribeAsync('s/1')
  const one = (await api.call('GET', `/nodes/${node}/stats/`)).body as Record<string, number>
  t.same(Object.keys(one).sort(), [...STATS].sort())
  t.equal(one['connections/count'], 1)
  t.equal(one['subscriptions/count'], 1)
  t.ok(one['connections/max'] >= 1)

  const all = (await api.call('GET', '/stats/')).body as Array<Record<string, unknown>>
  t.equal(all.length, 1)
  t.same(Object.keys(all[0]).sort(), ['node', ...STATS].sort())
  t.equal(all[0].node, node)
  t.equal(all[0]['connections/count'], 1)
  t.match(await api.call('GET', '/nodes/other@host/stats/'), { status: 404 })
})

t.test('alarms: empty when none; a raised alarm is listed in the EMQ X record form until cleared', async (t) => {
  const alarms = api.broker.node.observability.alarms
  for (const present of alarms.present()) alarms.clear(present.id)
  t.same((await api.call('GET', `/alarms/${node}`)).body, [])
  t.same((await api.call('GET', '/alarms/')).body, [{ node, alarms: [] }])

  alarms.raise({ id: 'test_alarm', severity: 'warning', title: 'Test', summary: 'raised by a test' })
  t.teardown(() => { alarms.clear('test_alarm') })
  const listed = (await api.call('GET', `/alarms/${node}`)).body as Array<{ id: string, desc: Record<string, string> }>
  t.equal(listed.length, 1)
  t.match(listed[0], { id: 'test_alarm', desc: { severity: 'warning', title: 'Test', summary: 'raised by a test', timestamp: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/ } })
  t.same(Object.keys(listed[0].desc).sort(), ['severity', 'summary', 'timestamp', 'title'])
  t.same((await api.call('GET', '/alarms/')).body, [{ node, alarms: listed }])

  alarms.clear('test_alarm')
  t.same((await api.call('GET', `/alarms/${node}`)).body, [])
  t.match(await api.call('GET', '/alarms/other@host'), { status: 404 })

  const history = (await api.call('GET', `/alarms/history/${node}`)).body as Array<{ id: string, desc: Record<string, string> }>
  t.match(history.at(-1), { id: 'test_alarm', desc: { ...listed[0].desc, clear_at: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/ } }, 'the cleared alarm is the newest of the history, with when it was cleared')
  t.same((await api.call('GET', '/alarms/history/')).body, [{ node, alarms: history }])
  t.match(await api.call('GET', '/alarms/history/other@host'), { status: 404 })
})
