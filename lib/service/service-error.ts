// The one error an operation of the node answers with when it cannot do what
// was asked. `kind` says why; the management API maps it to a status and a
// SPEC §7 code, broker_ctl to an exit status. It crosses the cluster RPC as
// JSON (`toJSON` / `fromJSON`), so a refusal on another node arrives as the
// same error with the same kind.

export type ServiceErrorKind = 'not_found' | 'bad_value' | 'bad_topic' | 'not_online' | 'already_started' | 'not_started' | 'failed' | 'badrpc'

const KINDS: ReadonlySet<string> = new Set<ServiceErrorKind>(['not_found', 'bad_value', 'bad_topic', 'not_online', 'already_started', 'not_started', 'failed', 'badrpc'])

/** What travels between nodes. */
export interface ServiceErrorJson { name: 'ServiceError', kind: ServiceErrorKind, message: string }

export class ServiceError extends Error {
  constructor (readonly kind: ServiceErrorKind, message: string) {
    super(message)
    this.name = 'ServiceError'
  }

  toJSON (): ServiceErrorJson {
    return { name: 'ServiceError', kind: this.kind, message: this.message }
  }

  /** Any failure as a ServiceError: itself, or `failed` with its message (an unexpected error on another node). */
  static of (err: unknown): ServiceError {
    if (isServiceError(err)) return err
    return new ServiceError('failed', err instanceof Error ? err.message : String(err))
  }

  /** Rebuilds what `toJSON` wrote; anything else is `failed`. */
  static fromJSON (json: unknown): ServiceError {
    const { kind, message } = (typeof json === 'object' && json !== null ? json : {}) as { kind?: unknown, message?: unknown }
    return new ServiceError(typeof kind === 'string' && KINDS.has(kind) ? kind as ServiceErrorKind : 'failed', typeof message === 'string' ? message : 'failed')
  }
}

/** By its name and kind, not its class: a plugin may reach this module by another path (src or dist). */
export function isServiceError (err: unknown): err is ServiceError {
  return (err as { name?: unknown } | undefined)?.name === 'ServiceError' && typeof (err as { kind?: unknown }).kind === 'string'
}

export const badrpc = (node: string, why: string): ServiceError => new ServiceError('badrpc', `node ${node} did not answer: ${why}`)
