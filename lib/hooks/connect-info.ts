// The CONNECT as `client.connect` and `client.connack` see it. Aedes keeps the
// packet's Keep Alive nowhere before authentication (it arms the timer after),
// so the packet observer notes it here when the CONNECT arrives; Clean Start
// is the engine's `_cleanStart` (its `clean` is the persistence axis: false
// for an MQTT 5 clean start with a Session Expiry Interval).
import type { Client } from 'aedes'
import type { ConnectingClient } from '../engine/internals.js'
import type { ClientInfo, ConnectInfo } from './types.js'

const keepalives = new WeakMap<Client, number>()

/** Called with every CONNECT packet, before any handler (Metrics' packet observer). */
export function noteConnectPacket (client: Client, packet: { keepalive?: number }): void {
  keepalives.set(client, packet.keepalive ?? 0)
}

/** The CONNECT of a client being authenticated (the user name as the client sent it). */
export function connectInfo (client: Client, info: ClientInfo): ConnectInfo {
  const { clientId, username, ipAddress, port, protocol, protoVer, gateway } = info
  const connect: ConnectInfo = { clientId, username, ipAddress, port, protocol, protoVer, keepalive: keepalives.get(client) ?? 0, cleanStart: (client as unknown as ConnectingClient)._cleanStart }
  if (gateway !== undefined) connect.gateway = gateway
  return connect
}
