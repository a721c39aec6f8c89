// An offline MQTT 5 session keeps showing its client's own Session Expiry
// Interval in GET /api/v3/sessions/ after the node restarts (issue 15 #8):
// the interval is stored with the session's expiry timer.
import { rm } from 'node:fs/promises'
import t from 'tap'
import { freePort, spawnBroker, tempDir, writePluginFiles } from './helpers/broker.js'
import { connect } from './helpers/mqtt.js'

interface SessionItem { client_id: string, expiry_interval: number, clean_start: boolean, subscriptions_count: number }

t.test('v5 client with Session Expiry Interval 600 (zone: 7200): listed with 600 before and after a SIGTERM restart', async (t) => {
  const dataDir = await tempDir()
  const apiPort = await freePort()
  const etcDir = await writePluginFiles(dataDir, { broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}` } })
  const settings = { 'plugins.etc_dir': etcDir, 'zone.external.session_expiry_interval': '2h' }
  let node = await spawnBroker(dataDir, settings)
  t.teardown(async () => {
    node.child.kill('SIGKILL')
    await node.exited
    await rm(dataDir, { recursive: true, force: true })
  })
  const sessions = async (): Promise<SessionItem[]> => {
    const res = await fetch(`http://127.0.0.1:${apiPort}/api/v3/sessions/`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
    t.equal(res.status, 200)
    return ((await res.json()) as { items: SessionItem[] }).items.sort((a, b) => a.client_id.localeCompare(b.client_id))
  }

  const sleeper = await connect(`mqtt://127.0.0.1:${node.port}`, { clientId: 'sleeper', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 600 } })
  await sleeper.subscribeAsync({ 'nap/#': { qos: 1 } })
  const v3 = await connect(`mqtt://127.0.0.1:${node.port}`, { clientId: 'v3-keeper', protocolVersion: 4, clean: false })
  await v3.subscribeAsync({ 'nap/#': { qos: 1 } })
  await sleeper.endAsync()
  await v3.endAsync()
  t.match(await sessions(), [{ client_id: 'sleeper', expiry_interval: 600 }, { client_id: 'v3-keeper', expiry_interval: 7200 }], 'before the restart')

  node.child.kill('SIGTERM')
  t.equal(await node.exited, 0, 'stopped cleanly')
  node = await spawnBroker(dataDir, settings, node.port)
  t.match(await sessions(), [{ client_id: 'sleeper', expiry_interval: 600, clean_start: false, subscriptions_count: 1 }, { client_id: 'v3-keeper', expiry_interval: 7200 }], 'after the restart: the client\'s own 600 s, the v3 session the zone\'s')
})
