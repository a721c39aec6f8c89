// Unit tests with a fake context: no node, no sockets. The plugin's hook is
// called directly and what it published is read back from the context.
import t, { type Test } from 'tap'
import { clientInfo, fakeContext, type FakeContext } from '../../../lib/plugin-kit/testing.js'
import plugin, { ALARM_ID, schema, type TemplateConfig } from '../index.js'

/** Settings as the host would pass them: validated and converted by the schema. */
function settings (raw: Record<string, string> = {}): TemplateConfig {
  const { error, value } = schema.validate(raw)
  if (error) throw error
  return value
}

async function loaded (t: Test, raw: Record<string, string> = {}): Promise<FakeContext<TemplateConfig>> {
  const ctx = fakeContext(plugin.name, settings(raw))
  await plugin.load(ctx)
  t.teardown(() => ctx.unload())
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
  ctx.broker.publish = async () => { throw new Error('topic has too many levels') }
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

t.test('broker_ctl template greetings counts the greetings of this load; reset starts again', async (t) => {
  const ctx = await loaded(t)
  const command = ctx.commands.added.get('template')
  if (command === undefined) throw new Error('no template command')
  for (const id of ['a', 'b', 'c']) ctx.handler('client.connected')(clientInfo({ clientId: id }))
  t.same(await command.run(['greetings']), { text: 'greetings: 3', data: { greetings: 3 } })
  t.same(await command.run(['reset']), { text: 'ok', data: { greetings: 0 } })
  t.same(await command.run(['greetings']), { text: 'greetings: 0', data: { greetings: 0 } })
  await t.rejects(async () => await command.run(['nonsense']), /template greetings \| template reset/)
})

t.test('a second load counts on its own (no module state)', async (t) => {
  const first = await loaded(t)
  const second = await loaded(t)
  first.handler('client.connected')(clientInfo({ clientId: 'a' }))
  t.same(await second.commands.added.get('template')?.run(['greetings']), { text: 'greetings: 0', data: { greetings: 0 } })
})

t.test('GET /template/greetings answers the count and the topic', async (t) => {
  const ctx = await loaded(t, { 'template.greeting_topic': 'hi' })
  ctx.handler('client.connected')(clientInfo({ clientId: 'a' }))
  const route = ctx.routes.added.get('GET /template/greetings')
  t.equal(route?.access, 'read', 'open to viewers')
  t.same(await route?.handler({ params: {}, query: {}, payload: undefined }), { greetings: 1, topic: 'hi' })
})

t.test('more than template.alarm_after greetings in a minute raise the alarm', async (t) => {
  const ctx = await loaded(t, { 'template.alarm_after': '2' })
  ctx.handler('client.connected')(clientInfo({ clientId: 'a' }))
  ctx.handler('client.connected')(clientInfo({ clientId: 'b' }))
  t.notOk(ctx.raised.has(ALARM_ID), 'two are not too many')
  ctx.handler('client.connected')(clientInfo({ clientId: 'c' }))
  t.match(ctx.raised.get(ALARM_ID), { severity: 'warning', summary: 'more than 2 clients connected within a minute' })
})

t.test('unload releases everything the load registered', async (t) => {
  const ctx = fakeContext(plugin.name, settings({ 'template.alarm_after': '1' }))
  await plugin.load(ctx)
  ctx.handler('client.connected')(clientInfo({ clientId: 'a' }))
  ctx.handler('client.connected')(clientInfo({ clientId: 'b' }))
  t.ok(ctx.raised.has(ALARM_ID))
  t.ok(ctx.registrations() > 0)
  await ctx.unload()
  t.equal(ctx.registrations(), 0)
  t.same([...ctx.added.values()].flat(), [], 'no hook left')
  t.equal(ctx.commands.added.size, 0, 'no command left')
  t.equal(ctx.routes.added.size, 0, 'no route left')
  t.equal(ctx.raised.size, 0, 'no alarm left')
})
