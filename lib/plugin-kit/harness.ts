// The test harness of the plugin kit: a real node in this process with one
// plugin loaded (its settings as the .conf file would give them), handing
// back connected MQTT.js clients and, with the management API loaded, an
// HTTP client for it. Everything it opened is closed by `stop()`.
//
//   const node = await startPluginNode({ plugin: 'broker_x', settings: { 'x.key': 'v' } })
//   const client = await node.mqtt({ clientId: 'c1' })
//   const { status, body } = await node.http('GET', '/plugins')   // with `withApi: true`
//   await node.stop()
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import type { BrokerNode } from '../node.js'
import { freePort, startTestNode, type ListenerKind, type PluginSettings } from './test-node.js'

export type { IClientOptions, MqttClient }

export interface PluginNodeOptions {
  /** the plugin under test (a broker_* folder in plugins/ or in `pluginDirs`) */
  plugin: string
  /** its settings: the `key = value` lines of its .conf file (defaults are the schema's, not etc/plugins/) */
  settings?: Record<string, string | number>
  /** node settings (`mqtt.allow_anonymous` …) */
  node?: Record<string, string | number>
  /** MQTT listeners on free ports; default tcp */
  listeners?: ListenerKind[]
  /** loads broker_management after the plugin, on a free port, for `http()` (implied when the plugin is broker_management) */
  withApi?: boolean
  /** more plugins loaded after the plugin (and the API), with their settings */
  others?: PluginSettings
  /** more folders holding broker_* plugins (test fixtures) */
  pluginDirs?: string[]
  /** a data folder to start on and keep (a restart test starts a second node on it); default a fresh one, removed at stop */
  dataDir?: string
}

export interface ApiAnswer {
  status: number
  /** the JSON body, or the text when it is not JSON */
  body: unknown
  headers: Headers
}

export interface HttpOptions {
  /** `id:secret` for Basic auth; default the default application `admin:public`; null sends none */
  auth?: string | null
}

export interface PluginNode {
  node: BrokerNode
  dataDir: string
  /** the port of an MQTT listener (default tcp) */
  port: (kind?: ListenerKind) => number
  /** `mqtt://127.0.0.1:<port>`, `ws://127.0.0.1:<port>/mqtt` … */
  url: (kind?: ListenerKind) => string
  /** a client connected (CONNACK received) to the tcp listener, or `listener`'s; closed at stop */
  mqtt: (options?: IClientOptions & { listener?: ListenerKind }) => Promise<MqttClient>
  /** a management API call under /api/v3 (`http('GET', '/nodes')`); needs `withApi` */
  http: (method: string, path: string, body?: unknown, options?: HttpOptions) => Promise<ApiAnswer>
  /** closes the clients, stops the node and removes its data folder (unless the caller gave it) */
  stop: () => Promise<void>
}

const API_PLUGIN = 'broker_management'
const DEFAULT_APPLICATION = 'admin:public'

/** Starts a node with the plugin loaded; rejects with the plugin's load error when it does not load. */
export async function startPluginNode (options: PluginNodeOptions): Promise<PluginNode> {
  const { plugin, settings = {}, node: nodeSettings = {}, listeners = ['tcp'], others = {}, pluginDirs, dataDir } = options
  const withApi = options.withApi === true || plugin === API_PLUGIN
  const apiPort = withApi ? await freePort() : undefined
  const apiSettings = { 'management.listener.http': `127.0.0.1:${apiPort}` }
  const plugins: PluginSettings = plugin === API_PLUGIN
    ? { [plugin]: { ...apiSettings, ...settings } }
    : { [plugin]: settings, ...(withApi ? { [API_PLUGIN]: apiSettings } : {}) }
  const started = await startTestNode({ settings: nodeSettings, listeners, plugins: { ...plugins, ...others }, pluginDirs, dataDir })
  const { node } = started
  try {
    // the boot logs a failed load and goes on; loading again says why
    for (const name of Object.keys(plugins)) if (!node.plugins.isActive(name)) await node.plugins.load(name)
  } catch (err) {
    await started.stop()
    throw err
  }
  const clients = new Set<MqttClient>()
  const url = (kind: ListenerKind = 'tcp'): string => {
    const scheme = { tcp: 'mqtt', ssl: 'mqtts', ws: 'ws', wss: 'wss' }[kind]
    const host = kind === 'ssl' || kind === 'wss' ? 'localhost' : '127.0.0.1'
    return `${scheme}://${host}:${started.port(kind)}${kind === 'ws' || kind === 'wss' ? '/mqtt' : ''}`
  }
  return {
    node,
    dataDir: started.dataDir,
    port: started.port,
    url,
    async mqtt ({ listener, ...clientOptions } = {}) {
      const client = await connectMqtt(url(listener), clientOptions)
      clients.add(client)
      client.once('end', () => clients.delete(client))
      return client
    },
    async http (method, path, body, { auth = DEFAULT_APPLICATION } = {}) {
      if (apiPort === undefined) throw new Error(`http() needs the management API: start the node with withApi: true`)
      return await apiCall(`http://127.0.0.1:${apiPort}/api/v3${path}`, method, body, auth)
    },
    async stop () {
      await Promise.all([...clients].map(async (client) => await client.endAsync(true)))
      await started.stop()
    }
  }
}

/** An MQTT.js client that has its CONNACK; rejects on a refusal or a close before it (no reconnecting). */
export async function connectMqtt (url: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve())
    client.once('error', reject)
    client.once('close', () => reject(new Error(`connection to ${url} closed before CONNACK`)))
  })
  return client
}

async function apiCall (url: string, method: string, body: unknown, auth: string | null): Promise<ApiAnswer> {
  const headers: Record<string, string> = {}
  if (auth !== null) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: jsonOrText(text), headers: res.headers }
}

function jsonOrText (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
