// Test helpers for this plugin: validated settings and a context over a given store.
import { fakeContext, memoryStore, type CredentialApi, type CredentialConfig, type FakeContext, type PluginStore } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'

/** Settings as the host would pass them: validated and converted by the schema (throws on an error). */
export function settings (raw: Record<string, string>): CredentialConfig {
  const { error, value } = plugin.schema.validate(raw)
  if (error) throw error
  return value
}

/** A fresh fake context; pass `store` to share one store across loads. */
export function context (raw: Record<string, string> = {}, store: PluginStore = memoryStore()): FakeContext<CredentialConfig> {
  return { ...fakeContext(plugin.name, settings(raw)), store }
}

/** The table a load offers (`ctx.provide`), as broker_ctl and the management API call it. */
export function api (ctx: FakeContext<CredentialConfig>): CredentialApi {
  return ctx.provided<CredentialApi>()
}

export const TWO_CLIENTS = {
  'auth.client.1.clientid': 'dev-1',
  'auth.client.1.password': 'dev-1-pw',
  'auth.client.2.clientid': 'dev-2',
  'auth.client.2.password': 'dev 2 pw #1'
}
