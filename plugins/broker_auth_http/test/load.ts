// Loads the plugin on a fake context with settings validated by its schema,
// and unloads it when the test ends.
import { Writable } from 'node:stream'
import pino from 'pino'
import type { Test } from 'tap'
import { fakeContext, type FakeContext, type HookHandlers } from '../../../lib/plugin-kit/testing.js'
import plugin, { type AuthHttpConfig } from '../index.js'

export interface Loaded {
  ctx: FakeContext<AuthHttpConfig>
  /** releases the load as the host does (everything it registered, newest first) */
  unload: () => Promise<void>
  authenticate: HookHandlers['client.authenticate']
  /** the check_acl handler; throws if the plugin added none */
  checkAcl: () => HookHandlers['client.check_acl']
  /** log records written (JSON objects), when `logs` was asked for */
  logs: Array<Record<string, unknown>>
}

export function validate (settings: Record<string, string>): AuthHttpConfig {
  const { value, error } = plugin.schema.validate(settings)
  if (error) throw error
  return value
}

export async function load (t: Test, settings: Record<string, string>): Promise<Loaded> {
  const logs: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write (chunk: Buffer, _encoding, done) {
      logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>)
      done()
    }
  })
  const ctx: FakeContext<AuthHttpConfig> = { ...fakeContext('broker_auth_http', validate(settings)), logger: pino({ level: 'debug' }, sink) }
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  return {
    ctx,
    unload: ctx.unload,
    logs,
    authenticate: ctx.handler('client.authenticate'),
    checkAcl: () => ctx.handler('client.check_acl')
  }
}
