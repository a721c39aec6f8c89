// Shared by the broker_auth_jwt tests: load the plugin on a fake context with
// settings validated by its own schema, make keys and sign tokens.
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, type JWTPayload } from 'jose'
import type { Test } from 'tap'
import { clientInfo, fakeContext, type AuthenticateAnswer, type ClientInfo, type FakeContext } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'
import type { JwtConfig } from '../config.js'

export const SECRET = 'a-test-secret-of-at-least-32-bytes!!'

/** The settings as the conf file gives them (strings), through the plugin's schema. */
export function settings (raw: Record<string, string>): JwtConfig {
  const { value, error } = plugin.schema.validate(raw)
  if (error) throw error
  return value
}

export interface Loaded {
  ctx: FakeContext<JwtConfig>
  /** run the client.authenticate handler */
  auth: (password?: string, client?: Partial<ClientInfo>) => Promise<AuthenticateAnswer>
}

export async function load (t: Test, raw: Record<string, string>, root?: string): Promise<Loaded> {
  const base = fakeContext('broker_auth_jwt', settings(raw))
  const ctx = root === undefined ? base : { ...base, root }
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const authenticate = ctx.handler('client.authenticate')
  return {
    ctx,
    auth: async (password, client) => await authenticate({
      client: clientInfo({ username: 'alice', ...client }),
      password: password === undefined ? undefined : Buffer.from(password, 'utf8')
    })
  }
}

/** A temporary folder removed when `t` ends. */
export function tempDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'broker-auth-jwt-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export interface KeyPair { privateKey: KeyObject, publicKey: KeyObject, pemFile: string }

/** An RSA 2048 or EC P-256 key pair whose public key PEM is written to `dir/<name>`. */
export function keyPair (kind: 'rsa' | 'ec', dir: string, name = `${kind}.pem`): KeyPair {
  const { privateKey, publicKey } = kind === 'rsa'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const pemFile = join(dir, name)
  writeFileSync(pemFile, publicKey.export({ type: 'spki', format: 'pem' }))
  return { privateKey, publicKey, pemFile }
}

export const now = (): number => Math.floor(Date.now() / 1000)

export async function sign (claims: JWTPayload, alg: string, key: KeyObject | Uint8Array | string = SECRET): Promise<string> {
  const k = typeof key === 'string' ? new TextEncoder().encode(key) : key
  return await new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(k)
}

export const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
