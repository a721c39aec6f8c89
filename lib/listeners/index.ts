// Builds the listeners etc/broker.conf switches on (a listener set to `off` is skipped).
import type { Config } from '../config/store.js'
import type { ConnectionHandler, Listener } from './listener.js'
import { SocketListener } from './tcp.js'
import { tlsOptions } from './tls-options.js'
import { WsListener } from './ws.js'

export type { Listener } from './listener.js'

export async function createListeners (config: Config, root: string, handle: ConnectionHandler): Promise<Listener[]> {
  const listeners: Listener[] = []
  const tcp = config.get('listener.tcp.external')
  if (tcp) {
    listeners.push(new SocketListener({
      name: 'external',
      address: tcp,
      acceptors: config.get('listener.tcp.external.acceptors'),
      maxConnections: config.get('listener.tcp.external.max_connections'),
      maxConnRate: config.get('listener.tcp.external.max_conn_rate'),
      proxyProtocolTimeout: config.get('listener.tcp.external.proxy_protocol') ? config.get('listener.tcp.external.proxy_protocol_timeout') : undefined,
      handle
    }))
  }
  const ssl = config.get('listener.ssl.external')
  if (ssl) {
    listeners.push(new SocketListener({
      name: 'external',
      address: ssl,
      acceptors: config.get('listener.ssl.external.acceptors'),
      maxConnections: config.get('listener.ssl.external.max_connections'),
      maxConnRate: config.get('listener.ssl.external.max_conn_rate'),
      tls: await tlsOptions(config, 'listener.ssl.external', root),
      proxyProtocolTimeout: config.get('listener.ssl.external.proxy_protocol') ? config.get('listener.ssl.external.proxy_protocol_timeout') : undefined,
      handle
    }))
  }
  const ws = config.get('listener.ws.external')
  if (ws) {
    listeners.push(new WsListener({
      name: 'external',
      address: ws,
      path: config.get('listener.ws.external.mqtt_path'),
      acceptors: config.get('listener.ws.external.acceptors'),
      maxClients: config.get('listener.ws.external.max_clients'),
      maxConnRate: config.get('listener.ws.external.max_conn_rate'),
      maxPacketSize: config.get('mqtt.max_packet_size'),
      ...proxyHeaders(config, 'listener.ws.external'),
      handle
    }))
  }
  const wss = config.get('listener.wss.external')
  if (wss) {
    listeners.push(new WsListener({
      name: 'external',
      address: wss,
      path: config.get('listener.wss.external.mqtt_path'),
      acceptors: config.get('listener.wss.external.acceptors'),
      maxClients: config.get('listener.wss.external.max_clients'),
      maxConnRate: config.get('listener.wss.external.max_conn_rate'),
      maxPacketSize: config.get('mqtt.max_packet_size'),
      tls: await tlsOptions(config, 'listener.wss.external', root),
      ...proxyHeaders(config, 'listener.wss.external'),
      handle
    }))
  }
  followGateLimits(config, listeners)
  return listeners
}

/** The settings each listener's gate takes its limits from, by transport. */
const GATE_LIMITS = {
  'mqtt:tcp': ['listener.tcp.external.max_connections', 'listener.tcp.external.max_conn_rate'],
  'mqtt:ssl': ['listener.ssl.external.max_connections', 'listener.ssl.external.max_conn_rate'],
  'mqtt:ws': ['listener.ws.external.max_clients', 'listener.ws.external.max_conn_rate'],
  'mqtt:wss': ['listener.wss.external.max_clients', 'listener.wss.external.max_conn_rate']
} as const

/** Connection limits are live settings: a change applies to the listener's next sockets. */
function followGateLimits (config: Config, listeners: Listener[]): void {
  config.on('change', (key: string) => {
    for (const listener of listeners) {
      const [max, rate] = GATE_LIMITS[listener.protocol as keyof typeof GATE_LIMITS] ?? []
      if (max !== undefined && (key === max || key === rate)) listener.gate.setLimits(config.get(max), config.get(rate))
    }
  })
}

/** The proxy headers a WebSocket listener reads (docs/listeners-proxy.md); an empty setting is unset. */
function proxyHeaders (config: Config, prefix: 'listener.ws.external' | 'listener.wss.external'): { proxyAddressHeader?: string, proxyPortHeader?: string } {
  const address = config.get(`${prefix}.proxy_address_header`)
  const port = config.get(`${prefix}.proxy_port_header`)
  return { proxyAddressHeader: address === '' ? undefined : address, proxyPortHeader: port === '' ? undefined : port }
}
