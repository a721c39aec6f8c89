// Observability of one node (issue 5): metrics (SPEC §2.11), statistics
// (§2.12), $SYS topics (§6), alarms and the system monitor. The node creates
// it before the engine (its packet observers go into the engine's options)
// and attaches it once the engine and listeners exist.
import type { Aedes } from 'aedes'
import type { Config } from '../config/store.js'
import type { EngineCallbacks } from '../engine/create.js'
import type { Retainer } from '../engine/retainer.js'
import type { SessionQueues } from '../engine/session-queue.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { Listener } from '../listeners/index.js'
import type { Logger } from '../log.js'

export interface ObservedParts {
  engine: Aedes
  listeners: Listener[]
  retainer: Retainer
  queues: SessionQueues
  hooks: HookRegistry
}

export class Observability {
  constructor (readonly config: Config, readonly logger: Logger) {}

  /** Packet observers for the engine's options. */
  get engineCallbacks (): Pick<EngineCallbacks, 'packetIn' | 'packetOut' | 'packetMissed'> {
    return {}
  }

  attach (_parts: ObservedParts): void {}

  stop (): void {}
}
