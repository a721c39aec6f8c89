// What a handler answers when it cannot do what was asked: a status and a
// JSON body (SPEC §7.1: `{message}`; EMQ X's codes where they apply). Each
// API writes it in its own shape (apis.ts).
import type Joi from 'joi'

export class ApiError extends Error {
  /** 405: the methods the path is served for (the `Allow` header) */
  allow?: string[]

  /**
   * `envelopeCode`: the §7.2 code of a refusal whose v3 body shows none
   * (the v2 envelope always carries a code; without either it is 102).
   */
  constructor (readonly status: number, readonly body: { code?: number, message: string }, readonly envelopeCode?: number) {
    super(body.message)
    this.name = 'ApiError'
  }
}

/** EMQ X's v3 codes (research notes; SPEC §7.2 table). */
export const CODE = {
  badRpc: 101,
  unknown: 102,
  wrongCredentials: 103,
  emptyCredentials: 104,
  noSuchUser: 105,
  adminUser: 106,
  missing: 107,
  wrongType: 108,
  notJson: 109,
  alreadyStarted: 110,
  alreadyStopped: 111,
  notOnline: 112,
  userExists: 113,
  wrongOldPassword: 114,
  badTopic: 115
} as const

export const notFound = (message: string): ApiError => new ApiError(404, { message })
export const badRequest = (code: number, message: string): ApiError => new ApiError(400, { code, message })

/** A request's query or body refused by its joi schema: 107 for a missing field, else 108. */
export function validationError (err: Joi.ValidationError | undefined, source: string): ApiError {
  const detail = err?.details?.[0]
  const code = detail?.type === 'any.required' ? CODE.missing : CODE.wrongType
  return new ApiError(400, { code, message: detail?.message ?? `bad ${source}` })
}
