// Where the node is in its life (starting → running → draining → stopping →
// stopped) and what that means for health: the one place /status, the drain
// and broker_ctl read it. Created before anything else in BrokerNode.start,
// because plugins (the management API among them) are loaded while starting.

export type NodeState = 'starting' | 'running' | 'draining' | 'stopping' | 'stopped'

/** Why the node does not serve: its state when not running, `store_unavailable`, and (cluster) the link's reasons. */
export type HealthReason = Exclude<NodeState, 'running'> | 'store_unavailable' | (string & {})

/** `reasons` empty: the node accepts MQTT (and, for readiness, is fit to be sent clients). */
export interface Health { status: NodeState, reasons: HealthReason[] }

export class NodeLifecycle {
  #state: NodeState = 'starting'
  readonly #listeners = new Set<(state: NodeState) => void>()

  get state (): NodeState {
    return this.#state
  }

  /** Moves on; a node never goes back (a drain is left by stopping, not by resuming). */
  set (state: NodeState): void {
    if (state === this.#state) return
    this.#state = state
    for (const listener of this.#listeners) listener(state)
  }

  onChange (listener: (state: NodeState) => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }
}

/** The health verdict from the state and the checks: the state first, then what the checks found. */
export function healthOf (state: NodeState, checks: { storeAvailable: boolean, more?: readonly string[] }): Health {
  const reasons: HealthReason[] = []
  if (state !== 'running') reasons.push(state)
  if (!checks.storeAvailable) reasons.push('store_unavailable')
  reasons.push(...(checks.more ?? []))
  return { status: state, reasons }
}
