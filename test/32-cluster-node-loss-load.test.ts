// Losing a node under load (issue 21 #4). Three real node processes, four
// publishers sending QoS 1 (two on n3, one each on n1 and n2), each its next
// message once the last one is acknowledged. Then n3 is killed with -9:
// (a) its persistent sessions continue on the node their clients reconnect to,
//     with what was queued for them meanwhile;
// (b) its member of a shared group is replaced: the group's members per node
//     in Redis no longer name n3 and the member, back on n2, receives there;
// (c) every message a publisher had acknowledged (PUBACK, on any node, n3
//     included) reaches every matching subscriber's session: the live ones on
//     n1 and n2, n3's persistent subscribers once they are back, the shared
//     group (some member);
// (d) the wills of n3's clients are published once each, not once per
//     surviving node.
// The time until every publisher is acknowledged again is reported, not asserted.
import { Redis } from 'ioredis'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import t from 'tap'
import { logsOnFailure, startCluster, track, waitFor, type ClusterNode, type Tracked } from './helpers/cluster.js'
import { closeAll, type Received } from './helpers/mqtt.js'

const WILLS = 12
/** acknowledged messages before the kill, and per publisher after it (service is back) */
const ACKS_BEFORE = 200
const ACKS_AFTER = 30
/** a loaded 2-core box: bounds, not speeds */
const DEADLINE_MS = 60_000

// three nodes and a load on a loaded 2-core box: far more than tap's 30 s (about 25 s on a quiet one)
t.setTimeout(240_000)

// no queue cap: what is measured is loss to the node's death, not max_mqueue_len
const cluster = await startCluster({ settings: { 'zone.external.max_mqueue_len': 0 } })
t.teardown(cluster.close)
const [n1, n2, n3] = cluster.nodes
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))
const redis = new Redis(cluster.redis.port, '127.0.0.1', { lazyConnect: true })
t.teardown(() => redis.disconnect())
logsOnFailure(t, cluster)

const keep = async (url: string, options: IClientOptions): Promise<Tracked> => {
  const tracked = await track(url, { connectTimeout: 60_000, ...options })
  clients.push(tracked.client)
  return tracked
}

/**
 * A subscriber that, when its node goes, connects to `fallback` with the same
 * options (its persistent session); `messages` spans both connections.
 */
interface Subscriber { readonly messages: Received[], readonly moved: Promise<Tracked | undefined> }
async function subscriber (node: ClusterNode, fallback: ClusterNode | undefined, clientId: string, filter: string, options: IClientOptions): Promise<Subscriber> {
  const first = await keep(node.mqttUrl, { clientId, ...options })
  await first.client.subscribeAsync(filter, { qos: 1 })
  const moved = fallback === undefined
    ? Promise.resolve(undefined)
    : new Promise<Tracked>((resolve, reject) => first.client.once('close', () => {
      const at = Date.now()
      keep(fallback.mqttUrl, { clientId, ...options }).then(resolve, (err: Error) => reject(new Error(`${clientId} to ${fallback.name} (from ${new Date(at).toISOString()}): ${err.message}`)))
    }))
  let second: Tracked | undefined
  void moved.then((tracked) => { second = tracked }, () => {})
  return { get messages () { return [...first.messages, ...(second?.messages ?? [])] }, moved }
}

interface Publisher { acked: Array<{ payload: string, at: number }>, done: Promise<void> }
let publishing = true
/** Publishes `nl/load/<p>` QoS 1 to the first node of `nodes` that takes it; when the connection goes, to the next. */
function publisher (p: number, nodes: ClusterNode[]): Publisher {
  const acked: Publisher['acked'] = []
  const run = async (): Promise<void> => {
    let i = 0
    for (const node of nodes) {
      const client = mqtt.connect(node.mqttUrl, { clientId: `nl-pub-${p}`, reconnectPeriod: 0, connectTimeout: 30_000 })
      clients.push(client)
      const gone = new Promise<'gone'>((resolve) => client.once('close', () => resolve('gone')))
      if (await Promise.race([new Promise((resolve) => client.once('connect', resolve)), gone]) === 'gone') continue
      while (publishing) {
        const payload = `${p}:${i++}`
        // a publish the connection ended under was never acknowledged: not counted
        const outcome = await Promise.race([client.publishAsync(`nl/load/${p}`, payload, { qos: 1 }).then(() => 'acked', () => 'failed'), gone])
        if (outcome === 'gone') break
        if (outcome === 'acked') acked.push({ payload, at: Date.now() })
      }
      client.end(true)
      if (!publishing) return
    }
  }
  return { acked, done: run() }
}

t.test('kill -9 of one node of three under QoS 1 load', async (t) => {
  const started = Date.now()
  const progress = (what: string): void => t.comment(`${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  const v5Session = { protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 300 } }
  // live subscribers on the nodes that stay
  const live = await Promise.all([n1, n2].map(async (node, i) => await subscriber(node, undefined, `nl-live-${i + 1}`, 'nl/load/#', { protocolVersion: 5 })))
  // n3's persistent subscribers (MQTT 5 and 3.1.1), which move to n1 and n2
  const persistent = [
    await subscriber(n3, n1, 'nl-session-v5', 'nl/load/#', v5Session),
    await subscriber(n3, n2, 'nl-session-v4', 'nl/load/#', { protocolVersion: 4, clean: false })
  ]
  // a shared group with a member on each node; n3's (a persistent session) moves to n2
  const group = 'nl/load/#'
  const shared = [
    await subscriber(n1, undefined, 'nl-share-1', `$share/g/${group}`, { protocolVersion: 5 }),
    await subscriber(n2, undefined, 'nl-share-2', `$share/g/${group}`, { protocolVersion: 5 }),
    await subscriber(n3, n2, 'nl-share-3', `$share/g/${group}`, v5Session)
  ]
  // the wills of n3's clients, watched from n1 and n2
  const watchers = await Promise.all([n1, n2].map(async (node, i) => {
    const watcher = await keep(node.mqttUrl, { clientId: `nl-will-watch-${i + 1}`, protocolVersion: 5 })
    await watcher.client.subscribeAsync('nl/will/#', { qos: 1 })
    return watcher
  }))
  for (let w = 0; w < WILLS; w++) {
    const version = w % 2 === 0 ? { protocolVersion: 4 as const } : { protocolVersion: 5 as const, properties: { sessionExpiryInterval: 0 } }
    await keep(n3.mqttUrl, { clientId: `nl-will-${w}`, ...version, will: { topic: `nl/will/${w}`, payload: Buffer.from(`will ${w}`), qos: 1, retain: false } })
  }

  progress('subscribers and will clients connected')
  const publishers = [publisher(0, [n1]), publisher(1, [n2]), publisher(2, [n3, n1]), publisher(3, [n3, n2])]
  const allAcked = (): string[] => publishers.flatMap((p) => p.acked.map((a) => a.payload))
  await waitFor(() => allAcked().length >= ACKS_BEFORE && publishers.every((p) => p.acked.length > 0), DEADLINE_MS, `${ACKS_BEFORE} messages acknowledged before the kill`)

  await cluster.kill9(n3)
  const killedAt = Date.now()
  const ackedBefore = allAcked().length
  progress(`n3 killed after ${ackedBefore} messages acknowledged`)

  await waitFor(() => publishers.every((p) => p.acked.filter((a) => a.at > killedAt).length >= ACKS_AFTER), DEADLINE_MS,
    `every publisher acknowledged ${ACKS_AFTER} times after the kill`)
  const backAfter = publishers.map((p) => p.acked.find((a) => a.at > killedAt)!.at - killedAt)
  publishing = false
  await Promise.all(publishers.map(async (p) => await p.done))
  const moved = await Promise.all([...persistent, shared[2]].map(async (s) => await s.moved))
  t.comment(`service back after ${Math.max(...backAfter)} ms (per publisher on n1, n2, n3→n1, n3→n2: ${backAfter.join(', ')} ms); ` +
    `${ackedBefore} messages acknowledged before the kill, ${allAcked().length} in all`)

  t.test('(a) n3\'s persistent sessions continue where their clients reconnected', async (t) => {
    for (const [i, node] of [n1, n2, n2].entries()) {
      t.equal(moved[i]?.connack.sessionPresent, true, `${['nl-session-v5', 'nl-session-v4', 'nl-share-3'][i]}: session present on ${node.name}`)
    }
    const where = await cluster.api(n1, 'GET', '/sessions/nl-session-v5')
    t.match(where.body, [{ client_id: 'nl-session-v5', node: n1.name }], 'the session is listed on n1')
  })

  t.test('(c) every acknowledged message reaches every matching session', async (t) => {
    const acked = allAcked()
    const missing = (messages: () => Received[]): string[] => {
      const got = new Set(messages().map((m) => m.payload))
      return acked.filter((payload) => !got.has(payload))
    }
    const receivers: Array<[string, () => Received[]]> = [
      ['live subscriber on n1', () => live[0].messages],
      ['live subscriber on n2', () => live[1].messages],
      ['n3\'s MQTT 5 session, now on n1', () => persistent[0].messages],
      ['n3\'s MQTT 3.1.1 session, now on n2', () => persistent[1].messages],
      ['the shared group (some member)', () => shared.flatMap((s) => s.messages)]
    ]
    await waitFor(() => receivers.every(([, messages]) => missing(messages).length === 0), 30_000, 'every acknowledged message received').catch(() => {})
    for (const [name, messages] of receivers) {
      const lost = missing(messages)
      t.same(lost.slice(0, 20), [], `${name}: none of ${acked.length} lost (${lost.length} missing)`)
    }
  })

  t.test('(b) the shared group\'s member on n3 is replaced', async (t) => {
    const counts = async (): Promise<Record<string, string>> => await redis.hgetall(`${cluster.name}:shared:g\u0000${group}`)
    await waitFor(async () => (await counts())[n3.name] === undefined, DEADLINE_MS, 'n3 gone from the group\'s members').catch(() => {})
    t.same(await counts(), { [n1.name]: '1', [n2.name]: '2' }, 'members per node: n3\'s member now counts on n2')
    const before = shared.map((s) => s.messages.length)
    const pub = await keep(n1.mqttUrl, { clientId: 'nl-share-pub' })
    const payloads = Array.from({ length: 30 }, (_, i) => `after-${i}`)
    for (const payload of payloads) await pub.client.publishAsync('nl/load/after', payload, { qos: 1 })
    const after = (): string[] => shared.flatMap((s, i) => s.messages.slice(before[i]).map((m) => m.payload))
    await waitFor(() => after().length >= payloads.length, DEADLINE_MS, 'the messages published after the loss').catch(() => {})
    t.same(after().sort(), [...payloads].sort(), 'each message published after the loss reaches exactly one member')
  })

  t.test('(d) each will of n3\'s clients is published once', async (t) => {
    const expected = Array.from({ length: WILLS }, (_, w) => `nl/will/${w}`).sort()
    await waitFor(() => watchers.every((w) => w.messages.length >= WILLS), DEADLINE_MS, 'every will').catch(() => {})
    // n3's wills are gone from the store once published; a second sweep (4 heartbeats) would find none
    await waitFor(async () => await redis.llen('will') === 0, DEADLINE_MS, 'no stored will left').catch(() => {})
    await new Promise((resolve) => setTimeout(resolve, 6 * cluster.heartbeatMs))
    for (const [i, watcher] of watchers.entries()) {
      t.same(watcher.messages.map((m) => m.topic).sort(), expected, `watcher on n${i + 1}: each will once`)
    }
  })
})
