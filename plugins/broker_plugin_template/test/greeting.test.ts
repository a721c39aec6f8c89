// Unit tests with a fake context: no node, no sockets. The plugin's hook is
// called directly and what it published is read back from the context.
import t, { type Test } from 'tap'
import { clientInfo, fakeContext, type FakeContext } from '../../../lib/plugin-kit/testing.js'
import plugin, { schema, type TemplateConfig } from '../index.js'

/** Settings as the host would pass them: validated and converted by the schema. */
function settings (raw: Record<string, string> = {}): TemplateConfig {
  const { error, value } = schema.validate(raw)
  if (error) throw error
  return value
}

async function loaded (t: Test, raw: Record<string, string> = {}): Promise<FakeContext<TemplateConfig>> {
  const ctx = fakeContext(plugin.name, settings(raw))
  await plugin.load(ctx)
  t.teardown(() => plugin.unload())
  return ctx
}

t.test('the default export is a plugin named after its folder', async (t) => {
  t.equal(plugin.name, 'broker_plugin_template')
  t.equal(plugin.version, '0.1.0')
  t.type(plugin.description, 'string')
})

t.test('client.connected publishes the greeting to <greeting_topic>/<clientId>', async (t) => {
  const ctx = await loaded(t, { 'template.greeting_topic': 'hi/there' })
  t.same([...ctx.added.keys()], ['client.connected'], 'one hook, nothing else')
  ctx.handler('client.connected')(clientInfo({ clientId: 'dev-7' }))
  t.same(ctx.published, [{ topic: 'hi/there/dev-7', payload: 'hello dev-7', qos: 0 }])
})

t.test('greeting_topic defaults to greetings', async (t) => {
  const ctx = await loaded(t)
  ctx.handler('client.connected')(clientInfo({ clientId: 'c1' }))
  t.same(ctx.published, [{ topic: 'greetings/c1', payload: 'hello c1', qos: 0 }])
})

t.test('a client id with a wildcard gets no greeting', async (t) => {
  const ctx = await loaded(t)
  ctx.handler('client.connected')(clientInfo({ clientId: 'a+b' }))
  ctx.handler('client.connected')(clientInfo({ clientId: 'a#' }))
  t.same(ctx.published, [])
})

t.test('a failed publish is logged, not thrown or left unhandled', async (t) => {
  const ctx = await loaded(t)
  const warned: unknown[] = []
  ctx.logger.warn = ((...args: unknown[]) => { warned.push(args) }) as typeof ctx.logger.warn
  ctx.publish = async () => { throw new Error('topic has too many levels') }
  t.doesNotThrow(() => ctx.handler('client.connected')(clientInfo({ clientId: 'c1' })))
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(warned.length, 1, 'one warning')
  t.match(warned[0], [{ err: { message: 'topic has too many levels' }, clientId: 'c1' }, 'greeting not published'])
})

t.test('the schema refuses wildcards, an empty topic and unknown keys', async (t) => {
  t.throws(() => settings({ 'template.greeting_topic': 'a/#' }), /template\.greeting_topic/)
  t.throws(() => settings({ 'template.greeting_topic': 'a/+/b' }), /template\.greeting_topic/)
  t.throws(() => settings({ 'template.greeting_topic': '' }), /not allowed to be empty/)
  t.throws(() => settings({ 'template.greting_topic': 'x' }), /"template\.greting_topic" is not allowed/)
})
