// PUBLISH at QoS −1 (§6.8) from a client with no connection: the gateway
// publishes it at QoS 0 through one link of its own, connected as the
// client id `NegQoS-Client@<node>` (EMQ X's name) with mqtt.sn.username /
// .password, so the auth chain and the ACL apply to these messages too.
// The link connects at the first such message; a refusal is retried at
// most every RETRY_MS, messages meanwhile are dropped (and counted).
import { GatewayClient, type GatewayLink, type PluginContext } from '../../lib/plugin-kit/index.js'
import type { SnConfig } from './settings.js'
import { LISTENER_ID, PROTO_VER, PROTOCOL } from './session.js'

const RETRY_MS = 5000
/** messages held while the link connects */
const MAX_WAITING = 100
const LINK_BUFFER_MAX = 1024 * 1024

interface Waiting { topic: string, payload: Buffer, retain: boolean }

export class QosMinusOnePublisher {
  readonly #ctx: PluginContext<SnConfig>
  readonly #host: string
  #client: GatewayClient | undefined
  #link: GatewayLink | undefined
  #ready = false
  #refusedAt = -Infinity
  #waiting: Waiting[] = []

  readonly #dropped: (count: number) => void

  constructor (ctx: PluginContext<SnConfig>, host: string, dropped: (count: number) => void) {
    this.#ctx = ctx
    this.#host = host
    this.#dropped = dropped
  }

  get clientId (): string {
    return `NegQoS-Client@${this.#ctx.node.name}`
  }

  /** false: dropped (no link, or the link is full) */
  publish (topic: string, payload: Buffer, retain: boolean, octets: number): boolean {
    if (this.#ready && this.#client?.open === true) {
      if (this.#link!.stream.writableLength > LINK_BUFFER_MAX) return false
      this.#link!.countBytes(octets, 0)
      this.#client.publish({ topic, payload, qos: 0, retain }).catch(() => {})
      return true
    }
    if (this.#client === undefined && Date.now() - this.#refusedAt < RETRY_MS) return false
    if (this.#waiting.length >= MAX_WAITING) return false
    this.#waiting.push({ topic, payload, retain })
    if (this.#client === undefined) this.#connect()
    return true
  }

  close (): void {
    this.#waiting = []
    this.#client?.disconnect()
    this.#client = undefined
  }

  #connect (): void {
    const link = this.#ctx.gateway.connect({ protocol: PROTOCOL, listener: LISTENER_ID, ipAddress: this.#host, port: 0, protoName: 'MQTT-SN', protoVer: PROTO_VER })
    const client: GatewayClient = new GatewayClient(link, this.#ctx.timers, {
      onMessage: (_message, ack) => ack(),
      onClose: () => {
        if (this.#client !== client) return
        this.#client = undefined
        this.#ready = false
        this.#refusedAt = Date.now()
      }
    })
    this.#client = client
    this.#link = link
    const username = this.#ctx.config['mqtt.sn.username']
    client.connect({
      clientId: this.clientId,
      username: username === '' ? undefined : username,
      password: username === '' ? undefined : this.#ctx.config['mqtt.sn.password'],
      keepalive: 60
    }).then((connack) => {
      if (this.#client !== client) return
      const waiting = this.#waiting
      this.#waiting = []
      if (connack.reasonCode !== 0) {
        this.#dropped(waiting.length)
        this.#ctx.logger.warn({ reason: connack.reason }, 'MQTT-SN: the QoS -1 link was refused; QoS -1 messages are dropped')
        return
      }
      this.#ready = true
      for (const { topic, payload, retain } of waiting) client.publish({ topic, payload, qos: 0, retain }).catch(() => {})
    }, () => {})
  }
}
