// Who may call what (issue 14 #14). Every row of both route tables names the
// least role it needs. A `viewer` (a v3 application with `role: viewer`, a v2
// user whose tags hold `viewer`) may read; an `administrator` may do
// everything. Applications and users recorded before roles existed, and the
// default ones, are administrators.
import { ApiError, CODE } from './errors.js'

export const ROLES = Object.freeze(['administrator', 'viewer'] as const)
export type Role = typeof ROLES[number]

/** The caller of a request, as its credentials said. */
export interface Caller { id: string, role: Role }

export function allows (caller: Role, needed: Role): boolean {
  return needed === 'viewer' || caller === 'administrator'
}

/** A v2 user's role from its tags: the word `viewer` among them (comma or space separated) makes it a viewer. */
export function roleOfTags (tags: string): Role {
  return tags.split(/[\s,]+/).includes('viewer') ? 'viewer' : 'administrator'
}

/** 403; v2 writes it with code 102 (SPEC §7.2 has no code of its own for it). */
export function forbidden (needed: Role): ApiError {
  return new ApiError(403, { message: `forbidden: this operation needs the ${needed} role` }, CODE.unknown)
}
