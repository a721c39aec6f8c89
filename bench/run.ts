// `npm run bench`: runs each scenario against bare Aedes (unpatched), Mosquitto
// and then the broker, each on a fresh server process with two fresh client
// workers, and prints the figures and the broker's ratios to the other two
// (broker / bare, broker / mosquitto); then the cluster
// section (fan-in on one node, on a Redis cluster, across two nodes), the
// gateways section (the same fan-in through broker_stomp, broker_sn and broker_lwm2m vs over MQTT), the
// web-hook section (the cost of broker_web_hook posting every message) and the
// acl-chain section (allocation of the ACL check with a plugin). See
// bench/README.md.
import { loadavg } from 'node:os'
import { ACL_CHAIN_SECTION, measureAclChain, type AclChainFigures } from './acl-chain.js'
import { describeDisturbance, disturbancePolicy, sampleDisturbance, watchDisturbance, type Disturbance, type DisturbancePolicy } from './disturbance.js'
import { CLUSTER_SECTION, QOS_LEVELS, runClusterSection, SETUPS, type ClusterResults } from './cluster.js'
import { envChoice, envNumber } from './env.js'
import { FD_HEADROOM, openFileLimit, rerunWithOpenFiles } from './fd-limit.js'
import { GATEWAY_RUNS, GATEWAYS_SECTION, runGatewaysSection, type GatewayResults } from './gateways.js'
import { MEMORY_SECTION, runMemorySection, type MemoryResults } from './memory.js'
import { PARTS } from './heap-parts.js'
import { Worker } from './pool.js'
import { scenarios, type Context, type Metric, type Scenario } from './scenarios.js'
import { cpuProfile, killAllNow, onPath, Server, type ServerKind } from './servers.js'
import { HOOK_LOADS, HOOK_SETUPS, runWebHookSection, WEB_HOOK_SECTION, type WebHookResults } from './web-hook.js'

const WORKERS = 2
const LABELS: Record<ServerKind, string> = { bare: 'bare aedes', mosquitto: 'mosquitto', broker: 'broker' }

type Figures = Record<string, number>

/** The scenarios of the table and whether the cluster, gateways, web-hook and acl-chain sections run, as BENCH_ONLY says. */
function selectScenarios (): { selected: Scenario[], cluster: boolean, gateways: boolean, webHook: boolean, aclChain: boolean, memory: boolean } {
  const names = envChoice('BENCH_ONLY', [...scenarios.map((s) => s.name), CLUSTER_SECTION, GATEWAYS_SECTION, WEB_HOOK_SECTION, ACL_CHAIN_SECTION, MEMORY_SECTION])
  return {
    selected: scenarios.filter((s) => names.includes(s.name)),
    cluster: names.includes(CLUSTER_SECTION),
    gateways: names.includes(GATEWAYS_SECTION),
    webHook: names.includes(WEB_HOOK_SECTION),
    aclChain: names.includes(ACL_CHAIN_SECTION),
    memory: names.includes(MEMORY_SECTION)
  }
}

async function runOnce (scenario: Scenario, kind: ServerKind, base: Omit<Context, 'server' | 'workers'>): Promise<Figures> {
  const profile = cpuProfile(scenario.name, kind)
  const server = await Server.start(kind, { nodeArgs: profile?.nodeArgs })
  const workers: Worker[] = []
  const load = { fromNs: 0n, toNs: 0n }
  try {
    const count = scenario.workers?.(base.connections) ?? WORKERS
    for (let i = 0; i < count; i++) workers.push(new Worker(i))
    const figures = await Promise.race([scenario.run({ ...base, server, workers, load }), server.died])
    profile?.writeWindow(load)
    return figures
  } catch (err) {
    // Clients notice a dead server before the runner sees it exit: blame the server, not them.
    await new Promise((resolve) => setTimeout(resolve, 200))
    throw server.deathError ?? err
  } finally {
    await Promise.all(workers.map(async (w) => await w.close()))
    await server.stop()
  }
}

class Disturbed extends Error {
  constructor (readonly disturbance: Disturbance) {
    super(`refused, disturbed: ${describeDisturbance(disturbance)} (BENCH_MAX_OTHER_CPU)`)
  }
}

/** runOnce, again while other processes took more CPU than the policy allows; a run disturbed every time is refused. */
async function runUndisturbed (scenario: Scenario, kind: ServerKind, base: Omit<Context, 'server' | 'workers'>, policy: DisturbancePolicy): Promise<Figures> {
  for (let attempt = 0; ; attempt++) {
    const stop = watchDisturbance()
    const figures = await runOnce(scenario, kind, base)
    const disturbance = stop()
    if (disturbance.otherCores <= policy.maxOtherCores) return figures
    if (attempt < policy.retries) {
      process.stderr.write(`disturbed (${describeDisturbance(disturbance)}), again ... `)
      continue
    }
    if (!policy.allow) throw new Disturbed(disturbance)
    base.note(`${scenario.name} on ${LABELS[kind]} reported although disturbed: ${describeDisturbance(disturbance)}`)
    return figures
  }
}

/** Runs a section; when other processes disturbed it, its figures are refused (null) unless the policy allows them. */
async function undisturbedSection<T> (name: string, policy: DisturbancePolicy, notes: string[], errors: string[], run: () => Promise<T>): Promise<T | null> {
  const stop = watchDisturbance()
  const value = await run()
  const disturbance = stop()
  if (disturbance.otherCores <= policy.maxOtherCores) return value
  if (policy.allow) {
    notes.push(`${name} reported although disturbed: ${describeDisturbance(disturbance)}`)
    return value
  }
  errors.push(`${name}: ${new Disturbed(disturbance).message}`)
  return null
}

function format (value: number | undefined, decimals: number): string {
  return value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(decimals)
}

interface Row { scenario: string, metric: Metric, bare?: number, mosquitto?: number, broker?: number, ratio?: number, ratioMosquitto?: number }

const ratioOf = (value: number | undefined, base: number | undefined): number | undefined =>
  value !== undefined && base !== undefined && base !== 0 ? value / base : undefined

/** Writes rows as aligned columns: the first `textColumns` left-aligned, the figures right-aligned. */
function writeColumns (lines: string[][], textColumns: number): void {
  const widths = lines[0].map((_, c) => Math.max(...lines.map((l) => l[c].length)))
  for (const l of lines) {
    process.stdout.write(l.map((cell, c) => c < textColumns ? cell.padEnd(widths[c]) : cell.padStart(widths[c])).join('   ') + '\n')
  }
}

function printTable (rows: Row[]): void {
  const lines = [['scenario', 'metric', 'bare aedes', 'mosquitto', 'broker', '/bare', '/mosquitto']]
  for (const r of rows) {
    const d = r.metric.decimals
    lines.push([r.scenario, r.metric.name, format(r.bare, d), format(r.mosquitto, d), format(r.broker, d), format(r.ratio, 2), format(r.ratioMosquitto, 2)])
  }
  writeColumns(lines, 2)
  process.stdout.write('\n/bare = broker / bare aedes (unpatched), /mosquitto = broker / mosquitto. msg/s, deliveries/s, connack/s: above 1 = broker faster. ' +
    'ms, s and RSS: above 1 = broker worse (slower / more memory).\n')
}

function printCluster (seconds: number, cluster: ClusterResults): void {
  process.stdout.write(`\n${CLUSTER_SECTION}: 10 publishers -> 1 subscriber on bench/in/# ((4): 3 nodes x (4 publishers + 1 subscriber)), ${seconds} s per setup\n\n`)
  const lines = [['QoS', 'setup', 'msg/s', 'ratio', 'sent/s', 'acked/s', 'stall ms', 'warm-up stall', 'RSS MiB']]
  for (const qos of QOS_LEVELS) {
    const runs = cluster.runs[`qos${qos}`]
    const single = runs.single?.['msg/s']
    for (const { key, title } of SETUPS) {
      const run = runs[key]
      const ratio = run === null || key === 'mesh' || single === undefined || single === 0 ? undefined : run['msg/s'] / single
      lines.push([String(qos), title, format(run?.['msg/s'], 0), format(ratio, 2), format(run?.['sent/s'], 0), format(run?.['acked/s'] ?? undefined, 0), format(run?.['stall ms'], 0), format(run?.['warm-up stall ms'], 0), format(run?.['RSS MiB'], 0)])
    }
  }
  writeColumns(lines, 2)
  process.stdout.write('\nratio = msg/s / msg/s of (1) at the same QoS; below 1 = slower than one node on its embedded store. ' +
    '(2): one node with its store and messages on Redis; (3): subscriber on node a, publishers on node b, every message through Redis pub/sub; ' +
    '(4): msg/s = deliveries/s to the three subscribers together. stall ms: the longest a node took to answer a PINGREQ in the measured window; warm-up stall: the same before it (connecting, settling, the cold first second of the load); RSS: the largest node. ' +
    'sent/s well above msg/s: deliveries stalled and the publishers\' window was reset (see bench/README.md).\n')
}

function printGateways (seconds: number, gateways: GatewayResults): void {
  process.stdout.write(`\n${GATEWAYS_SECTION}: 10 publishers -> 1 MQTT subscriber on bench/in/#, one broker node with the gateway plugins, ${seconds} s per run\n\n`)
  const lines = [['publishers', 'msg/s', 'ratio']]
  const mqtt = gateways['msg/s'].mqtt
  for (const { key, title } of GATEWAY_RUNS) {
    const value = gateways['msg/s'][key] ?? undefined
    lines.push([title, format(value, 0), format(value === undefined || mqtt === null || mqtt === 0 ? undefined : value / mqtt, 2)])
  }
  writeColumns(lines, 1)
  process.stdout.write('\nratio = msg/s / msg/s of the MQTT publishers; below 1 = the gateway is slower than the same load over MQTT ' +
    '(a STOMP SEND is parsed, then published at QoS 1 on an in-process MQTT link; an MQTT-SN PUBLISH is one UDP datagram, published at QoS 0 on it; ' +
    'a CoAP NON PUT (No-Response: 2) is parsed, deduplicated and published at QoS 0 on its link; ' +
    'an LwM2M notification is one UDP datagram, parsed as CoAP and its TLV decoded, then published as JSON at QoS 1; see bench/README.md).\n')
}

function printWebHook (seconds: number, rounds: number, results: WebHookResults): void {
  process.stdout.write(`\n${WEB_HOOK_SECTION}: broker_web_hook posting every message.publish, ${seconds} s per run, each on a fresh node, the median of ${rounds} rounds\n\n`)
  const lines = [['load', 'setup', 'msg/s', 'ratio', 'cpu us/msg', 'loop us/msg', 'clients us/msg', 'posted/s', 'endpoint us/post', 'endpoint us/msg', 'dropped', 'dropped/msg', 'failed']]
  for (const load of HOOK_LOADS) {
    for (const { key, title } of HOOK_SETUPS) {
      const run = results[load.key][key]
      const ratio = key === 'off' ? (run === null ? undefined : 1) : results[load.key].ratio[key] ?? undefined
      lines.push([load.title, title, format(run?.['msg/s'], 0), format(ratio, 2), format(run?.['cpu us/msg'], 1), format(run?.['loop us/msg'], 1), format(run?.['clients us/msg'], 1), format(run?.['posted/s'], 0), format(run?.['endpoint us/post'], 1), format(run?.['endpoint us/msg'], 1), format(run?.dropped, 0), format(run?.['dropped/msg'], 2), format(run?.failed, 0)])
    }
  }
  writeColumns(lines, 2)
  for (const load of HOOK_LOADS) {
    const paired = results[load.key].paired
    const spread = (['live', 'batch', 'down'] as const).filter((key) => paired[key].length > 0)
      .map((key) => `${key} ${[...paired[key]].sort((a, b) => a - b).map((r) => r.toFixed(2)).join(' ')}`)
    if (spread.length > 0) process.stdout.write(`${load.title}: each round's ratio to that round's run without the plugin, sorted: ${spread.join('; ')}\n`)
  }
  process.stdout.write('\nratio = msg/s / msg/s of the same load without the plugin (1 = no cost; the issue\'s target: above 0.90 with a live endpoint, 1 when it is down). ' +
    'cpu us/msg: the node\'s CPU (all threads) per message; loop us/msg: its main thread\'s, the event loop serving MQTT; clients us/msg: the client workers\'. Every figure is read over the measured window only. ' +
    'posted/s: POSTs the endpoint answered; endpoint us/post, us/msg: the endpoint process\'s CPU per POST and per message (its share of the drop: compare with cpu us/msg); dropped: events the full queue refused (webhook/dropped), dropped/msg: of them, those in the measured window per message (~1: the queue stayed full). See bench/README.md.\n')
}

function printAclChain (figures: AclChainFigures): void {
  process.stdout.write(`\n${ACL_CHAIN_SECTION}: the broker's ACL check of one PUBLISH, in-process, one plugin handler answering synchronously\n\n`)
  const lines = [['case', 'bytes/op', 'ops/s'],
    ['acl chain, sync plugin, cache miss', format(figures.miss.bytes, 0), format(figures.miss.rate, 0)],
    ['acl chain, sync plugin, cache hit', format(figures.hit.bytes, 0), format(figures.hit.rate, 0)]]
  writeColumns(lines, 1)
  process.stdout.write('\nbytes/op: heap allocated per check (no collection in the measured window); see bench/README.md.\n')
}

function printMemory (connections: number, results: MemoryResults): void {
  process.stdout.write(`\n${MEMORY_SECTION}: ${connections} idle connections, keepalive 60, bytes per connection (after two full collections)\n\n`)
  const lines = [['variant', 'RSS bare', 'RSS mosquitto', 'RSS broker', 'heap bare', 'heap broker', '/bare', '/mosquitto']]
  for (const [variant, runs] of Object.entries(results)) {
    const broker = runs.broker?.rssPerConn
    lines.push([variant, format(runs.bare?.rssPerConn, 0), format(runs.mosquitto?.rssPerConn, 0), format(broker, 0),
      format(runs.bare?.heapPerConn ?? undefined, 0), format(runs.broker?.heapPerConn ?? undefined, 0),
      format(ratioOf(broker, runs.bare?.rssPerConn), 2), format(ratioOf(broker, runs.mosquitto?.rssPerConn), 2)])
  }
  writeColumns(lines, 1)
  for (const [variant, runs] of Object.entries(results)) {
    if (runs.broker?.parts == null && runs.bare?.parts == null) continue
    process.stdout.write(`\n${variant}: heap snapshot growth by part, bytes per connection\n`)
    const parts = [['part', 'bare aedes', 'broker']]
    for (const part of PARTS) parts.push([part, format(runs.bare?.parts?.[part], 0), format(runs.broker?.parts?.[part], 0)])
    const native = (run: typeof runs.bare): number | undefined => run?.heapPerConn == null ? undefined : run.rssPerConn - run.heapPerConn
    parts.push(['native (RSS - heap)', format(native(runs.bare), 0), format(native(runs.broker), 0)])
    writeColumns(parts, 1)
    if (process.env.BENCH_MEMORY_DETAIL === '1') {
      for (const [key, bytes] of runs.broker?.largest ?? []) if (bytes >= 16) process.stdout.write(`  broker: ${key} ${bytes.toFixed(0)}\n`)
    }
  }
  process.stdout.write('\nRSS: resident memory growth / connections; heap: V8 heap used + external growth / connections; parts: bench/heap-parts.ts. ' +
    '/bare and /mosquitto: broker RSS per connection / theirs (above 1 = broker uses more).\n')
}

async function main (): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 5)
  let connections = envNumber('BENCH_CONNECTIONS', 2000, { integer: true })
  const rerun = rerunWithOpenFiles(connections + FD_HEADROOM)
  if (rerun !== null) return rerun
  const { selected, cluster: runCluster, gateways: runGateways, webHook: runWebHook, aclChain: runAclChain, memory: runMemory } = selectScenarios()
  const notes: string[] = []
  // The server holds every idle connection: keep headroom for its own files.
  const fdCap = openFileLimit() - FD_HEADROOM
  if (connections > fdCap) {
    notes.push(`BENCH_CONNECTIONS lowered from ${connections} to ${fdCap}: ulimit -n is ${fdCap + FD_HEADROOM} and prlimit could not raise it`)
    connections = fdCap
  }
  const base = { seconds, connections, note: (text: string) => notes.push(text) }
  const policy = disturbancePolicy()
  const before = await sampleDisturbance(1000)
  const kinds: ServerKind[] = ['bare', 'mosquitto', 'broker']
  if (!onPath('mosquitto')) {
    notes.push('mosquitto is not on PATH: no mosquitto column')
    kinds.splice(1, 1)
  }

  const rows: Row[] = []
  const errors: string[] = []
  for (const scenario of selected) {
    const figures: Partial<Record<ServerKind, Figures>> = {}
    for (const kind of kinds) {
      const skipped = scenario.skip?.[kind]
      if (skipped !== undefined) {
        notes.push(`${scenario.name} does not run on ${LABELS[kind]}: ${skipped}`)
        continue
      }
      process.stderr.write(`${scenario.name} on ${LABELS[kind]} ... `)
      try {
        figures[kind] = await runUndisturbed(scenario, kind, base, policy)
        process.stderr.write(scenario.metrics.map((m) => `${format(figures[kind]?.[m.name], m.decimals)} ${m.name}`).join(', ') + '\n')
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err)
        process.stderr.write(`failed: ${message}\n`)
        errors.push(`${scenario.name} on ${kind}: ${message}`)
      }
    }
    for (const metric of scenario.metrics) {
      const bare = figures.bare?.[metric.name]
      const mosquitto = figures.mosquitto?.[metric.name]
      const broker = figures.broker?.[metric.name]
      rows.push({ scenario: scenario.name, metric, bare, mosquitto, broker, ratio: ratioOf(broker, bare), ratioMosquitto: ratioOf(broker, mosquitto) })
    }
  }

  const section = async <T>(name: string, run: () => Promise<T>): Promise<T | null> => await undisturbedSection(name, policy, notes, errors, run)
  const cluster = runCluster ? await section(CLUSTER_SECTION, async () => await runClusterSection(seconds, base.note, errors)) : null
  const gateways = runGateways ? await section(GATEWAYS_SECTION, async () => await runGatewaysSection(seconds, errors)) : null
  const hookRounds = envNumber('BENCH_HOOK_ROUNDS', 3, { integer: true })
  const webHook = runWebHook ? await section(WEB_HOOK_SECTION, async () => await runWebHookSection(seconds, hookRounds, errors)) : null
  let aclChain: AclChainFigures | null = null
  if (runAclChain) {
    process.stderr.write(`${ACL_CHAIN_SECTION} ... `)
    try {
      aclChain = await measureAclChain()
      process.stderr.write(`cache miss ${format(aclChain.miss.bytes, 0)} bytes/op, ${format(aclChain.miss.rate, 0)} ops/s\n`)
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      process.stderr.write(`failed: ${message}\n`)
      errors.push(`${ACL_CHAIN_SECTION}: ${message}`)
    }
  }

  const memory = runMemory ? await section(MEMORY_SECTION, async () => await runMemorySection(connections, errors)) : null

  process.stdout.write(`\nbenchmark: ${seconds} s per scenario and server, ${connections} idle connections, ${WORKERS} client workers\n`)
  process.stdout.write(`machine: ${policy.cores} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; before the run ${describeDisturbance(before)}; ` +
    `a run during which they used more than ${policy.maxOtherCores} cores is retried ${policy.retries} time(s), then refused${policy.allow ? ' (BENCH_ALLOW_DISTURBED=1: reported with a note)' : ''}\n`)
  if (rows.length > 0) {
    process.stdout.write('\n')
    printTable(rows)
  }
  if (cluster !== null && cluster.skipped === null) printCluster(seconds, cluster)
  if (gateways !== null) printGateways(seconds, gateways)
  if (webHook !== null) printWebHook(seconds, hookRounds, webHook)
  if (aclChain !== null) printAclChain(aclChain)
  if (memory !== null) printMemory(connections, memory)
  for (const n of notes) process.stdout.write(`note: ${n}\n`)
  for (const e of errors) process.stdout.write(`error: ${e}\n`)

  type Figure = Record<'bare' | 'mosquitto' | 'broker' | 'ratio' | 'ratioMosquitto', number | null> & { lowerIsBetter: boolean }
  const results: Record<string, Record<string, Figure>> = {}
  const orNull = (v: number | undefined): number | null => v === undefined || !Number.isFinite(v) ? null : v
  for (const r of rows) {
    results[r.scenario] ??= {}
    results[r.scenario][r.metric.name] = {
      bare: orNull(r.bare), mosquitto: orNull(r.mosquitto), broker: orNull(r.broker), ratio: orNull(r.ratio), ratioMosquitto: orNull(r.ratioMosquitto), lowerIsBetter: r.metric.lowerIsBetter
    }
  }
  process.stdout.write(`BENCH_JSON ${JSON.stringify({ seconds, connections, machine: { cores: policy.cores, otherCoresBefore: before.otherCores, maxOtherCores: policy.maxOtherCores }, results, cluster, gateways, webHook, aclChain, memory, notes, errors })}\n`)
  return errors.length === 0 ? 0 : 1
}

// Whatever happens, no server or worker may outlive the runner.
process.on('exit', killAllNow)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping\n`)
    process.exit(130)
  })
}
process.on('uncaughtException', (err) => {
  process.stderr.write(`bench: ${err.stack ?? err.message}\n`)
  process.exit(1)
})

try {
  process.exitCode = await main()
} catch (err) {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
