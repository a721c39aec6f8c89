// The CoAP requests of EMQ X's URL form
//   coap://host/mqtt/<topic>?c=<clientid>&u=<username>&p=<password>
// PUT / POST publish the payload to <topic>; GET with Observe=0 observes
// <topic> (a filter: + and # allowed), each message a notification; GET with
// Observe=1 ends it; a plain GET answers 2.05 (a keep-alive). Each client id
// is one client of the broker (client.ts), connected with the request's
// credentials on its first request; a request with other credentials
// connects it anew (the engine takes the session over).
import { coap, GatewayLinkClosed, validTopicFilter, validTopicName, type GatewayClose, type PluginContext, type PluginCounter, type QoS } from '../../lib/plugin-kit/index.js'
import { CoapClient, credentialDigest } from './client.js'
import type { CoapConfig } from './settings.js'

const { CODE, OPTION } = coap

export interface GatewayCounters {
  notified: PluginCounter
  notifyFailed: PluginCounter
  refused: PluginCounter
}

/** The listener's row: clients now, closed and kicked so far. */
export interface ListenerCounts { closed: number, kicked: number }

interface Query { clientId?: string, username?: string, password?: string, qos?: string, retain?: string }

/** MQTT topics are at most 65535 bytes of UTF-8. */
const MAX_TOPIC_BYTES = 0xffff

export class CoapGateway {
  readonly #ctx: PluginContext<CoapConfig>
  readonly #endpoint: coap.CoapEndpoint
  readonly #counters: GatewayCounters
  readonly #clients = new Map<string, CoapClient>()
  /** connects under way, by client id and credentials: a second request waits for the first */
  readonly #connecting = new Map<string, Promise<CoapClient | coap.CoapResponse>>()
  readonly listener: ListenerCounts = { closed: 0, kicked: 0 }

  constructor (ctx: PluginContext<CoapConfig>, endpoint: coap.CoapEndpoint, counters: GatewayCounters) {
    this.#ctx = ctx
    this.#endpoint = endpoint
    this.#counters = counters
  }

  get clients (): number {
    return this.#clients.size
  }

  /** Disconnects every client (a normal DISCONNECT), at unload. */
  disconnectAll (): void {
    for (const client of this.#clients.values()) client.disconnect()
  }

  handle (request: coap.CoapRequest, respond: coap.Respond): void {
    const answer = (response: coap.CoapResponse): void => {
      if (response.code >= CODE.BAD_REQUEST) this.#counters.refused.inc()
      respond(response)
    }
    this.#request(request, answer).catch((err: unknown) => {
      if (err instanceof GatewayLinkClosed) {
        answer({ code: CODE.SERVICE_UNAVAILABLE, payload: 'the connection to the broker closed' })
        return
      }
      this.#ctx.logger.error({ err }, 'CoAP request handling failed')
      answer({ code: CODE.INTERNAL_SERVER_ERROR, payload: 'internal error' })
    })
  }

  async #request (request: coap.CoapRequest, respond: coap.Respond): Promise<void> {
    if (request.path[0] !== 'mqtt') {
      respond({ code: CODE.NOT_FOUND, payload: 'only /mqtt/<topic> is served' })
      return
    }
    const method = request.method
    if (method !== CODE.GET && method !== CODE.PUT && method !== CODE.POST) {
      respond({ code: CODE.METHOD_NOT_ALLOWED, payload: 'PUT or POST publishes, GET observes' })
      return
    }
    const query = parseQuery(request.query)
    if (query.clientId === undefined || query.clientId === '') {
      respond({ code: CODE.BAD_REQUEST, payload: 'c=<clientid> is missing' })
      return
    }
    const topic = request.path.slice(1).join('/')
    const publishing = method !== CODE.GET
    const observing = method === CODE.GET && (request.observe === 0 || request.observe === 1)
    if ((publishing || observing) && !validTopic(topic, publishing)) {
      respond({ code: CODE.BAD_REQUEST, payload: `${JSON.stringify(topic)} is not a valid MQTT topic ${publishing ? 'name' : 'filter'}` })
      return
    }
    const qos = parseQos(query.qos, request.confirmable)
    if (qos === undefined || (query.retain !== undefined && query.retain !== 'true' && query.retain !== 'false')) {
      respond({ code: CODE.BAD_REQUEST, payload: 'qos must be 0, 1 or 2, retain true or false' })
      return
    }
    const client = await this.#client(query, request)
    if (!(client instanceof CoapClient)) {
      respond(client)
      return
    }
    client.touch(request.size, 0)
    if (publishing && client.congested) {
      respond({ code: CODE.SERVICE_UNAVAILABLE, options: [{ number: OPTION.MAX_AGE, value: coap.uintOption(1) }], payload: 'the broker is behind with this client\'s messages: retry later' })
      return
    }
    if (publishing) {
      const code = await client.publish({ topic, payload: request.payload, qos, retain: query.retain === 'true' })
      if (code < 0x80) respond({ code: CODE.CHANGED })
      else if (code === 0x87) respond({ code: CODE.FORBIDDEN, payload: `not authorized to publish to ${topic}` })
      else respond({ code: CODE.BAD_REQUEST, payload: `the message was refused (reason code 0x${code.toString(16)})` })
      return
    }
    if (request.observe === 1) {
      client.cancel(request, topic)
      respond({ code: CODE.CONTENT })
      return
    }
    if (request.observe !== 0) {
      respond({ code: CODE.CONTENT })
      return
    }
    const code = await client.observe(request, topic)
    if (code === 'full') {
      respond({ code: CODE.SERVICE_UNAVAILABLE, payload: `too many observations (coap.max_observations = ${this.#ctx.config['coap.max_observations']})` })
    } else if (code >= 0x80) {
      respond({ code: CODE.FORBIDDEN, payload: code === 0x87 ? `not authorized to subscribe to ${topic}` : `the subscription was refused (reason code 0x${code.toString(16)})` })
    } else {
      const seq = client.registered(request)
      respond({ code: CODE.CONTENT, options: seq === undefined ? [] : [{ number: OPTION.OBSERVE, value: coap.uintOption(seq) }] })
    }
  }

  /** The request's client, connected with its credentials; or the refusal to answer. */
  async #client (query: Query, request: coap.CoapRequest): Promise<CoapClient | coap.CoapResponse> {
    const clientId = query.clientId!
    const digest = credentialDigest(query.username, query.password)
    const existing = this.#clients.get(clientId)
    if (existing !== undefined && existing.open && existing.matches(digest)) return existing
    const key = `${clientId}\x00${digest.toString('hex')}`
    const under = this.#connecting.get(key)
    if (under !== undefined) return await under
    // a connect in flight holds a link and an auth chain call: they count against the limit too (a flood of new credentials for one id as well)
    const max = this.#ctx.config['coap.max_clients']
    if (this.#connecting.size >= max || (existing === undefined && this.#clients.size + this.#connecting.size >= max)) {
      return { code: CODE.SERVICE_UNAVAILABLE, payload: `too many CoAP clients (coap.max_clients = ${this.#ctx.config['coap.max_clients']})` }
    }
    const connecting = this.#connect(clientId, query, digest, request.peer)
    this.#connecting.set(key, connecting)
    try {
      return await connecting
    } finally {
      this.#connecting.delete(key)
    }
  }

  async #connect (clientId: string, query: Query, digest: Buffer, peer: coap.CoapPeer): Promise<CoapClient | coap.CoapResponse> {
    const client = new CoapClient(clientId, query.username, digest, peer, {
      ctx: this.#ctx,
      endpoint: this.#endpoint,
      counters: this.#counters,
      onEnd: (ended, close) => this.#ended(ended, close)
    })
    const connack = await client.connect(query.password)
    if (connack.reasonCode !== 0) return refusal(connack.reasonCode, connack.reason)
    // the engine took the session over from the client's previous link, if any
    this.#clients.set(clientId, client)
    return client
  }

  #ended (client: CoapClient, close: GatewayClose): void {
    if (this.#clients.get(client.clientId) !== client) return
    this.#clients.delete(client.clientId)
    if (close.reason === 'administrative_action') this.listener.kicked++
    else this.listener.closed++
  }
}

function parseQuery (items: string[]): Query {
  const query: Query = {}
  for (const item of items) {
    const at = item.indexOf('=')
    const name = at < 0 ? item : item.slice(0, at)
    const value = at < 0 ? '' : item.slice(at + 1)
    // the first of each wins
    if (name === 'c') query.clientId ??= value
    else if (name === 'u') query.username ??= value
    else if (name === 'p') query.password ??= value
    else if (name === 'qos') query.qos ??= value
    else if (name === 'retain') query.retain ??= value
  }
  return query
}

/** `qos=` of the query; by default a CON request publishes at QoS 1 (the engine's answer tells an ACL refusal), a NON at QoS 0. */
function parseQos (value: string | undefined, confirmable: boolean): QoS | undefined {
  if (value === undefined) return confirmable ? 1 : 0
  return value === '0' || value === '1' || value === '2' ? Number(value) as QoS : undefined
}

function validTopic (topic: string, name: boolean): boolean {
  if (topic === '' || Buffer.byteLength(topic) > MAX_TOPIC_BYTES) return false
  return name ? validTopicName(topic) : validTopicFilter(topic)
}

/** A refused CONNECT as a CoAP answer. */
function refusal (reasonCode: number, reason: string): coap.CoapResponse {
  switch (reasonCode) {
    case 0x86: case 0x87:
      return { code: CODE.UNAUTHORIZED, payload: `not authorized (${reason})` }
    case 0x8a:
      return { code: CODE.FORBIDDEN, payload: `this client is banned (${reason})` }
    case 0x85:
      return { code: CODE.BAD_REQUEST, payload: `the client id is not valid (${reason})` }
    default:
      return { code: CODE.SERVICE_UNAVAILABLE, payload: `the broker refused the client (${reason})` }
  }
}
