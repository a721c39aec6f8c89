// The Aedes internals the node reads, typed in one place so that an engine
// upgrade that moves them breaks here (and in the tests), not silently.
import type { Aedes, AedesPublishPacket, Client } from 'aedes'

export interface EngineClient extends Client {
  /** topic filter → subscription (null-prototype map, see the Aedes patch) */
  subscriptions: Record<string, { qos: number }>
}

interface EngineWithClients { clients: Record<string, EngineClient | undefined> }

export function engineClient (engine: Aedes, clientId: string): EngineClient | undefined {
  return (engine as unknown as EngineWithClients).clients[clientId]
}

export function engineClients (engine: Aedes): EngineClient[] {
  return Object.values((engine as unknown as EngineWithClients).clients).filter((c): c is EngineClient => c !== undefined)
}

/**
 * `messageDropped` (added by the Aedes patch): a message was not delivered to
 * a session because its queue was full (`reason` is `queue_full`).
 */
export function onMessageDropped (engine: Aedes, listener: (packet: AedesPublishPacket, client: { id: string }, reason: string) => void): void {
  (engine as unknown as NodeJS.EventEmitter).on('messageDropped', listener)
}
