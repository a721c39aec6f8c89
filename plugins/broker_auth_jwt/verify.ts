// Token checks: the verification keys built from the settings, the
// "is this a JWT at all" test, signature and time claims (jose), and the
// verify_claims comparison.
import { createPublicKey, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import { jwtVerify, type JWTPayload } from 'jose'
import type { ClientInfo } from '../../lib/plugin-kit/index.js'
import type { JwtConfig } from './config.js'

/** Seconds of clock skew accepted on `exp`, `nbf` and `iat`. */
export const CLOCK_TOLERANCE_S = 5

/** A key and the only algorithms it may verify (no HMAC with a public key: algorithm confusion). */
export interface VerifyKey {
  algorithms: string[]
  key: KeyObject | Uint8Array
}

const HMAC_ALGORITHMS = Object.freeze(['HS256', 'HS384', 'HS512'])
const RSA_ALGORITHMS = Object.freeze(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'])
const EC_ALGORITHMS: Readonly<Record<string, string>> = Object.freeze({ prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' })

export async function loadKeys (config: JwtConfig, root: string): Promise<VerifyKey[]> {
  const keys: VerifyKey[] = []
  const secret = config['auth.jwt.secret']
  if (secret !== undefined) keys.push({ algorithms: [...HMAC_ALGORITHMS], key: new TextEncoder().encode(secret) })
  const pubkey = config['auth.jwt.pubkey']
  if (pubkey !== undefined) keys.push(await loadPublicKey(isAbsolute(pubkey) ? pubkey : resolve(root, pubkey)))
  return keys
}

async function loadPublicKey (path: string): Promise<VerifyKey> {
  let pem: string
  try {
    pem = await readFile(path, 'utf8')
  } catch (err) {
    throw new Error(`auth.jwt.pubkey: cannot read ${path}: ${(err as Error).message}`, { cause: err })
  }
  let key: KeyObject
  try {
    key = createPublicKey(pem)
  } catch (err) {
    throw new Error(`auth.jwt.pubkey: ${path} is not a PEM public key: ${(err as Error).message}`, { cause: err })
  }
  const type = key.asymmetricKeyType
  const curve = key.asymmetricKeyDetails?.namedCurve
  const ec = type === 'ec' && curve !== undefined ? EC_ALGORITHMS[curve] : undefined
  if (type === 'rsa') return { algorithms: [...RSA_ALGORITHMS], key }
  if (ec !== undefined) return { algorithms: [ec], key }
  throw new Error(`auth.jwt.pubkey: ${path} holds a ${type ?? 'unknown'}${curve !== undefined ? ` ${curve}` : ''} key; an RSA or EC P-256/P-384/P-521 public key is expected`)
}

export type Verdict =
  | { kind: 'not_jwt' }
  | { kind: 'invalid', why: string }
  | { kind: 'valid', claims: JWTPayload }

const BASE64URL = /^[A-Za-z0-9_-]*$/

/** The JOSE header of a compact JWS, or undefined when `token` is not one. */
export function jwtHeader (token: string): Record<string, unknown> | undefined {
  const parts = token.split('.')
  if (parts.length !== 3 || !parts.every((p) => BASE64URL.test(p))) return undefined
  try {
    const header: unknown = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'))
    return isRecord(header) ? header : undefined
  } catch {
    return undefined
  }
}

/** `requireExp`: a token without an `exp` claim is invalid. */
export async function verifyToken (token: string, keys: VerifyKey[], requireExp = false): Promise<Verdict> {
  const header = jwtHeader(token)
  if (header === undefined) return { kind: 'not_jwt' }
  const alg = header.alg
  if (typeof alg !== 'string') return { kind: 'invalid', why: 'no alg in the header' }
  // `none` (any case) is never in a key's list: unsigned tokens are refused.
  const key = keys.find((k) => k.algorithms.includes(alg))
  if (key === undefined) return { kind: 'invalid', why: `no key configured for alg ${alg}` }
  try {
    const { payload } = await jwtVerify(token, key.key, { algorithms: key.algorithms, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: requireExp ? ['exp'] : [] })
    // jose checks exp and nbf; EMQ X also refuses an iat in the future.
    if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S) {
      return { kind: 'invalid', why: 'iat is in the future' }
    }
    return { kind: 'valid', claims: payload }
  } catch (err) {
    return { kind: 'invalid', why: (err as Error).message }
  }
}

/**
 * The first verify_claims entry the token fails, or undefined when all hold.
 * A claim must be a string equal to the expected value after `%u`/`%c`
 * substitution; a missing claim, another type, or a `%u` without a username fails.
 */
export function failedClaim (claims: JWTPayload, expected: Array<[string, string]>, client: ClientInfo): string | undefined {
  for (const [claim, pattern] of expected) {
    if (pattern.includes('%u') && (client.username === undefined || client.username === '')) return claim
    const want = pattern.replace(/%[uc]/g, (v) => v === '%u' ? client.username! : client.clientId)
    if (claims[claim] !== want) return claim
  }
  return undefined
}

export function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
