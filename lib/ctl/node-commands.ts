// The node's own `broker_ctl` commands (EMQ X 3.x emqx_ctl set, outputs as
// EMQ X printed them). Each reads or changes the node only through its
// operations (lib/service/operations.ts) and the tracer, and writes its text
// from their facts; `--json` shows the facts. Plugins add theirs through `ctx.commands`.
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { isServiceError, type BannedKind, type ConnectionFacts, type DrainStatus, type NodeOperations, type SessionFacts } from '../service/operations.js'
import { parseDuration } from '../config/types.js'
import { maxFds, openFds } from '../sys/node-info.js'
import { specTime } from '../timestamps.js'
import { TraceError, type TraceKind, type Tracer } from '../trace/tracer.js'
import { CtlError, keyValues, NO_PROGRESS, output, usageError, type CtlCommand, type CtlOutput, type CtlProgress } from './command.js'
import { onHolder, rowsOfAll, type ListMethod } from '../cluster/cluster.js'
import { NODE_USAGE, type NodeCommandName } from './usage.js'

export interface NodeCommandParts { service: NodeOperations, tracer: Tracer }

const NOT_FOUND = 'Not Found.'
const BANNED_KINDS = ['client_id', 'username', 'ip_address'] as const

/** `Name(first, k=v, …)` as EMQ X prints records. */
function record (name: string, first: string, fields: Readonly<Record<string, unknown>>): string {
  return `${name}(${[first, ...Object.entries(fields).map(([k, v]) => `${k}=${String(v)}`)].join(', ')})`
}

const lines = (items: string[]): string => items.join('\n')

/** A string nobody knows is written `undefined`, as EMQ X wrote it. */
const text = (value: string | undefined): string => value === undefined || value === '' ? 'undefined' : value

/** ms since the epoch as `YYYY-MM-DD HH:MM:SS`; `undefined` when not known. */
const time = (ms: number | undefined): string => ms === undefined ? 'undefined' : specTime(ms)

/** A refusal of an operation as this command's failure (a bad value is a bad argument). */
function refused (err: unknown): never {
  if (!isServiceError(err)) throw err
  throw new CtlError(err.message, err.kind === 'bad_value' || err.kind === 'bad_topic' ? 2 : 1)
}

async function attempt<T> (operation: () => T | Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (err) {
    return refused(err)
  }
}

function qosOf (text: string): 0 | 1 | 2 {
  if (text !== '0' && text !== '1' && text !== '2') throw usageError('QoS should be 0, 1, 2')
  return Number(text) as 0 | 1 | 2
}

type Handler = (args: string[], parts: NodeCommandParts, progress: CtlProgress) => CtlOutput | Promise<CtlOutput>


/** The rows of a listing from every node of the cluster (this one alone on one node). */
async function everywhere<M extends ListMethod> ({ service }: NodeCommandParts, method: M, ...args: string[]): Promise<Array<Awaited<ReturnType<NodeOperations[M]>>[number]>> {
  return await attempt(async () => await rowsOfAll<Awaited<ReturnType<NodeOperations[M]>>[number]>(service.cluster, method, ...args))
}

/** Picks the handler for the sub-command and its number of arguments; anything else is a usage error. */
function dispatch (table: Record<string, { arity: number | [number, number], run: Handler }>): Handler {
  return (args, parts, progress) => {
    const [sub = '', ...rest] = args
    const entry = Object.hasOwn(table, sub) ? table[sub] : undefined
    const [min, max] = typeof entry?.arity === 'number' ? [entry.arity, entry.arity] : entry?.arity ?? [0, 0]
    if (entry === undefined || rest.length < min || rest.length > max) throw usageError(`bad arguments: ${args.join(' ') || '(none)'}`)
    return entry.run(rest, parts, progress)
  }
}

function connectionLine (c: ConnectionFacts): string {
  return record('Connection', c.client_id, { clean_start: c.clean_start, username: text(c.username), peername: `${text(c.ipaddress)}:${c.port ?? 0}`, connected_at: time(c.connected_at) })
}

function sessionLine (s: SessionFacts): string {
  return record('Session', s.client_id, {
    clean_start: s.clean_start,
    expiry_interval: s.expiry_interval,
    subscriptions_count: s.subscriptions_count,
    max_inflight: s.max_inflight,
    inflight: s.inflight_len,
    mqueue_len: s.mqueue_len,
    mqueue_dropped: s.mqueue_dropped,
    awaiting_rel: s.awaiting_rel_len,
    deliver_msg: s.deliver_msg,
    enqueue_msg: s.enqueue_msg,
    created_at: time(s.created_at)
  })
}

const routeLine = (r: { topic: string, node: string }): string => `${r.topic} -> ${r.node}`
const subscriptionLine = (s: { client_id: string, topic: string, qos: number }): string => `${s.client_id} -> ${s.topic} qos=${s.qos}`

/** A lookup's answer: its lines, or `Not Found.` and a failure when there is nothing. */
function found<T> (rows: T[], line: (row: T) => string): CtlOutput {
  if (rows.length === 0) throw new CtlError(NOT_FOUND)
  return output(lines(rows.map(line)), rows)
}

async function vmSection (name: string, { service }: NodeCommandParts): Promise<Record<string, number | string>> {
  switch (name) {
    case 'load': {
      const [l1, l5, l15] = loadavg().map((l) => l.toFixed(2))
      return { 'cpu/load1': l1, 'cpu/load5': l5, 'cpu/load15': l15 }
    }
    case 'memory': {
      const m = process.memoryUsage()
      return { 'memory/rss': m.rss, 'memory/heap_total': m.heapTotal, 'memory/heap_used': m.heapUsed, 'memory/external': m.external, 'memory/array_buffers': m.arrayBuffers }
    }
    case 'process':
      return { 'process/pid': process.pid, 'process/uptime_seconds': Math.floor(process.uptime()), 'process/runtime': `Node.js ${process.version}` }
    case 'io':
      return { 'io/max_fds': await maxFds(), 'io/active_fds': await openFds() }
    default:
      return { 'ports/count': service.connections().length }
  }
}

const VM_SECTIONS = ['load', 'memory', 'process', 'io', 'ports']

async function vm (name: string, parts: NodeCommandParts): Promise<CtlOutput> {
  const sections = name === 'all' ? VM_SECTIONS : [name]
  const data: Record<string, number | string> = {}
  for (const section of sections) Object.assign(data, await vmSection(section, parts))
  return output(keyValues(data), data)
}

async function trace (type: TraceKind, [name, target]: string[], { tracer }: NodeCommandParts): Promise<CtlOutput> {
  const who = type === 'client' ? 'client_id' : 'topic'
  try {
    if (target === 'off') {
      if (!await tracer.stop(type, name)) throw new CtlError(`[error] stop tracing ${who} ${name}: not_found`)
      return output(`stop tracing ${who} ${name} successfully`, { type, name, active: false })
    }
    // the file is the operator's path, resolved where broker_ctl ran (the client sends it absolute)
    const file = resolve(target)
    await tracer.start(type, name, file)
    return output(`trace ${who} ${name} successfully`, { type, name, destination: file, active: true })
  } catch (err) {
    if (err instanceof TraceError) throw new CtlError(`[error] trace ${who} ${name}: ${err.message}`)
    throw err
  }
}

const HANDLERS: Record<NodeCommandName, Handler> = {
  status: dispatch({
    '': {
      arity: 0,
      run: (_args, { service }) => {
        const info = service.brokerInfo()
        return output(`Node '${service.name}' is started\nbroker ${info.version} is running`, { node: service.name, status: 'started', version: info.version })
      }
    }
  }),
  broker: dispatch({
    '': {
      arity: 0,
      run: (_args, { service }) => {
        const { sysdescr, version, uptime, datetime } = service.brokerInfo()
        const data = { sysdescr, version, uptime, datetime }
        return output(keyValues(data), data)
      }
    },
    stats: { arity: 0, run: (_args, { service }) => { const data = service.stats(); return output(keyValues(data), data) } },
    metrics: {
      arity: 0,
      run: (_args, { service }) => {
        const metrics = service.metrics() as unknown as Record<string, number>
        const data = Object.fromEntries(Object.keys(metrics).sort().map((k) => [k, metrics[k]]))
        return output(keyValues(data), data)
      }
    }
  }),
  cluster: dispatch({
    status: {
      arity: 0,
      run: async (_args, { service }) => {
        const data = { running_nodes: await service.cluster.nodes(), stopped_nodes: service.cluster.stopped() }
        return output(`Cluster status: running_nodes=[${data.running_nodes.join(', ')}], stopped_nodes=[${data.stopped_nodes.join(', ')}]`, data)
      }
    }
  }),
  node: (args, parts, progress) => {
    const [sub, ...rest] = args
    if (sub === 'drain' && rest.length === 1 && rest[0] === 'status') return drainStatus(parts.service.drainStatus())
    // `node drain 50`; `--rate 50` too, when it reaches the node (`broker_ctl node drain -- --rate 50`)
    if (sub === 'drain' && rest.length <= 1 && rest[0] !== 'status') return drain(rest[0], parts, progress)
    if (sub === 'drain' && rest.length === 2 && rest[0] === '--rate') return drain(rest[1], parts, progress)
    if (sub === 'health' && rest.length === 0) {
      const health = parts.service.health()
      const text = health.reasons.length === 0 ? `Node '${parts.service.name}' is ${health.status}` : `Node '${parts.service.name}' is ${health.status}, not serving: ${health.reasons.join(', ')}`
      return output(text, { node: parts.service.name, ...health })
    }
    throw usageError(`bad arguments: ${args.join(' ') || '(none)'}`)
  },
  acl: dispatch({
    reload: {
      arity: 0,
      run: async (_args, { service }) => {
        const answers = await attempt(async () => await service.cluster.all('reloadAcl'))
        const rules = answers.find((a) => a.node === service.name)?.value ?? answers[0].value
        return output(`ok (${rules} rules)`, { rules, nodes: answers.map((a) => a.node) })
      }
    }
  }),
  clients: dispatch({
    list: { arity: 0, run: async (_args, parts) => { const rows = await everywhere(parts, 'connections'); return output(lines(rows.map(connectionLine)), rows) } },
    show: { arity: 1, run: async ([id], parts) => found(await everywhere(parts, 'connection', id), connectionLine) },
    kick: {
      arity: 1,
      run: async ([id], { service }) => {
        if (!await attempt(async () => await onHolder(service.cluster, 'kick', id))) throw new CtlError(NOT_FOUND)
        return output('ok', { client_id: id, kicked: true })
      }
    }
  }),
  sessions: dispatch({
    list: { arity: 0, run: async (_args, parts) => { const rows = await everywhere(parts, 'sessions'); return output(lines(rows.map(sessionLine)), rows) } },
    show: { arity: 1, run: async ([id], parts) => found(await everywhere(parts, 'session', id), sessionLine) }
  }),
  routes: dispatch({
    list: { arity: 0, run: async (_args, parts) => { const rows = await everywhere(parts, 'routes'); return output(lines(rows.map(routeLine)), rows) } },
    show: { arity: 1, run: async ([topic], parts) => found(await everywhere(parts, 'route', topic), routeLine) }
  }),
  subscriptions: dispatch({
    list: { arity: 0, run: async (_args, parts) => { const rows = await everywhere(parts, 'subscriptions'); return output(lines(rows.map(subscriptionLine)), rows) } },
    show: { arity: 1, run: async ([id], parts) => found(await everywhere(parts, 'clientSubscriptions', id), subscriptionLine) },
    add: {
      arity: 3,
      run: async ([id, topic, qos], { service }) => {
        const level = qosOf(qos)
        if (!await attempt(async () => await onHolder(service.cluster, 'subscribe', id, topic, level))) throw new CtlError(`client ${id} is not online`)
        return output('ok', { client_id: id, topic, qos: level })
      }
    },
    del: {
      arity: 2,
      run: async ([id, topic], { service }) => {
        if (!await attempt(async () => await onHolder(service.cluster, 'unsubscribe', id, topic))) throw new CtlError(`client ${id} is not online`)
        return output('ok', { client_id: id, topic })
      }
    }
  }),
  plugins: dispatch({
    list: {
      arity: 0,
      run: async (_args, { service }) => {
        const rows = await service.plugins()
        return output(lines(rows.map((p) => record('Plugin', p.name, { version: p.version, description: p.description, active: p.active }))), rows)
      }
    },
    load: { arity: 1, run: async ([name], parts, progress) => await pluginOperation('load', name, async () => await parts.service.loadPlugin(name), progress) },
    unload: { arity: 1, run: async ([name], parts, progress) => await pluginOperation('unload', name, async () => await parts.service.unloadPlugin(name), progress) },
    reload: { arity: 1, run: async ([name], parts, progress) => await pluginOperation('reload', name, async () => await parts.service.reloadPlugin(name), progress) }
  }),
  listeners: dispatch({
    '': {
      arity: 0,
      run: (_args, { service }) => {
        const rows = service.listeners()
        const text = rows.map((l) => `listener on ${l.protocol}:${l.listen_on}\n` + keyValues({
          acceptors: l.acceptors, max_conns: l.max_conns, current_conn: l.current_conns, shutdown_count: JSON.stringify(l.shutdown_count)
        }, '  ')).join('\n')
        return output(text, rows)
      }
    }
  }),
  vm: (args, parts) => {
    const [name = 'all', ...rest] = args
    if (rest.length > 0 || (name !== 'all' && !VM_SECTIONS.includes(name))) throw usageError(`bad arguments: ${args.join(' ')}`)
    return vm(name, parts)
  },
  log: dispatch({
    'set-level': {
      arity: 1,
      // every log output, as EMQ X's `log set-level` set every handler
      run: async ([level], { service }) => {
        for (const item of service.configs().filter((c) => c.key === 'log.console.level' || c.key === 'log.file.level')) {
          try {
            await service.setConfig(item.app, item.key, level, 'broker_ctl')
          } catch (err) {
            throw usageError(`[error] bad log level ${level}: ${(err as Error).message}`)
          }
        }
        return output(level, { level })
      }
    },
    'primary-level': {
      arity: 0,
      run: (_args, { service }) => {
        const level = service.configs().find((c) => c.key === 'log.console.level')!.value
        return output(level, { level })
      }
    }
  }),
  banned: dispatch({
    list: {
      arity: 0,
      run: (_args, { service }) => {
        const rows = service.banned()
        return output(lines(rows.map((b) => record('Banned', b.who, { as: b.as, reason: b.reason, by: b.by, until: specTime(b.until * 1000) }))), rows)
      }
    },
    add: {
      arity: [2, 4],
      run: async ([as, who, duration, reason], { service }) => {
        const kind = bannedKind(as)
        let seconds: number | undefined
        if (duration !== undefined) {
          try {
            seconds = Math.ceil(parseDuration(duration) / 1000)
          } catch (err) {
            throw usageError(`bad duration ${duration}: ${(err as Error).message}`)
          }
        }
        const until = seconds === undefined ? undefined : Math.floor(Date.now() / 1000) + seconds
        const answers = await attempt(async () => await service.cluster.all('ban', { who, as: kind, reason, by: 'broker_ctl', until }))
        return output('ok', answers[0].value)
      }
    },
    del: {
      arity: 2,
      run: async ([as, who], { service }) => {
        const answers = await attempt(async () => await service.cluster.all('unban', bannedKind(as), who))
        if (!answers.some((a) => a.value)) throw new CtlError(NOT_FOUND)
        return output('ok', { as, who })
      }
    }
  }),
  trace: (args, parts) => {
    const [sub, ...rest] = args
    if (sub === 'list' && rest.length === 0) {
      const rows = parts.tracer.list()
      return output(lines(rows.map((t) => `Trace(${t.type === 'client' ? 'client_id' : 'topic'}=${t.name}, level=all, destination=${JSON.stringify(t.destination)})`)), rows)
    }
    if ((sub === 'client' || sub === 'topic') && rest.length === 2) return trace(sub, rest, parts)
    throw usageError(`bad arguments: ${args.join(' ') || '(none)'}`)
  }
}

async function drain (rateText: string | undefined, { service }: NodeCommandParts, progress: CtlProgress): Promise<CtlOutput> {
  let rate: number | undefined
  if (rateText !== undefined) {
    rate = Number(rateText)
    if (!/^\d+$/.test(rateText) || rate < 1) throw usageError(`bad rate ${rateText}: clients per second, at least 1`)
  }
  const status = await attempt(async () => await service.drain(rate))
  if (!progress.wanted) return output(`Node '${service.name}' is draining: listeners closed, ${status.remaining} clients to disconnect at ${status.rate}/s`, status)
  const end = await followDrain(service, progress)
  const text = end.state === 'drained'
    ? `Node '${service.name}' is drained: ${end.disconnected} clients disconnected`
    : `Node '${service.name}' is draining: ${end.remaining} clients left to disconnect at ${end.rate}/s`
  return output(text, end)
}

/** How often a followed drain tells how far it is. */
const DRAIN_REPORT_MS = 500

/** A person watches: the drain is followed, a progress line each half second, until the last client is gone or broker_ctl goes away (the drain goes on). */
async function followDrain (service: NodeOperations, progress: CtlProgress): Promise<DrainStatus> {
  let status = service.drainStatus()
  let told = ''
  while (status.state === 'draining' && !progress.signal.aborted) {
    const line = `draining: ${status.disconnected} of ${status.total} clients disconnected, ${status.remaining} left (${status.rate}/s)`
    if (line !== told) progress.report(told = line)
    await delay(DRAIN_REPORT_MS, undefined, { signal: progress.signal }).catch(() => {})
    status = service.drainStatus()
  }
  return status
}

function drainStatus (status: DrainStatus): CtlOutput {
  const text = status.state === 'idle'
    ? 'Node is not draining'
    : keyValues({ state: status.state, rate: `${status.rate}/s`, total: status.total, disconnected: status.disconnected, remaining: status.remaining, started_at: status.started_at, finished_at: status.finished_at ?? '' })
  return output(text, status)
}

function bannedKind (as: string): BannedKind {
  if (!(BANNED_KINDS as readonly string[]).includes(as)) throw usageError(`<As> must be one of ${BANNED_KINDS.join(', ')}`)
  return as as BannedKind
}

async function pluginOperation (verb: 'load' | 'unload' | 'reload', name: string, operation: () => Promise<void>, progress: CtlProgress): Promise<CtlOutput> {
  // a plugin's load may wait for its servers (a database, a port): say what the wait is for
  progress.report(`${verb}ing plugin ${name}`)
  try {
    await operation()
  } catch (err) {
    const reason = isServiceError(err) && err.kind !== 'failed' ? err.kind : (err as Error).message
    throw new CtlError(`${verb} plugin error: ${reason}`)
  }
  return output(`Plugin ${name} ${verb}ed successfully.`, { plugin: name, operation: verb })
}

/** The node's commands, bound to its parts. */
export function nodeCommands (parts: NodeCommandParts): CtlCommand[] {
  return (Object.keys(NODE_USAGE) as NodeCommandName[]).map((name) => ({
    name,
    usage: NODE_USAGE[name],
    run: async (args: string[], progress: CtlProgress = NO_PROGRESS) => await HANDLERS[name](args, parts, progress)
  }))
}
