// A cluster for tests: one Debian redis-server (test/helpers/servers/redis.ts)
// and N real `bin/broker` processes (compiled: `npm run build` first) joined
// through it (`cluster.discovery = redis`). Each node has its own data folder,
// node name (`n1@127.0.0.1` …), MQTT port and broker_management HTTP port; the
// cluster name is unique per cluster, so keys of different test files never
// meet. `close` stops every node and the server and removes every folder.
import { randomBytes } from 'node:crypto'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import mqtt, { type IClientOptions, type IConnackPacket, type IDisconnectPacket, type MqttClient } from 'mqtt'
import { freePort, RETAINER, spawnBroker, tempDir, writePluginFiles, type BrokerProcess } from './broker.js'
import { ctl as runCtl, type CtlRun } from './ctl.js'
import { closeAll, type Received } from './mqtt.js'
import { startRedis, type RedisServer } from './servers/redis.js'

/** The default application of broker_management (v3) and its default administrator user (v2). */
export const DEFAULT_AUTH = 'admin:public'

export interface ClusterNode {
  /** `n1@127.0.0.1` … */
  name: string
  dataDir: string
  /** MQTT over TCP */
  port: number
  mqttUrl: string
  httpPort: number
  /** `http://127.0.0.1:<httpPort>` */
  http: string
  /** the running process (the last one after a restart); undefined once stopped or killed */
  proc: BrokerProcess | undefined
  readonly running: boolean
  /** every log line of every process this node has run, for failure messages */
  logs: () => string
}

export interface ApiAnswer { status: number, body: unknown }

export interface ApiOptions {
  /** `user:secret`; null for none (default: admin:public) */
  auth?: string | null
  /** abort the request after this long (default 30 s); the answer is then status 0, body 'timeout' */
  timeoutMs?: number
}

export interface ClusterOptions {
  /** number of nodes (default 3) */
  size?: number
  /** cluster.heartbeat_interval (default 500ms) */
  heartbeat?: string
  /** cluster.rpc_timeout (default 2s) */
  rpcTimeout?: string
  /** extra `--name value` arguments of redis-server, e.g. `['--appendonly', 'yes']` */
  redisArgs?: string[]
  /** extra settings of every node */
  settings?: Record<string, string | number>
  /** a Redis server started by the test (e.g. a Sentinel's first primary) instead of a fresh one; closed with the cluster */
  redis?: RedisServer
}

export interface TestCluster {
  redis: RedisServer
  /** cluster.name */
  name: string
  nodes: ClusterNode[]
  /** cluster.heartbeat_interval in ms */
  heartbeatMs: number
  /** cluster.rpc_timeout in ms */
  rpcTimeoutMs: number
  /** a v3 request (`path` under /api/v3, e.g. `/nodes/`) */
  api: (node: ClusterNode, method: string, path: string, body?: unknown, options?: ApiOptions) => Promise<ApiAnswer>
  /** a v2 request (`path` under /api/v2) */
  apiV2: (node: ClusterNode, method: string, path: string, body?: unknown, options?: ApiOptions) => Promise<ApiAnswer>
  /** `bin/broker_ctl` against the node */
  ctl: (node: ClusterNode, ...args: string[]) => Promise<CtlRun>
  /** `bin/broker_ctl --json …`, parsed (throws with the output when it is not JSON) */
  ctlJson: <T = unknown>(node: ClusterNode, ...args: string[]) => Promise<{ code: number, data: T }>
  /** SIGKILL; resolves once the process has exited */
  kill9: (node: ClusterNode) => Promise<void>
  /** SIGTERM; resolves once the process has exited */
  stop: (node: ClusterNode) => Promise<void>
  /** SIGSTOP: the process stays, its sockets stay open, it answers nothing */
  freeze: (node: ClusterNode) => void
  /** SIGCONT after `freeze` */
  thaw: (node: ClusterNode) => void
  /** starts the node again (same name, data folder and ports); stops it first if it runs */
  restart: (node: ClusterNode) => Promise<void>
  /** the live node names as `GET /api/v3/nodes/` on `via` lists them */
  liveNodes: (via: ClusterNode) => Promise<string[]>
  /** stops every node and the Redis server, removes every folder */
  close: () => Promise<void>
}

function durationMs (text: string): number {
  const match = /^(\d+)(ms|s)$/.exec(text)
  if (match === null) throw new Error(`duration ${text}: use <n>ms or <n>s`)
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1)
}

/** Polls `condition` every 100 ms until it is truthy; rejects after `timeoutMs` naming `what` (and the last error). */
export async function waitFor<T> (condition: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await condition()
      if (value) return value
      last = value
    } catch (err) {
      last = err
    }
    if (Date.now() >= deadline) throw new Error(`${what} not met within ${timeoutMs} ms (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
    await sleep(100)
  }
}

/** The JSON value of a body, or the text itself when it is not JSON. */
function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

let counter = 0

export async function startCluster (options: ClusterOptions = {}): Promise<TestCluster> {
  const size = options.size ?? 3
  const heartbeat = options.heartbeat ?? '500ms'
  const rpcTimeout = options.rpcTimeout ?? '2s'
  const name = `tc${process.pid}x${++counter}x${Date.now().toString(36)}`
  const cookie = randomBytes(24).toString('base64url')
  const root = await tempDir('broker-cluster-test-')
  let redis: RedisServer
  try {
    redis = options.redis ?? await startRedis({ args: options.redisArgs })
  } catch (err) {
    await rm(root, { recursive: true, force: true })
    throw err
  }

  const nodes: ClusterNode[] = []
  // the lines of a node's earlier processes, by data folder
  const history = new Map<string, string[]>()
  for (let i = 1; i <= size; i++) {
    const dataDir = join(root, `n${i}`)
    await mkdir(dataDir)
    const port = await freePort()
    const httpPort = await freePort()
    const earlier: string[] = []
    history.set(dataDir, earlier)
    const node: ClusterNode = {
      name: `n${i}@127.0.0.1`,
      dataDir,
      port,
      mqttUrl: `mqtt://127.0.0.1:${port}`,
      httpPort,
      http: `http://127.0.0.1:${httpPort}`,
      proc: undefined,
      logs: () => [...earlier, ...(node.proc?.lines ?? [])].join('\n'),
      get running () { return this.proc !== undefined && this.proc.child.exitCode === null && this.proc.child.signalCode === null }
    }
    nodes.push(node)
  }

  const settings = (node: ClusterNode, etcDir: string): Record<string, string | number> => ({
    'node.name': node.name,
    'plugins.etc_dir': etcDir,
    'cluster.discovery': 'redis',
    'cluster.redis.server': `127.0.0.1:${redis.port}`,
    'cluster.name': name,
    'cluster.heartbeat_interval': heartbeat,
    'cluster.rpc_timeout': rpcTimeout,
    'cluster.cookie': cookie,
    ...options.settings
  })

  const launch = async (node: ClusterNode): Promise<void> => {
    const etcDir = await writePluginFiles(node.dataDir, { broker_management: { 'management.listener.http': `127.0.0.1:${node.httpPort}` }, [RETAINER]: {} })
    try {
      node.proc = await spawnBroker(node.dataDir, settings(node, etcDir), node.port)
    } catch (err) {
      history.get(node.dataDir)?.push((err as Error).message)
      throw err
    }
  }

  const signal = async (node: ClusterNode, sig: NodeJS.Signals): Promise<void> => {
    const proc = node.proc
    if (proc === undefined) return
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      // a frozen process would not act on SIGTERM
      if (sig === 'SIGTERM') proc.child.kill('SIGCONT')
      proc.child.kill(sig)
      const forced = sig === 'SIGTERM' ? setTimeout(() => proc.child.kill('SIGKILL'), 15_000) : undefined
      await proc.exited
      clearTimeout(forced)
    }
    history.get(node.dataDir)?.push(...proc.lines)
    node.proc = undefined
  }

  const request = async (node: ClusterNode, base: string, method: string, path: string, body: unknown, { auth = DEFAULT_AUTH, timeoutMs = 30_000 }: ApiOptions = {}): Promise<ApiAnswer> => {
    const headers: Record<string, string> = {}
    if (auth !== null) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    try {
      const res = await fetch(`${node.http}${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) })
      const text = await res.text()
      return { status: res.status, body: parseJson(text) }
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') return { status: 0, body: 'timeout' }
      throw err
    }
  }

  const cluster: TestCluster = {
    redis,
    name,
    nodes,
    heartbeatMs: durationMs(heartbeat),
    rpcTimeoutMs: durationMs(rpcTimeout),
    api: async (node, method, path, body, opts) => await request(node, '/api/v3', method, path, body, opts),
    apiV2: async (node, method, path, body, opts) => await request(node, '/api/v2', method, path, body, opts),
    ctl: async (node, ...args) => await runCtl(node.dataDir, ...args),
    async ctlJson<T> (node: ClusterNode, ...args: string[]) {
      const run = await runCtl(node.dataDir, '--json', ...args)
      try {
        return { code: run.code, data: JSON.parse(run.stdout) as T }
      } catch {
        throw new Error(`broker_ctl ${args.join(' ')}: not JSON (exit ${run.code}): ${run.stdout} ${run.stderr}`)
      }
    },
    kill9: async (node) => await signal(node, 'SIGKILL'),
    stop: async (node) => await signal(node, 'SIGTERM'),
    freeze: (node) => { node.proc?.child.kill('SIGSTOP') },
    thaw: (node) => { node.proc?.child.kill('SIGCONT') },
    async restart (node) {
      await signal(node, 'SIGTERM')
      await launch(node)
    },
    async liveNodes (via) {
      const res = await cluster.api(via, 'GET', '/nodes/')
      if (res.status !== 200 || !Array.isArray(res.body)) throw new Error(`GET /nodes/ on ${via.name}: ${res.status} ${JSON.stringify(res.body)}`)
      return (res.body as Array<{ node: string }>).map((n) => n.node).sort()
    },
    async close () {
      await Promise.all(nodes.map(async (node) => await signal(node, 'SIGTERM')))
      await redis.close()
      await rm(root, { recursive: true, force: true })
    }
  }

  try {
    await Promise.all(nodes.map(launch))
    // every node sees every other one before a test starts
    await waitFor(async () => {
      for (const node of nodes) if ((await cluster.liveNodes(node)).length !== size) return false
      return true
    }, 10 * cluster.heartbeatMs + 10_000, `all ${size} nodes listed by every node`)
  } catch (err) {
    await cluster.close()
    throw err
  }
  return cluster
}

/** When the test fails, its comments show each node's last log lines (a failure on a loaded machine is read from them). */
export function logsOnFailure (t: { passing: () => boolean, comment: (message: string) => void, teardown: (fn: () => void) => void }, cluster: Pick<TestCluster, 'nodes'>, lines = 40): void {
  t.teardown(() => {
    if (t.passing()) return
    for (const node of cluster.nodes) t.comment(`${node.name}'s last lines:\n${node.logs().split('\n').slice(-lines).join('\n')}`)
  })
}

export interface Tracked {
  client: MqttClient
  connack: IConnackPacket
  /** every message received, from the first packet after CONNACK on */
  messages: Received[]
  /** DISCONNECT packets sent by the server */
  disconnects: IDisconnectPacket[]
  readonly closed: boolean
}

/**
 * An MQTT.js client (no reconnects) whose messages and server DISCONNECTs are
 * recorded from the start, so messages queued for a session are not missed.
 */
export async function track (url: string, options: IClientOptions = {}): Promise<Tracked> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  const messages: Received[] = []
  const disconnects: IDisconnectPacket[] = []
  let closed = false
  client.on('message', (topic, payload, packet) => {
    messages.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos, properties: packet.properties as Record<string, unknown> | undefined })
  })
  client.on('disconnect', (packet) => disconnects.push(packet))
  client.on('close', () => { closed = true })
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', (err) => {
      client.end(true)
      reject(err)
    })
    client.once('close', () => reject(new Error(`connection to ${url} closed before CONNACK`)))
  })
  return { client, connack, messages, disconnects, get closed () { return closed } }
}

/** `keep(client)` closes the client (an MQTT.js client or a tracked one) when the test ends, and returns it. */
export function opened (t: { teardown: (fn: () => Promise<void>) => void }): <C extends MqttClient | Tracked>(c: C) => C {
  const clients: MqttClient[] = []
  t.teardown(async () => await closeAll(...clients))
  return (c) => {
    clients.push('connack' in c ? c.client : c)
    return c
  }
}
