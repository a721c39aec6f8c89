// Memory per idle connection (issue 20): 2000 idle clients (MQTT 3.1.1 and 5,
// clean and persistent sessions, keepalive 60) on a broker process, its V8
// heap (used + external, after two full collections, bench/heap-probe.ts)
// grown by at most HEAP_BYTES_PER_CLIENT each; and every client still
// served afterwards (PINGREQ → PINGRESP, a QoS 1 message to a persistent one).
// The bound is generous: the engine before the lazy-state patches took about
// 7.7 KB (10 000 MQTT 3.1.1 clean clients), after them 4.9 KB, and this mix 5.4 KB;
// `npm run bench` (BENCH_ONLY=memory) has the figures.
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { IConnackPacket } from 'mqtt-packet'
import { INSTALL_ROOT } from '../lib/root.js'
import { spawnBroker, tempDir } from './helpers/broker.js'
import { RawClient } from './helpers/raw-client.js'

const CLIENTS = 2000
const WARMUP = 50
const HEAP_BYTES_PER_CLIENT = 6656
const PROBE_TIMEOUT_MS = 60_000
const CONCURRENCY = 50

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** Heap used + external of the broker after two full collections (its heap probe answers SIGUSR2). */
async function heapOf (pid: number, dir: string, seq: number): Promise<number> {
  process.kill(pid, 'SIGUSR2')
  const file = join(dir, `probe-${seq}.json`)
  const deadline = Date.now() + PROBE_TIMEOUT_MS
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error('the broker\'s heap probe did not answer')
    await sleep(50)
  }
  const { memory } = JSON.parse(readFileSync(file, 'utf8')) as { memory: NodeJS.MemoryUsage }
  return memory.heapUsed + memory.external
}

const variantOf = (i: number): { protocolVersion: 4 | 5, clean: boolean } => ({ protocolVersion: i % 2 === 0 ? 4 : 5, clean: i % 4 < 2 })

async function openClients (port: number, count: number, prefix: string): Promise<RawClient[]> {
  const clients: RawClient[] = []
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++
      const { protocolVersion, clean } = variantOf(i)
      const client = await RawClient.open(port, protocolVersion)
      clients.push(client)
      client.send({
        cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean, keepalive: 60, clientId: `${prefix}-${i}`,
        properties: protocolVersion === 5 && !clean ? { sessionExpiryInterval: 600 } : undefined
      })
      const connack = await client.next('connack', 60_000) as IConnackPacket
      if ((connack.returnCode ?? connack.reasonCode ?? 0) !== 0) throw new Error(`${prefix}-${i}: CONNACK ${connack.returnCode ?? connack.reasonCode}`)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
  return clients
}

// 2000 connects and two probes take ~15 s on a quiet machine; a loaded 2-core box can take minutes
t.setTimeout(600_000)

t.test(`${CLIENTS} idle clients: heap per client bounded, every client still served`, async (t) => {
  const dataDir = await tempDir()
  const probeDir = await mkdtemp(join(tmpdir(), 'broker-heap-probe-'))
  t.teardown(async () => {
    await rm(dataDir, { recursive: true, force: true })
    await rm(probeDir, { recursive: true, force: true })
  })
  process.env.BENCH_PROBE_DIR = probeDir
  const broker = await spawnBroker(dataDir, {}, undefined,
    ['--expose-gc', '--import', `file://${join(INSTALL_ROOT, 'dist', 'bench', 'heap-probe.js')}`])
  delete process.env.BENCH_PROBE_DIR
  t.teardown(() => { broker.child.kill('SIGKILL') })
  const pid = broker.child.pid!

  // warm: code paths compiled, shared structures made
  for (const c of await openClients(broker.port, WARMUP, 'warm')) c.end()
  await sleep(500)
  const before = await heapOf(pid, probeDir, 0)
  const clients = await openClients(broker.port, CLIENTS, 'idle')
  t.teardown(() => { for (const c of clients) c.end() })
  const after = await heapOf(pid, probeDir, 1)
  const perClient = (after - before) / CLIENTS
  t.comment(`heap per idle client: ${perClient.toFixed(0)} bytes`)
  t.ok(perClient <= HEAP_BYTES_PER_CLIENT, `heap per idle client ${perClient.toFixed(0)} B ≤ ${HEAP_BYTES_PER_CLIENT} B`)

  // still served: every client's PINGREQ answered
  for (const c of clients) c.send({ cmd: 'pingreq' })
  const answered = await Promise.all(clients.map(async (c) => await c.next('pingresp', 60_000).then(() => true, () => false)))
  t.equal(answered.filter(Boolean).length, CLIENTS, 'every idle client gets its PINGRESP')

  // a persistent v5 client (index 1) subscribes and gets a QoS 1 message published by a v3.1.1 one
  const [publisher, subscriber] = [clients[0], clients[1]]
  subscriber.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'idle/t', qos: 1 }] })
  await subscriber.next('suback', 30_000)
  publisher.send({ cmd: 'publish', topic: 'idle/t', payload: Buffer.from('still here'), qos: 1, messageId: 7, retain: false, dup: false })
  await publisher.next('puback', 30_000)
  const message = await subscriber.next('publish', 30_000)
  t.equal(message.cmd === 'publish' ? message.payload.toString() : '', 'still here', 'the message arrives at the persistent session')
})
