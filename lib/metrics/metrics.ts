// Metrics of one node (SPEC §2.11): integer counters, each counted at the
// moment it happens. The packet observers run for every packet on the wire,
// so each is one call, one switch on the packet type and a few integer
// increments on plain fields — no Map lookup, no allocation.
import type { Client } from 'aedes'
import type { Packet } from 'mqtt-packet'
import type { ByteCounter } from './bytes.js'

/** The v3 metric keys, in SPEC §2.11 order. */
export const METRIC_KEYS = [
  'bytes/received', 'bytes/sent', 'packets/received', 'packets/sent', 'packets/connect', 'packets/connack',
  'packets/publish/received', 'packets/publish/sent', 'packets/puback/received', 'packets/puback/sent',
  'packets/puback/missed', 'packets/pubrec/received', 'packets/pubrec/sent', 'packets/pubrec/missed',
  'packets/pubrel/received', 'packets/pubrel/sent', 'packets/pubrel/missed', 'packets/pubcomp/received',
  'packets/pubcomp/sent', 'packets/pubcomp/missed', 'packets/subscribe', 'packets/suback', 'packets/unsubscribe',
  'packets/unsuback', 'packets/pingreq', 'packets/pingresp', 'packets/disconnect/received',
  'packets/disconnect/sent', 'packets/auth', 'messages/received', 'messages/sent', 'messages/expired',
  'messages/retained', 'messages/dropped', 'messages/forward', 'messages/qos0/received', 'messages/qos0/sent',
  'messages/qos1/received', 'messages/qos1/sent', 'messages/qos2/received', 'messages/qos2/sent',
  'messages/qos2/expired', 'messages/qos2/dropped'
] as const

export type MetricKey = typeof METRIC_KEYS[number]
export type V3Metrics = Record<MetricKey, number>

/** v2 drops these and has `packets/disconnect` for the two disconnect keys (SPEC §2.11). */
const NOT_IN_V2 = new Set<string>(['packets/auth', 'messages/expired', 'messages/forward', 'messages/qos2/expired',
  'packets/disconnect/received', 'packets/disconnect/sent'])

export class Metrics {
  packetsReceived = 0
  packetsSent = 0
  packetsConnect = 0
  packetsConnack = 0
  publishReceived = 0
  publishSent = 0
  pubackReceived = 0
  pubackSent = 0
  pubackMissed = 0
  pubrecReceived = 0
  pubrecSent = 0
  pubrecMissed = 0
  pubrelReceived = 0
  pubrelSent = 0
  pubrelMissed = 0
  pubcompReceived = 0
  pubcompSent = 0
  pubcompMissed = 0
  subscribe = 0
  suback = 0
  unsubscribe = 0
  unsuback = 0
  pingreq = 0
  pingresp = 0
  disconnectReceived = 0
  disconnectSent = 0
  auth = 0
  messagesReceived = 0
  messagesSent = 0
  messagesExpired = 0
  messagesRetained = 0
  messagesDropped = 0
  /** messages sent to other nodes: the cluster counts them */
  messagesForward = 0
  qos0Received = 0
  qos0Sent = 0
  qos1Received = 0
  qos1Sent = 0
  qos2Received = 0
  qos2Sent = 0
  qos2Expired = 0
  qos2Dropped = 0

  /** Called for each CONNECT received (cold path: once per connection). */
  onConnect: (client: Client, packet: Packet) => void = () => {}
  /** a PUBLISH written to `client` (per-session counts) */
  onPublishSent: (client: Client) => void = () => {}

  constructor (readonly bytes: ByteCounter) {}

  /** Every packet parsed from a client (the engine's `packetIn`). */
  readonly packetIn = (client: Client, packet: Packet): void => {
    this.packetsReceived++
    switch (packet.cmd) {
      case 'publish':
        this.publishReceived++
        this.messagesReceived++
        if (packet.qos === 0) this.qos0Received++
        else if (packet.qos === 1) this.qos1Received++
        else this.qos2Received++
        break
      case 'puback': this.pubackReceived++; break
      case 'pubrec': this.pubrecReceived++; break
      case 'pubrel': this.pubrelReceived++; break
      case 'pubcomp': this.pubcompReceived++; break
      case 'subscribe': this.subscribe++; break
      case 'unsubscribe': this.unsubscribe++; break
      case 'pingreq': this.pingreq++; break
      case 'disconnect': this.disconnectReceived++; break
      case 'auth': this.auth++; break
      case 'connect':
        this.packetsConnect++
        this.onConnect(client, packet)
        break
    }
  }

  /** Every packet written to a client (the engine's `packetOut`). */
  readonly packetOut = (client: Client, packet: Packet): void => {
    this.packetsSent++
    switch (packet.cmd) {
      case 'publish':
        this.onPublishSent(client)
        this.publishSent++
        this.messagesSent++
        if (packet.qos === 0) this.qos0Sent++
        else if (packet.qos === 1) this.qos1Sent++
        else this.qos2Sent++
        break
      case 'puback': this.pubackSent++; break
      case 'pubrec': this.pubrecSent++; break
      case 'pubrel': this.pubrelSent++; break
      case 'pubcomp': this.pubcompSent++; break
      case 'connack': this.packetsConnack++; break
      case 'suback': this.suback++; break
      case 'unsuback': this.unsuback++; break
      case 'pingresp': this.pingresp++; break
      case 'disconnect': this.disconnectSent++; break
    }
  }

  /** An acknowledgement for a packet id not in flight (the engine's `packetMissed`). */
  readonly packetMissed = (_client: Client, packet: Packet): void => {
    switch (packet.cmd) {
      case 'puback': this.pubackMissed++; break
      case 'pubrec': this.pubrecMissed++; break
      case 'pubrel': this.pubrelMissed++; break
      case 'pubcomp': this.pubcompMissed++; break
    }
  }

  /** A message no one received: no route, a full queue, an ACL denial. */
  dropped (qos: number): void {
    this.messagesDropped++
    if (qos === 2) this.qos2Dropped++
  }

  /** A queued message discarded because its MQTT 5 Message Expiry Interval passed. */
  expired (qos: number): void {
    this.messagesExpired++
    if (qos === 2) this.qos2Expired++
  }

  toV3 (): V3Metrics {
    return {
      'bytes/received': this.bytes.received(),
      'bytes/sent': this.bytes.sent(),
      'packets/received': this.packetsReceived,
      'packets/sent': this.packetsSent,
      'packets/connect': this.packetsConnect,
      'packets/connack': this.packetsConnack,
      'packets/publish/received': this.publishReceived,
      'packets/publish/sent': this.publishSent,
      'packets/puback/received': this.pubackReceived,
      'packets/puback/sent': this.pubackSent,
      'packets/puback/missed': this.pubackMissed,
      'packets/pubrec/received': this.pubrecReceived,
      'packets/pubrec/sent': this.pubrecSent,
      'packets/pubrec/missed': this.pubrecMissed,
      'packets/pubrel/received': this.pubrelReceived,
      'packets/pubrel/sent': this.pubrelSent,
      'packets/pubrel/missed': this.pubrelMissed,
      'packets/pubcomp/received': this.pubcompReceived,
      'packets/pubcomp/sent': this.pubcompSent,
      'packets/pubcomp/missed': this.pubcompMissed,
      'packets/subscribe': this.subscribe,
      'packets/suback': this.suback,
      'packets/unsubscribe': this.unsubscribe,
      'packets/unsuback': this.unsuback,
      'packets/pingreq': this.pingreq,
      'packets/pingresp': this.pingresp,
      'packets/disconnect/received': this.disconnectReceived,
      'packets/disconnect/sent': this.disconnectSent,
      'packets/auth': this.auth,
      'messages/received': this.messagesReceived,
      'messages/sent': this.messagesSent,
      'messages/expired': this.messagesExpired,
      'messages/retained': this.messagesRetained,
      'messages/dropped': this.messagesDropped,
      'messages/forward': this.messagesForward,
      'messages/qos0/received': this.qos0Received,
      'messages/qos0/sent': this.qos0Sent,
      'messages/qos1/received': this.qos1Received,
      'messages/qos1/sent': this.qos1Sent,
      'messages/qos2/received': this.qos2Received,
      'messages/qos2/sent': this.qos2Sent,
      'messages/qos2/expired': this.qos2Expired,
      'messages/qos2/dropped': this.qos2Dropped
    }
  }

  /** The v2 form (SPEC §2.11): `packets/disconnect` = received + sent; auth, expired, forward, qos2/expired absent. */
  toV2 (): Record<string, number> {
    const v3 = this.toV3()
    const v2: Record<string, number> = {}
    for (const key of METRIC_KEYS) {
      if (key === 'packets/disconnect/received') v2['packets/disconnect'] = v3[key] + v3['packets/disconnect/sent']
      if (!NOT_IN_V2.has(key)) v2[key] = v3[key]
    }
    return v2
  }
}
