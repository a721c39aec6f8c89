// Client presence (SPEC §6, EMQ X emqx_mod_presence): when a client has
// connected (its CONNACK sent) and when it has gone,
// `$SYS/brokers/<node>/clients/<clientid>/connected` and `…/disconnected`,
// QoS `module.presence.qos` (1), not retained. Payloads (JSON, `ts` in
// milliseconds; a missing user name is the string `undefined`, SPEC §2):
//   connected, full (EMQ X 3):  {clientid, username, ipaddress, clean_start,
//                                proto_ver, proto_name, keepalive, connack, ts}
//   connected, short (EMQ X 2): {clientid, username, ipaddress, session,
//                                version, connack, ts}, where `session` is
//                                true for a persistent session (clean start
//                                false) and `version` the protocol level
//   disconnected:               {clientid, username, reason, ts}
// `module.presence.format` picks full or short; `module.presence = false`
// switches both messages off.
import type { Client } from 'aedes'
import type { IConnectPacket } from 'mqtt-packet'
import { clientState } from '../access/client-state.js'
import { connInfo } from '../listeners/conn-info.js'
import type { Config } from '../config/store.js'
import type { SysPublish } from './sys-topics.js'
import { sysPrefix } from './sys-topics.js'

interface ConnectFacts { cleanStart: boolean, protoName: string, protoVer: number | string, keepalive: number }

export class Presence {
  readonly #facts = new WeakMap<Client, ConnectFacts>()

  constructor (private readonly config: Config, private readonly publish: SysPublish) {}

  /** Remembers what the CONNECT said (once per connection); a gateway client's protocol is the gateway's. */
  noteConnect (client: Client, packet: IConnectPacket): void {
    const conn = connInfo(client.conn)
    this.#facts.set(client, {
      cleanStart: packet.clean !== false,
      protoName: conn?.protoName ?? packet.protocolId ?? 'MQTT',
      protoVer: conn?.protoVer ?? packet.protocolVersion ?? 4,
      keepalive: packet.keepalive ?? 0
    })
  }

  connected (client: Client): void {
    if (!this.config.get('module.presence')) return
    const info = clientState(client)?.info
    const facts = this.#facts.get(client) ?? { cleanStart: client.clean, protoName: 'MQTT', protoVer: client.version, keepalive: 0 }
    const common = { clientid: client.id, username: info?.username ?? 'undefined', ipaddress: info?.ipAddress ?? 'undefined' }
    const payload = this.config.get('module.presence.format') === 'short'
      ? { ...common, session: !facts.cleanStart, version: facts.protoVer, connack: 0, ts: Date.now() }
      : {
          ...common,
          clean_start: facts.cleanStart,
          proto_ver: facts.protoVer,
          proto_name: facts.protoName,
          keepalive: facts.keepalive,
          connack: 0,
          ts: Date.now()
        }
    this.#send(client.id, 'connected', payload)
  }

  disconnected (client: Client, reason: string): void {
    if (!this.config.get('module.presence')) return
    const username = clientState(client)?.info.username ?? 'undefined'
    this.#send(client.id, 'disconnected', { clientid: client.id, username, reason, ts: Date.now() })
  }

  #send (clientId: string, event: string, payload: object): void {
    const qos = this.config.get('module.presence.qos') as 0 | 1 | 2
    this.publish(`${sysPrefix(this.config)}clients/${clientId}/${event}`, JSON.stringify(payload), qos, false)
  }
}
