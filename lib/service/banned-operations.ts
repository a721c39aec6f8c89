// Banned entries (SPEC §2.16): list, add, remove.
import { BANNED_KINDS, DEFAULT_BAN_SECONDS, type BannedEntry, type BannedKind } from '../access/banned.js'
import type { OperationContext } from './context.js'
import { ServiceError } from './service-error.js'

/** What a caller sends to ban a client; `until` defaults to now + 5 minutes, `by` to `undefined`. */
export interface BanRequest { who: string, as: BannedKind, reason?: string, desc?: string, by?: string, until?: number }

export interface BannedOperations {
  banned: () => BannedEntry[]
  ban: (request: BanRequest) => Promise<BannedEntry>
  /** False when there was no such entry. */
  unban: (as: BannedKind, who: string) => Promise<boolean>
}

export function bannedOperations ({ parts }: OperationContext): BannedOperations {
  return {
    banned: () => parts.banned.list(),
    ban: async (request) => {
      if (!(BANNED_KINDS as readonly string[]).includes(request.as)) throw new ServiceError('bad_value', `as must be one of ${BANNED_KINDS.join(', ')}`)
      const entry: BannedEntry = {
        who: request.who,
        as: request.as,
        reason: request.reason ?? '',
        desc: request.desc ?? '',
        by: request.by ?? 'undefined',
        until: request.until ?? Math.floor(Date.now() / 1000) + DEFAULT_BAN_SECONDS
      }
      await parts.banned.add(entry)
      return entry
    },
    unban: async (as, who) => await parts.banned.remove(as, who)
  }
}
