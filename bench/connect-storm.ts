// Connect storm (issue 20 #2): where a connect's cost lies between Node's `net`
// alone (bench/net-floor.ts), bare Aedes (unpatched), Mosquitto and the broker
// (default auth chain: no plugin, `mqtt.allow_anonymous`; LevelDB store). Each
// round runs every server in turn on a fresh process: WARMUP connects (closed),
// then CONNECTIONS idle MQTT 3.1.1 clean connects from the client workers (100
// in flight each); figures per server: connack/s, connect p50/p99 (CONNECT
// written → CONNACK read) and the server's CPU (utime + stime, /proc) per
// 1 000 connects, the figure the clients' own limits do not bound.
// The median over rounds is printed; every round is printed too.
// BENCH_STORM_BEFORE=<install> adds `before`, that install's broker, for a before/after in one run.
// Usage: node dist/bench/connect-storm.js [connections=3000] [rounds=3]
// BENCH_CPU_PROF=<dir>: the Node servers write CPU profiles (cpu-parts.js reads them).
import { envChoice } from './env.js'
import { connectIdle, idleWorkerCount, type IdleOutcome } from './idle-split.js'
import { Worker } from './pool.js'
import { cpuMs, cpuProfile, killAllNow, onPath, Server } from './servers.js'
import { percentile } from './stats.js'

const KINDS = ['net', 'bare', 'mosquitto', 'before', 'broker'] as const
type Kind = typeof KINDS[number]
const WARMUP = 500
const SETTLE_MS = 1000
/** BENCH_STORM_BEFORE=<install>: also run that install's bin/broker (built, its own node_modules) as `before` */
const BEFORE = process.env.BENCH_STORM_BEFORE === '' ? undefined : process.env.BENCH_STORM_BEFORE
const TIMEOUT_MS = 300_000

interface Figures { 'connack/s': number, 'p50 ms': number, 'p99 ms': number, 'cpu ms/1000': number }

async function start (kind: Kind, profile: ReturnType<typeof cpuProfile>): Promise<Server> {
  if (kind === 'net') return await Server.startNetFloor(profile?.nodeArgs)
  if (kind === 'before') return await Server.start('broker', { label: 'broker before', nodeArgs: profile?.nodeArgs, root: BEFORE })
  return await Server.start(kind, { nodeArgs: profile?.nodeArgs })
}

const storm = async (workers: Worker[], port: number, connections: number, firstId: number): Promise<IdleOutcome> =>
  await connectIdle(workers, port, connections, firstId, { keepalive: 600 }, TIMEOUT_MS)

async function measure (kind: Kind, connections: number, round: number): Promise<Figures> {
  const profile = kind === 'mosquitto' ? null : cpuProfile(`connect-storm-r${round}`, kind === 'before' ? 'broker-before' : kind)
  const server = await start(kind, profile)
  const warm = [new Worker(0), new Worker(1)]
  const workers = Array.from({ length: idleWorkerCount(connections) }, (_, i) => new Worker(2 + i))
  try {
    await Promise.race([storm(warm, server.port, WARMUP, 1_000_000), server.died])
    await Promise.all(warm.map(async (w) => await w.close()))
    // the server handles the warm-up's closes after the workers are gone: not in the storm's CPU or profile
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    const cpuBefore = cpuMs(server.pid)
    const fromNs = process.hrtime.bigint()
    const run = await Promise.race([storm(workers, server.port, connections, 0), server.died])
    const cpu = cpuMs(server.pid) - cpuBefore
    profile?.writeWindow({ fromNs, toNs: process.hrtime.bigint() })
    if (run.connected === 0) throw new Error(`${server.label}: no connection was accepted`)
    return {
      'connack/s': run.connected / (run.elapsedMs / 1000),
      'p50 ms': percentile(run.latencies, 50),
      'p99 ms': percentile(run.latencies, 99),
      'cpu ms/1000': cpu / run.connected * 1000
    }
  } finally {
    await Promise.all([...warm, ...workers].map(async (w) => await w.close()))
    await server.stop()
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const connections = Number(process.argv[2] ?? 3000)
const rounds = Number(process.argv[3] ?? 3)
const kinds = envChoice<Kind>('BENCH_STORM_SERVERS', KINDS).filter((k) => (k !== 'mosquitto' || onPath('mosquitto')) && (k !== 'before' || BEFORE !== undefined))
const all: Record<string, Figures[]> = Object.fromEntries(kinds.map((k) => [k, []]))
process.once('exit', killAllNow)
for (let round = 1; round <= rounds; round++) {
  for (const kind of kinds) {
    const f = await measure(kind, connections, round)
    all[kind].push(f)
    process.stdout.write(`round ${round} ${kind.padEnd(9)} ${Object.entries(f).map(([k, v]) => `${v.toFixed(k === 'connack/s' ? 0 : 1)} ${k}`).join(', ')}\n`)
  }
}
const names = ['connack/s', 'p50 ms', 'p99 ms', 'cpu ms/1000'] as const
process.stdout.write(`\nmedian of ${rounds} rounds, ${connections} connects each\nserver    ${names.map((n) => n.padStart(12)).join('')}${kinds.includes('mosquitto') ? '   connack/s /mosq   p99 /mosq' : ''}\n`)
for (const kind of kinds) {
  const m = Object.fromEntries(names.map((n) => [n, median(all[kind].map((f) => f[n]))])) as Record<typeof names[number], number>
  const mosq = kinds.includes('mosquitto') ? Object.fromEntries(names.map((n) => [n, median(all.mosquitto.map((f) => f[n]))])) as Record<typeof names[number], number> : null
  process.stdout.write(`${kind.padEnd(10)}${names.map((n) => m[n].toFixed(n === 'connack/s' ? 0 : 1).padStart(12)).join('')}` +
    (mosq === null ? '' : `${(m['connack/s'] / mosq['connack/s']).toFixed(2).padStart(18)}${(m['p99 ms'] / mosq['p99 ms']).toFixed(2).padStart(12)}`) + '\n')
}
process.exit(0)
