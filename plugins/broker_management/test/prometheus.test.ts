// GET /metrics on the management listener: the Prometheus text format,
// without credentials, with values that follow real MQTT traffic.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.eE+-]+$/

function sample (text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'))
  if (line === undefined) throw new Error(`no sample ${name}`)
  return Number(line.slice(line.lastIndexOf(' ') + 1))
}

t.test('GET /metrics answers Prometheus text without credentials', async (t) => {
  const api = await startApiNode()
  t.teardown(api.stop)
  const url = api.base.replace('/api/v3', '/metrics')
  const client = await connect(api.mqttUrl, { clientId: 'prom-client' })
  t.teardown(() => closeAll(client))
  await client.subscribeAsync('prom/t', { qos: 1 })
  await client.publishAsync('prom/t', 'x', { qos: 1 })
  await new Promise((resolve) => setTimeout(resolve, 100))
  const res = await fetch(url)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain/)
  const text = await res.text()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue
    t.match(line, SAMPLE, `a sample line: ${line}`)
  }
  t.ok(sample(text, 'broker_messages_received_total') >= 1, 'the publish is counted')
  t.equal(sample(text, 'broker_connections_count'), 1, 'one connection')
})
