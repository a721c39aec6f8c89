// The template in a real node, with MQTT.js clients: a subscriber on hi/#
// sees the greeting for another client that connects.
import t from 'tap'
import { startBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect, type MqttClient, type Received } from '../../../test/helpers/mqtt.js'

const broker = await startBroker({}, ['tcp'], undefined, {
  plugins: { broker_plugin_template: { 'template.greeting_topic': 'hi' } }
})
t.teardown(broker.stop)
const url = `mqtt://127.0.0.1:${broker.port()}`

/** The next message on `topic` (others are skipped: the subscriber may see its own greeting). */
async function messageOn (client: MqttClient, topic: string, timeoutMs = 5000): Promise<Received> {
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { client.off('message', onMessage); reject(new Error(`no message on ${topic} within ${timeoutMs} ms`)) }, timeoutMs)
    function onMessage (got: string, payload: Buffer, packet: { qos: number, retain: boolean }): void {
      if (got !== topic) return
      clearTimeout(timer)
      client.off('message', onMessage)
      resolve({ topic: got, payload: payload.toString(), qos: packet.qos, retain: packet.retain })
    }
    client.on('message', onMessage)
  })
}

t.test('the template is loaded at boot from data/loaded_plugins', async (t) => {
  t.ok(broker.node.plugins.isActive('broker_plugin_template'))
  const owners = broker.node.hooks.owners('client.connected').filter((owner) => owner === 'broker_plugin_template')
  t.equal(owners.length, 1, 'one client.connected handler')
})

t.test('a subscriber on hi/# receives hello <id> when another client connects', async (t) => {
  const subscriber = await connect(url, { clientId: 'watcher' })
  t.teardown(async () => { await closeAll(subscriber) })
  await subscriber.subscribeAsync('hi/#', { qos: 0 })
  const greeting = messageOn(subscriber, 'hi/visitor-1')
  const visitor = await connect(url, { clientId: 'visitor-1', protocolVersion: 5 })
  t.teardown(async () => { await closeAll(visitor) })
  t.same(await greeting, { topic: 'hi/visitor-1', payload: 'hello visitor-1', qos: 0, retain: false })
})
