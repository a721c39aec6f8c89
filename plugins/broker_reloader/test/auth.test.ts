// An auth and ACL plugin reloaded while clients connect, subscribe and
// publish: with mqtt.allow_anonymous = true and acl_nomatch = allow, any
// moment without its handlers would let a refused client in. First the swap
// is stopped half-way (the old load's releases done, the new one not yet
// loaded) and clients knock: they wait, and are then refused by the new code.
// Then reloads under steady connect traffic: no refused client gets in.
import t from 'tap'
import { startPluginNode, type IClientOptions, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { GATE_PLUGIN, writeGatePlugin, until } from './fixtures.js'

const dir = t.testdir({})
await writeGatePlugin(dir, 'ts')
const harness = await startPluginNode({
  plugin: 'broker_reloader',
  settings: { 'reloader.interval': 0, 'reloader.logfile': '' },
  others: { [GATE_PLUGIN]: {} },
  node: { 'mqtt.allow_anonymous': 'true', 'mqtt.acl_nomatch': 'allow' },
  pluginDirs: [dir]
})
t.teardown(harness.stop)
const node = harness.node
const global = globalThis as unknown as { __fixtureGate?: () => Promise<void> }
t.teardown(() => { delete global.__fixtureGate })

/** Connects; resolves the client (admitted) or the CONNACK's refusal code. */
async function knock (options: IClientOptions): Promise<MqttClient | number> {
  try {
    return await harness.mqtt({ protocolVersion: 5, ...options })
  } catch (err) {
    const code = (err as { code?: number }).code
    if (typeof code !== 'number') throw err
    return code
  }
}

/** The SUBACK's codes (MQTT.js rejects a v5 SUBACK that refuses). */
async function granted (client: MqttClient, topic: string): Promise<number[]> {
  return await client.subscribeAsync(topic, { qos: 1 }).then(
    (grants) => grants.map((g) => g.qos),
    (err: { packet?: { granted?: number[] } }) => { if (err.packet?.granted === undefined) throw err; return err.packet.granted })
}

const counter = (key: string): number => (node.service.metrics() as unknown as Record<string, number>)[key] ?? 0


t.test('clients that arrive while the handlers are gone wait for the new ones', async (t) => {
  t.equal(await knock({ clientId: 'bad-0', username: 'bad' }), 0x87, 'refused by the plugin')
  const subscriber = await knock({ clientId: 'sub-0', username: 'good' }) as MqttClient

  let entered!: () => void
  let open!: () => void
  const inside = new Promise<void>((resolve) => { entered = resolve })
  global.__fixtureGate = async () => {
    entered()
    await new Promise<void>((resolve) => { open = resolve })
  }
  const reloading = node.commands.run(['reload', GATE_PLUGIN])
  await inside
  t.notOk(node.hooks.owners('client.authenticate').includes(GATE_PLUGIN), 'half-way: the old handlers are gone')
  t.ok(node.hooks.held('client.authenticate') !== undefined && node.hooks.held('client.check_acl') !== undefined, 'and the chains are held')

  const connects = counter('packets/connect')
  const subscribes = counter('packets/subscribe')
  const bad = knock({ clientId: 'bad-1', username: 'bad' })
  const badAsync = knock({ clientId: 'bad-2', username: 'bad-async' })
  const good = knock({ clientId: 'good-1', username: 'good' })
  const secret = granted(subscriber, 'secret/x')
  await until('the CONNECTs and the SUBSCRIBE to arrive', () => counter('packets/connect') >= connects + 3 && counter('packets/subscribe') >= subscribes + 1)
  delete global.__fixtureGate
  open()
  t.match((await reloading).data, { plugin: GATE_PLUGIN, active: true })
  t.equal(await bad, 0x87, 'a client the plugin refuses is refused')
  t.equal(await badAsync, 0x87, 'also when the new handler answers later')
  t.type(await good, 'object', 'a client it admits is admitted')
  t.same(await secret, [0x87], 'a topic it denies is denied')
  t.same(await granted(subscriber, 'open/x'), [1], 'the rest is still allowed')
  t.equal(node.hooks.held('client.authenticate'), undefined, 'nothing held after the swap')
})

t.test('reloaded again and again under connect traffic: no refused client gets in', async (t) => {
  // each swap waits a little half-way, so the traffic meets many open windows
  global.__fixtureGate = async () => { await new Promise((resolve) => setTimeout(resolve, 30)) }
  const traffic = { stop: false, admittedBad: 0, refusedBad: 0, admittedGood: 0, refusedGood: 0 }
  const worker = async (n: number): Promise<void> => {
    for (let i = 0; !traffic.stop; i++) {
      const username = ['bad', 'bad-async', 'good', 'good-async'][(n + i) % 4]
      const answer = await knock({ clientId: `w${n}-${i}`, username })
      const bad = username.startsWith('bad')
      if (typeof answer === 'number') {
        if (bad) traffic.refusedBad++
        else traffic.refusedGood++
      } else {
        if (bad) traffic.admittedBad++
        else traffic.admittedGood++
        await answer.endAsync()
      }
    }
  }
  const workers = [0, 1, 2, 3].map(worker)
  const reloads = 10
  for (let i = 0; i < reloads; i++) {
    const before = traffic.refusedBad
    await until('traffic between reloads', () => traffic.refusedBad >= before + 2)
    await node.commands.run(['reload', GATE_PLUGIN])
  }
  traffic.stop = true
  await Promise.all(workers)
  delete global.__fixtureGate
  t.equal(traffic.admittedBad, 0, 'no refused client was admitted')
  t.equal(traffic.refusedGood, 0, 'no admitted client was refused')
  t.ok(traffic.refusedBad >= reloads * 2 && traffic.admittedGood > 0, `traffic ran (${traffic.refusedBad} refused, ${traffic.admittedGood} admitted)`)
  t.equal(node.hooks.owners('client.authenticate').filter((o) => o === GATE_PLUGIN).length, 1, 'one handler')
})
