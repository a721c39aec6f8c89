// MQTT 5 enhanced authentication (§4.12) for the Aedes patch's `enhancedAuth`
// option: each exchange is run by the `client.enhanced_auth` handler that
// answered its first step. A successful exchange is remembered for the
// client, so the auth chain (lib/access/authenticate.ts) accepts it with its
// superuser and mountpoint answer instead of asking the password plugins.
import type { Client } from 'aedes'
import { runChain, type ChainHandler, type ChainRules } from '../hooks/chain.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { EnhancedAuthAnswer, EnhancedAuthRequest } from '../hooks/types.js'
import type { Logger } from '../log.js'
import { clientInfoOf, clientState } from './client-state.js'
import { REFUSALS } from './refusals.js'

export interface AuthStep { result: 'continue' | 'allow' | 'deny' | 'unknown', data?: Buffer, reasonCode?: number }
type StepCallback = (err: Error | null, step: AuthStep) => void
interface AuthPacket { username?: string, properties?: { authenticationMethod?: string, authenticationData?: Buffer } }

interface Exchange { handler: ChainHandler<EnhancedAuthRequest, EnhancedAuthAnswer>, request: EnhancedAuthRequest }
export interface EnhancedVerdict { superuser: boolean, mountpoint?: string }


export class EnhancedAuth {
  readonly #exchanges = new WeakMap<Client, Exchange>()
  readonly #verdicts = new WeakMap<Client, EnhancedVerdict>()
  /** the handler that does not ignore step 0 owns the exchange; a handler's error denies */
  readonly #chain: ChainRules<EnhancedAuthRequest, EnhancedAuthAnswer, AuthStep, Client> = {
    decide: (answer, request, client, handler) => {
      if (answer === 'ignore') return undefined
      if (answer.result !== 'continue') return this.#end(client, answer)
      request.state = answer.state
      this.#exchanges.set(client, { handler, request })
      return { result: 'continue', data: answer.data }
    },
    failed: (err, request, client) => {
      this.logger.error({ err, clientId: request.client.clientId }, 'enhanced auth handler failed')
      return this.#end(client, { result: 'deny', reason: 'not_authorized' })
    },
    fallback: () => ({ result: 'unknown' })
  }

  constructor (private readonly hooks: HookRegistry, private readonly logger: Logger) {}

  /** The outcome of a successful exchange for this client, taken once by the auth chain. */
  takeVerdict (client: Client): EnhancedVerdict | undefined {
    const verdict = this.#verdicts.get(client)
    this.#verdicts.delete(client)
    return verdict
  }

  begin (client: Client, packet: AuthPacket, cb: StepCallback): void {
    const method = packet.properties?.authenticationMethod ?? ''
    const info = clientState(client)?.info ?? clientInfoOf(client, packet.username)
    const request: EnhancedAuthRequest = { client: info, method, data: packet.properties?.authenticationData, step: 0 }
    void this.#first(client, request).then((step) => cb(null, step), (err: Error) => cb(err, { result: 'deny' }))
  }

  next (client: Client, packet: AuthPacket, cb: StepCallback): void {
    const exchange = this.#exchanges.get(client)
    if (exchange === undefined) return cb(null, { result: 'deny' })
    exchange.request.step++
    exchange.request.data = packet.properties?.authenticationData
    void this.#run(client, exchange).then((step) => cb(null, step), (err: Error) => cb(err, { result: 'deny' }))
  }

  /** Step 0 goes down the chain; a later step only to the handler that owns the exchange. */
  async #first (client: Client, request: EnhancedAuthRequest): Promise<AuthStep> {
    // a plugin being swapped (broker_reloader) holds the chain: its handlers are briefly gone
    if (this.hooks.held('client.enhanced_auth') !== undefined) await this.hooks.whenFree('client.enhanced_auth')
    return await runChain(this.hooks.handlers('client.enhanced_auth'), request, this.#chain, client)
  }

  async #run (client: Client, exchange: Exchange): Promise<AuthStep> {
    return await runChain([exchange.handler], exchange.request, this.#chain, client)
  }

  #end (client: Client, answer: Extract<EnhancedAuthAnswer, { result: 'allow' | 'deny' }>): AuthStep {
    this.#exchanges.delete(client)
    if (answer.result === 'deny') return { result: 'deny', reasonCode: REFUSALS[answer.reason ?? 'not_authorized'].reasonCode }
    this.#verdicts.set(client, { superuser: answer.superuser === true, mountpoint: answer.mountpoint })
    return { result: 'allow', data: answer.data }
  }
}
