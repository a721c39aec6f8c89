// `npm run bench:soak`: one broker node (the bench's: LevelDB store, no
// plugin) under SOAK_CLIENTS clients for SOAK_SECONDS — half subscribers, half
// publishers, pair n on `soak/<n>`, QoS 1, SOAK_RATE messages a second in all.
// Every 5 s it records the node's RSS, heap and event-loop delay (its own
// probe, bench/soak-probe.ts) and the deliveries a second; at the end it stops
// the publishers, waits for the last deliveries and reports the RSS slope after
// the warm-up, the event-loop delay p99, and every acknowledged message that
// did not arrive. The timeline is written to bench/results/ as JSON, HTML and
// PNG. See bench/README.md.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeDisturbance, disturbancePolicy, watchDisturbance } from './disturbance.js'
import { envArgs, envNumber } from './env.js'
import { FD_HEADROOM, rerunWithOpenFiles } from './fd-limit.js'
import { plot } from './plot.js'
import { ForkedWorker } from './pool.js'
import { percentile, slope } from './stats.js'
import { killAllNow, ROOT, Server } from './servers.js'
import type { FromSoakWorker, SoakCounts, SoakRole, ToSoakWorker } from './soak-worker.js'

const SAMPLE_MS = 5000
/** After the publishers stop, deliveries may go on this long after the last one counted. */
const DRAIN_QUIET_MS = 5000
const DRAIN_MAX_MS = 60_000

interface ProbeLine { t: number, rss: number, heapUsed: number, external: number, loopP99Ms: number, loopMaxMs: number }
interface Sample { seconds: number, rssMiB: number, heapMiB: number, loopP99Ms: number, loopMaxMs: number, deliveriesPerS: number }

/** Setting up the soak's clients may take this long on a loaded machine. */
const SETUP_TIMEOUT_MS = 600_000

/** One of the soak's two client workers (bench/soak-worker.ts), with the counts it last sent. */
class SoakWorker extends ForkedWorker<ToSoakWorker, FromSoakWorker> {
  counts: SoakCounts = { sent: 0, acked: 0, received: 0, duplicates: 0, gaps: 0, lostConnections: 0 }
  readonly ready: Promise<unknown>

  constructor (index: number, port: number, role: SoakRole) {
    super(index, 'soak-worker.js')
    this.onMessage = (msg) => { if (msg.type === 'counts') this.counts = msg.counts }
    this.ready = this.next('ready', SETUP_TIMEOUT_MS)
    this.ready.catch(() => {})
    this.send({ type: 'setup', port, role })
  }
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

async function main (): Promise<number> {
  const seconds = envNumber('SOAK_SECONDS', 600)
  const clients = envNumber('SOAK_CLIENTS', 10_000, { integer: true })
  const rate = envNumber('SOAK_RATE', 5000)
  const warmup = envNumber('SOAK_WARMUP_SECONDS', Math.min(120, seconds / 5))
  const policy = disturbancePolicy()
  const pairs = Math.floor(clients / 2)
  const rerun = rerunWithOpenFiles(clients + FD_HEADROOM)
  if (rerun !== null) return rerun
  const resultsDir = join(ROOT, 'bench', 'results')
  mkdirSync(resultsDir, { recursive: true })
  const probeFile = join(resultsDir, `.soak-probe-${process.pid}.jsonl`)
  writeFileSync(probeFile, '')

  // e.g. SOAK_NODE_ARGS=--max-semi-space-size=32: V8 reads its heap flags only from the command line
  const nodeArgs = envArgs('SOAK_NODE_ARGS')
  const server = await Server.start('broker', {
    nodeArgs: [...nodeArgs, '--import', join(ROOT, 'dist', 'bench', 'soak-probe.js')],
    env: { BENCH_SOAK_FILE: probeFile, BENCH_SOAK_PROBE_MS: String(SAMPLE_MS) }
  })
  const subscribers = new SoakWorker(0, server.port, { kind: 'subscribers', first: 0, count: pairs, rate: 0 })
  const publishers = new SoakWorker(1, server.port, { kind: 'publishers', first: 0, count: pairs, rate })
  try {
    const connectStart = performance.now()
    await Promise.race([Promise.all([subscribers.ready, publishers.ready]), server.died])
    process.stderr.write(`soak: ${pairs * 2} clients connected in ${((performance.now() - connectStart) / 1000).toFixed(1)} s; ${rate} msg/s for ${seconds} s (warm-up ${warmup} s)\n`)

    const disturbance = watchDisturbance()
    const startedAt = Date.now()
    const deliveries: Array<{ t: number, received: number }> = [{ t: startedAt, received: subscribers.counts.received }]
    publishers.send({ type: 'go' })
    while (Date.now() - startedAt < seconds * 1000) {
      await Promise.race([sleep(SAMPLE_MS), server.died])
      for (const w of [subscribers, publishers]) if (w.failure !== null) throw w.failure
      deliveries.push({ t: Date.now(), received: subscribers.counts.received })
      const last = deliveries.at(-1)!
      process.stderr.write(`\rsoak: ${Math.round((last.t - startedAt) / 1000)} s, ${subscribers.counts.received} delivered, ${publishers.counts.acked} acknowledged   `)
    }
    publishers.send({ type: 'stop' })
    const others = disturbance()
    // the last deliveries: until nothing has arrived for DRAIN_QUIET_MS
    const drainStart = Date.now()
    let seen = -1
    let quietSince = Date.now()
    while (Date.now() - quietSince < DRAIN_QUIET_MS && Date.now() - drainStart < DRAIN_MAX_MS) {
      await sleep(500)
      if (subscribers.counts.received !== seen) quietSince = Date.now()
      seen = subscribers.counts.received
    }
    process.stderr.write('\n')

    const lines = readFileSync(probeFile, 'utf8').trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as ProbeLine)
    /** deliveries a second over the runner's sampling window that holds `t` */
    const rateAt = (t: number): number => {
      const j = Math.max(1, Math.min(deliveries.length - 1, deliveries.findIndex((d) => d.t >= t)))
      const [a, b] = [deliveries[j - 1], deliveries[j]]
      return b === undefined || b.t === a.t ? 0 : (b.received - a.received) / ((b.t - a.t) / 1000)
    }
    const samples: Sample[] = lines.filter((l) => l.t >= startedAt && l.t <= startedAt + seconds * 1000 + SAMPLE_MS).map((l) => ({
      seconds: (l.t - startedAt) / 1000,
      rssMiB: l.rss / 2 ** 20,
      heapMiB: (l.heapUsed + l.external) / 2 ** 20,
      loopP99Ms: l.loopP99Ms,
      loopMaxMs: l.loopMaxMs,
      deliveriesPerS: rateAt(l.t)
    }))
    const steady = samples.filter((s) => s.seconds >= warmup)
    const rssSlope = slope(steady.map((s) => s.seconds / 60), steady.map((s) => s.rssMiB))
    const heapSlope = slope(steady.map((s) => s.seconds / 60), steady.map((s) => s.heapMiB))
    const pub = publishers.counts
    const sub = subscribers.counts
    const lost = Math.max(0, pub.acked - sub.received)
    const figures = {
      clients: pairs * 2,
      seconds,
      rate,
      warmupSeconds: warmup,
      sent: pub.sent,
      acked: pub.acked,
      delivered: sub.received,
      lost,
      gaps: sub.gaps,
      duplicates: sub.duplicates,
      lostConnections: pub.lostConnections + sub.lostConnections,
      deliveriesPerS: sub.received / seconds,
      rssMiBAtWarmup: steady[0]?.rssMiB ?? null,
      rssMiBAtEnd: steady.at(-1)?.rssMiB ?? null,
      rssSlopeMiBPerMin: rssSlope,
      heapSlopeMiBPerMin: heapSlope,
      loopP99Ms: { median: percentile(Float64Array.from(steady, (s) => s.loopP99Ms).sort(), 50), worst: Math.max(0, ...steady.map((s) => s.loopP99Ms)) },
      loopMaxMs: Math.max(0, ...steady.map((s) => s.loopMaxMs)),
      otherCores: others.otherCores
    }
    process.stdout.write(`\nsoak: ${figures.clients} clients (${pairs} publishers, ${pairs} subscribers), QoS 1, ${rate} msg/s asked, ${seconds} s, warm-up ${warmup} s\n\n`)
    const table: Array<[string, string]> = [
      ['deliveries/s', figures.deliveriesPerS.toFixed(0)],
      ['sent / acknowledged / delivered', `${pub.sent} / ${pub.acked} / ${sub.received}`],
      ['acknowledged but not delivered', String(lost)],
      ['gaps / duplicates on a topic', `${sub.gaps} / ${sub.duplicates}`],
      ['connections lost', String(figures.lostConnections)],
      ['RSS MiB after warm-up → end', `${figures.rssMiBAtWarmup?.toFixed(1) ?? '-'} → ${figures.rssMiBAtEnd?.toFixed(1) ?? '-'}`],
      ['RSS slope after warm-up, MiB/min', rssSlope.toFixed(3)],
      ['heap + external slope, MiB/min', heapSlope.toFixed(3)],
      ['event-loop delay p99 per 5 s, median / worst ms', `${figures.loopP99Ms.median.toFixed(1)} / ${figures.loopP99Ms.worst.toFixed(1)}`],
      ['event-loop delay max, ms', figures.loopMaxMs.toFixed(1)]
    ]
    const width = Math.max(...table.map(([k]) => k.length))
    for (const [k, v] of table) process.stdout.write(`${k.padEnd(width)}   ${v}\n`)
    process.stdout.write(`machine: ${describeDisturbance(others)}\n`)

    if (others.otherCores > policy.maxOtherCores && !policy.allow) {
      process.stdout.write(`error: soak refused, disturbed: ${describeDisturbance(others)} (BENCH_MAX_OTHER_CPU; BENCH_ALLOW_DISTURBED=1 writes it anyway)\n`)
      return 1
    }
    const stamp = new Date(startedAt).toISOString().replace(/[:.]/g, '-')
    const base = join(resultsDir, `soak-${stamp}`)
    const disturbedNote = others.otherCores > policy.maxOtherCores ? ` (disturbed: ${describeDisturbance(others)})` : ''
    writeFileSync(`${base}.json`, JSON.stringify({ figures, samples }, null, 1) + '\n')
    const written = await plot(base, `soak: ${figures.clients} clients, QoS 1, ${rate} msg/s, ${seconds} s${disturbedNote}`, samples.map((s) => s.seconds), [
      { title: 'memory', unit: 'MiB', series: [{ label: 'RSS', values: samples.map((s) => s.rssMiB) }, { label: 'heap used + external', values: samples.map((s) => s.heapMiB) }] },
      { title: 'event-loop delay per 5 s', unit: 'ms', series: [{ label: 'p99', values: samples.map((s) => s.loopP99Ms) }, { label: 'max', values: samples.map((s) => s.loopMaxMs) }] },
      { title: 'deliveries', unit: 'msg/s', series: [{ label: 'delivered/s', values: samples.map((s) => s.deliveriesPerS) }] }
    ])
    process.stdout.write(`written: ${[`${base}.json`, ...written].map((f) => f.slice(ROOT.length)).join(', ')}\n`)
    process.stdout.write(`SOAK_JSON ${JSON.stringify(figures)}\n`)
    return lost === 0 && sub.gaps === 0 ? 0 : 1
  } finally {
    for (const w of [subscribers, publishers]) w.send({ type: 'close' })
    await server.stop()
    rmSync(probeFile, { force: true })
  }
}

process.on('exit', killAllNow)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130))
try {
  process.exitCode = await main()
} catch (err) {
  process.stderr.write(`\nsoak: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
