// Maps Aedes' events onto the notification hook points (EMQ X names).
// Each listener returns at once when no plugin handles that hook.
import type { Aedes, AedesPublishPacket, Client } from 'aedes'
import { clientState } from '../access/client-state.js'
import { engineClient, onMessageDropped } from '../engine/internals.js'
import type { HookRegistry } from './registry.js'
import type { ClientInfo, MessageInfo } from './types.js'

/** A packet as hooks see a message; `from` its publisher, the packet's `clientId` unless given. */
export function messageInfo (packet: Pick<AedesPublishPacket, 'topic' | 'payload' | 'qos' | 'retain'> & { clientId?: string }, from = packet.clientId): MessageInfo {
  return {
    topic: packet.topic,
    payload: Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload),
    qos: packet.qos,
    retain: packet.retain,
    from
  }
}

/** What is known of a session's client when only its id is (a session restored from the store, expiring offline). */
function offlineInfo (clientId: string): ClientInfo {
  return { clientId, ipAddress: 'undefined', port: 0, protocol: 'mqtt:tcp', protoVer: 4, peercert: 'nossl', mountpoint: '', isSuperuser: false }
}

const disconnectReasons = new WeakMap<Client, string>()

/** Why a client went away, in EMQ X's words (`normal`, `keepalive_timeout`, `kicked`, `closed`). */
export function disconnectReason (client: Client): string {
  const noted = disconnectReasons.get(client)
  if (noted !== undefined) return noted
  return (client as Client & { _disconnected?: boolean })._disconnected === true ? 'normal' : 'closed'
}

export function noteDisconnectReason (client: Client, reason: string): void {
  disconnectReasons.set(client, reason)
}

export function mapEngineEvents (engine: Aedes, hooks: HookRegistry): void {
  engine.on('keepaliveTimeout', (client: Client) => noteDisconnectReason(client, 'keepalive_timeout'))
  engine.on('clientReady', (client: Client) => {
    const state = clientState(client)
    if (state !== undefined && hooks.has('client.connected')) hooks.notify('client.connected', state.info)
  })
  engine.on('clientDisconnect', (client: Client) => {
    const state = clientState(client)
    if (state === undefined) return
    if (hooks.has('client.disconnected')) hooks.notify('client.disconnected', state.info, disconnectReason(client))
    // a clean session ends with its connection; a persistent one when it expires
    if (client.clean && hooks.has('session.terminated')) hooks.notify('session.terminated', state.info, disconnectReason(client))
  })
  engine.on('sessionExpired', (client: Client) => {
    if (hooks.has('session.terminated')) hooks.notify('session.terminated', clientState(client)?.info ?? offlineInfo(client.id), 'expired')
  })
  engine.on('subscribe', (subscriptions, client: Client) => {
    const state = clientState(client)
    if (state === undefined || !hooks.has('session.subscribed')) return
    for (const sub of subscriptions) hooks.notify('session.subscribed', state.info, sub.topic, sub.qos)
  })
  engine.on('unsubscribe', (topics: string[], client: Client) => {
    const state = clientState(client)
    if (state === undefined || !hooks.has('session.unsubscribed')) return
    for (const topic of topics) hooks.notify('session.unsubscribed', state.info, topic)
  })
  engine.on('ack', (packet, client: Client) => {
    const state = clientState(client)
    // the stored packet: undefined for a clean session, a PUBREL mid-way through QoS 2
    if (packet?.cmd !== 'publish' || state === undefined || !hooks.has('message.acked')) return
    hooks.notify('message.acked', state.info, messageInfo(packet as AedesPublishPacket))
  })
  onMessageDropped(engine, (packet, client, reason) => {
    if (!hooks.has('message.dropped')) return
    const connected = engineClient(engine, client.id)
    hooks.notify('message.dropped', messageInfo(packet), reason, connected === undefined ? undefined : clientState(connected)?.info)
  })
}
