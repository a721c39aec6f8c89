// What every group of operations is built from: the node's parts, the client
// bookkeeping, and the connected clients as the engine holds them.
import type { Aedes } from 'aedes'
import type { AccessControl } from '../access/access-control.js'
import type { BannedList } from '../access/banned.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { Config } from '../config/store.js'
import { engineClient, engineClients, type EngineClient } from '../engine/internals.js'
import type { SessionQueues } from '../engine/session-queue.js'
import type { StoreIndex } from '../engine/store-index.js'
import type { AedesPersistence } from '../engine/store.js'
import type { Listener } from '../listeners/index.js'
import type { PluginHost } from '../plugins/host.js'
import type { Observability } from '../sys/observability.js'
import type { Cluster } from '../cluster/cluster.js'
import type { NodeLifecycle } from '../node-state.js'
import type { Drain } from './drain.js'
import { ClientTracking } from './client-tracking.js'

export interface NodeParts {
  config: Config
  engine: Aedes
  /** the hook points: the node's own publishes go through `message.publish` too */
  hooks: HookRegistry
  access: AccessControl
  banned: BannedList
  queues: SessionQueues
  observability: Observability
  /** which client ids have stored subscriptions: the persistent sessions, offline ones included */
  storeIndex: StoreIndex
  persistence: Pick<AedesPersistence, 'subscriptionsByClient'>
  /** built after the operations (the host is given them), hence read late */
  plugins: () => PluginHost | undefined
  /** opened after the plugins boot, hence read late */
  listeners: () => Listener[]
  /** starting → running → draining → stopping (lib/node-state.ts) */
  lifecycle: NodeLifecycle
  /** the store can be used: LevelDB open (`db.status`), and in cluster mode Redis ready (the backend's `available`) */
  storeAvailable: () => boolean
  drain: Drain
  /** the expiry interval (seconds) stored with an offline session's restored timer (lib/engine/session-timers.ts) */
  restoredExpiryInterval: (clientId: string) => number | undefined
}

export class OperationContext {
  readonly tracking: ClientTracking

  constructor (readonly parts: NodeParts, readonly cluster: () => Cluster | undefined) {
    this.tracking = new ClientTracking(parts.engine, parts.config)
  }

  get name (): string {
    return this.parts.config.get('node.name')
  }

  /** the clients connected now */
  online (): EngineClient[] {
    return engineClients(this.parts.engine).filter((c) => this.tracking.isOnline(c))
  }

  onlineClient (clientId: string): EngineClient | undefined {
    const client = engineClient(this.parts.engine, clientId)
    return client !== undefined && this.tracking.isOnline(client) ? client : undefined
  }
}
