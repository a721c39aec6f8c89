// The CONNECT path (issue 20 #2, engine patch 201): a node whose message bus is
// in-process publishes no `$SYS/<id>/new/clients` notice per connect (only
// other nodes on a shared bus act on it: test/28 checks that a cluster node
// still announces and takes over); the engine still registers the client.
import t from 'tap'
import mqtt from 'mqtt'
import { startBroker } from './helpers/broker.js'
import { waitEvent } from './helpers/mqtt.js'
import { engineClient, engineMq } from '../lib/engine/internals.js'

const DEADLINE_MS = 20_000

const broker = await startBroker({}, ['tcp'])
t.teardown(async () => await broker.stop())

t.test('a single node announces no new client on its bus', async (t) => {
  const engine = broker.node.engine
  const notices: string[] = []
  const listener = (packet: { payload: Buffer | string }, done: () => void): void => {
    notices.push(packet.payload.toString())
    done()
  }
  engineMq(engine).on('$SYS/+/new/clients', listener)
  t.teardown(() => engineMq(engine).removeListener('$SYS/+/new/clients', listener))
  const registered = waitEvent<[{ id: string }]>(engine, 'client', DEADLINE_MS)
  const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'cn-one', reconnectPeriod: 0 })
  t.teardown(() => client.end(true))
  await waitEvent(client, 'connect', DEADLINE_MS)
  const [registeredClient] = await registered
  t.equal(registeredClient.id, 'cn-one', 'the engine registered the client')
  t.equal(engineClient(engine, 'cn-one')?.closed, false, 'it is connected')
  // a notice published on the bus reaches the listener (it is live), the connect's did not
  await new Promise<void>((resolve, reject) => {
    engine.publish({ cmd: 'publish', topic: `$SYS/${engine.id}/new/clients`, payload: Buffer.from('probe'), qos: 0, retain: false, dup: false }, (err) => err == null ? resolve() : reject(err))
  })
  t.same(notices, ['probe'], 'only the probe notice went over the bus, none for the connect')
})
