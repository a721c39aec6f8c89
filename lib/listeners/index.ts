// Builds the MQTT listeners the configuration names: one per
// `listener.<type>.<name>` whose address is not `off` (lib/config/listener-settings.ts).
import { ConfigError } from '../config/parse.js'
import { listenerPrefix, listenerValues, type ListenerType, type ListenerValues } from '../config/listener-settings.js'
import type { Config } from '../config/store.js'
import type { ListenAddress } from '../config/types.js'
import { listenerLabel, type ConnectionHandler, type Listener } from './listener.js'
import { SocketListener } from './tcp.js'
import { tlsOptions } from './tls-options.js'
import { WsListener } from './ws.js'

export type { Listener } from './listener.js'

/** What building one listener needs besides its own values. */
interface Build { name: string, prefix: string, config: Config, root: string, handle: ConnectionHandler }
/** The values of a listener that opens (its address is not `off`). */
type Open<T extends ListenerType> = ListenerValues<T> & { address: ListenAddress }

const BUILDERS: { [T in ListenerType]: (values: Open<T>, build: Build) => Promise<Listener> } = {
  tcp: async (v, b) => new SocketListener(socketOptions(v, b)),
  ssl: async (v, b) => new SocketListener({ ...socketOptions(v, b), tls: await tlsOptions(b.config, b.prefix, b.root) }),
  ws: async (v, b) => new WsListener(wsOptions(v, b)),
  wss: async (v, b) => new WsListener({ ...wsOptions(v, b), tls: await tlsOptions(b.config, b.prefix, b.root) })
}

/** The limits each type's gate takes from its listener's keys (live settings). */
const GATE_KEYS: Record<ListenerType, readonly [string, string]> = {
  tcp: ['max_connections', 'max_conn_rate'],
  ssl: ['max_connections', 'max_conn_rate'],
  ws: ['max_clients', 'max_conn_rate'],
  wss: ['max_clients', 'max_conn_rate']
}

export async function createListeners (config: Config, root: string, handle: ConnectionHandler): Promise<Listener[]> {
  const open = config.mqttListeners()
    .map(({ type, name }) => ({ type, name, prefix: listenerPrefix(type, name), values: listenerValues(type, name, (key) => config.value(key)) }))
    .filter((entry) => entry.values.address !== null)
  refuseSharedPorts(config, open.map(({ prefix, values }) => ({ prefix, address: values.address! })))
  const listeners: Listener[] = []
  const gates = new Map<Listener, [string, string]>()
  for (const { type, name, prefix, values } of open) {
    const build = BUILDERS[type] as (values: Open<ListenerType>, build: Build) => Promise<Listener>
    const listener = await build(values as Open<ListenerType>, { name, prefix, config, root, handle })
    listeners.push(listener)
    const [max, rate] = GATE_KEYS[type]
    gates.set(listener, [`${prefix}.${max}`, `${prefix}.${rate}`])
  }
  followGateLimits(config, gates)
  return listeners
}

/** The options every listener takes. */
function common (v: Open<'tcp' | 'ws'>, b: Build): { name: string, zone: string, address: ListenAddress, acceptors: number, maxConnRate: number, handle: ConnectionHandler } {
  return { name: b.name, zone: v.zone, address: v.address, acceptors: v.acceptors, maxConnRate: v.max_conn_rate, handle: b.handle }
}

function socketOptions (v: Open<'tcp'>, b: Build): ConstructorParameters<typeof SocketListener>[0] {
  return { ...common(v, b), maxConnections: v.max_connections, proxyProtocolTimeout: v.proxy_protocol ? v.proxy_protocol_timeout : undefined }
}

function wsOptions (v: Open<'ws'>, b: Build): ConstructorParameters<typeof WsListener>[0] {
  return {
    ...common(v, b),
    path: v.mqtt_path,
    maxClients: v.max_clients,
    maxPacketSize: b.config.get('mqtt.max_packet_size'),
    // the proxy headers a WebSocket listener reads (docs/listeners-proxy.md); an empty setting is unset
    proxyAddressHeader: v.proxy_address_header === '' ? undefined : v.proxy_address_header,
    proxyPortHeader: v.proxy_port_header === '' ? undefined : v.proxy_port_header
  }
}

/** Connection limits are live settings: a change applies to the listener's next sockets. */
function followGateLimits (config: Config, gates: ReadonlyMap<Listener, [string, string]>): void {
  config.on('change', (key: string) => {
    for (const [listener, [max, rate]] of gates) {
      if (key === max || key === rate) listener.gate.setLimits(config.value(max) as number, config.value(rate) as number)
    }
  })
}

const ANY_HOST = new Set(['0.0.0.0', '::'])

/** Two listeners on one port (the same address, or either on every address) cannot both open: refused before either does. */
function refuseSharedPorts (config: Config, open: Array<{ prefix: string, address: ListenAddress }>): void {
  open.forEach(({ prefix, address }, i) => {
    if (address.port === 0) return
    const taken = open.slice(0, i).find((other) => other.address.port === address.port &&
      (other.address.host === address.host || ANY_HOST.has(other.address.host) || ANY_HOST.has(address.host)))
    if (taken === undefined) return
    throw new ConfigError(config.origin(prefix), `${prefix}: port ${address.port} (${address.host}) is taken by ${taken.prefix} = ${taken.address.host}:${taken.address.port} (${config.origin(taken.prefix)})`)
  })
}

const TLS_PROTOCOLS = new Set(['mqtt:ssl', 'mqtt:wss'])

/** What renewing one TLS listener's certificates did. */
export interface TlsRenewal { listener: string, changed: boolean, error?: string }

/**
 * Reads every TLS listener's key and certificate files again and serves them
 * to new connections (open ones keep theirs). A listener whose files do not
 * read or load keeps serving the old ones and reports why.
 */
export async function renewTls (listeners: readonly Listener[], config: Config, root: string): Promise<TlsRenewal[]> {
  const renewals: TlsRenewal[] = []
  for (const listener of listeners) {
    if (!TLS_PROTOCOLS.has(listener.protocol) || listener.renewTls === undefined) continue
    // the listener's label is its key prefix, `listener.ssl.<name>`
    const prefix = listenerLabel(listener)
    try {
      renewals.push({ listener: prefix, changed: listener.renewTls(await tlsOptions(config, prefix, root)) })
    } catch (err) {
      renewals.push({ listener: prefix, changed: false, error: (err as Error).message })
    }
  }
  return renewals
}
