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
      tls: await tlsOptions(config, 'listener.wss.external', root),
      handle
    }))
  }
  return listeners
}
