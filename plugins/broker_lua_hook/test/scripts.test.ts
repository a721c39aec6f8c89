// The script folder and the hook adapters without a node: script files in a
// temporary folder, the luahook command, and the answers the hooks make of
// what scripts return (rewrite, drop, bad answers, errors, an infinite loop).
import t from 'tap'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import { luahookCommand } from '../command.js'
import { DROPPED_FILTER, DROPPED_PUBLISH, luaHooks } from '../hooks.js'
import type { ScriptEnv } from '../script.js'
import { ScriptSet, scriptName } from '../scripts.js'

const MB = 1024 * 1024

function setUp (timeoutMs = 500): { dir: string, set: ScriptSet, warnings: Array<Record<string, unknown>>, printed: string[], write: (name: string, text: string) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'lua-scripts-'))
  const warnings: Array<Record<string, unknown>> = []
  const printed: string[] = []
  const timers = new Set<NodeJS.Timeout>()
  const env = (): ScriptEnv => ({
    timeoutMs: () => timeoutMs,
    memoryMax: () => 8 * MB,
    warn: (fields, message) => warnings.push({ ...fields, message }),
    print: (fields) => printed.push(String(fields.line)),
    later: (run, ms) => {
      const timer = setTimeout(() => { timers.delete(timer); run() }, ms)
      timers.add(timer)
      return { cancel: () => { clearTimeout(timer); timers.delete(timer) } }
    }
  })
  const set = new ScriptSet(dir, env)
  t.teardown(() => {
    set.close()
    for (const timer of timers) clearTimeout(timer)
    rmSync(dir, { recursive: true, force: true })
  })
  return { dir, set, warnings, printed, write: (name, text) => writeFileSync(join(dir, name), text) }
}

const client = clientInfo({ clientId: 'c1', username: 'u1' })
const message = (topic: string, payload = 'p', qos: 0 | 1 | 2 = 1, retain = false) => ({ topic, payload: Buffer.from(payload), qos, retain, from: 'c1', client })

const REWRITE = `
function on_message_publish(clientid, username, topic, payload, qos, retain)
  if topic == "drop/me" then return false end
  if topic:sub(1, 3) == "rw/" then return "new/" .. topic:sub(4), payload .. "|" .. clientid .. "|" .. username, 2, true end
  return nil
end
function register_hook() return "on_message_publish", "on_not_a_hook", 42 end`

t.test('script names are plain file names in the folder', async (t) => {
  t.equal(scriptName('a'), 'a')
  t.equal(scriptName('a.lua'), 'a')
  t.equal(scriptName('my-script_2.v1'), 'my-script_2.v1')
  for (const bad of ['../x', '..', '.hidden', 'a/b', 'a\\b', '', '/etc/passwd', 'x'.repeat(201), 'a b', '.lua']) {
    t.throws(() => scriptName(bad), { code: 'bad_name' }, JSON.stringify(bad))
  }
})

t.test('loadAll loads every .lua in name order, not .lua.x; unknown hook names are discarded', async (t) => {
  const { set, write, warnings } = setUp()
  write('b.lua', REWRITE)
  write('a.lua', 'function on_client_connected() end function register_hook() return "on_client_connected" end')
  write('off.lua.x', 'error("never loaded")')
  write('broken.lua', 'this is not lua')
  write('notes.txt', 'ignored')
  const failures: string[] = []
  await set.loadAll((name, why) => failures.push(`${name}: ${why}`))
  t.match(failures, [/^broken: broken\.lua: \[string "@broken\.lua"\]|^broken: broken\.lua: broken\.lua:1:/])
  t.match(await set.list(), [
    { name: 'a', status: 'loaded', hooks: ['on_client_connected'] },
    { name: 'b', status: 'loaded', hooks: ['on_message_publish'] },
    { name: 'broken', status: 'failed', error: /broken\.lua/ },
    { name: 'off', file: 'off.lua.x', status: 'disabled' }
  ])
  t.match(warnings, [{ script: 'b', hook: 'on_not_a_hook' }, { script: 'b', hook: '42' }])
})

t.test('on_message_publish rewrites topic, payload, qos and retain, or drops; nil leaves the message', async (t) => {
  const { set, write } = setUp()
  write('rw.lua', REWRITE)
  await set.load('rw')
  const drops: string[] = []
  const hooks = luaHooks(set, (script) => drops.push(script.name))
  t.same(hooks.publish(message('rw/a/b', 'hello')), { topic: 'new/a/b', payload: Buffer.from('hello|c1|u1'), retain: true })
  t.same(hooks.publish(message('drop/me')), { stop: DROPPED_PUBLISH, reason: 'dropped by lua script rw' })
  t.same(drops, ['rw'])
  t.equal(hooks.publish(message('other')), undefined)
  t.equal(hooks.publish(message('$SYS/rw/x')), undefined, '$ topics are not given to scripts')
  const binary = Buffer.from([0, 0xff, 0x80])
  t.same(hooks.publish({ ...message('rw/bin'), payload: binary }), { topic: 'new/bin', payload: Buffer.concat([binary, Buffer.from('|c1|u1')]), retain: true }, 'payload bytes kept')
  t.same(hooks.publish({ topic: 'rw/node', payload: Buffer.from('x'), qos: 0, retain: false }), { topic: 'new/node', payload: Buffer.from('x||'), retain: true }, 'a message of the node: empty client id and user name')
})

t.test('scripts chain in name order; a bad answer is refused and counted, the message goes on', async (t) => {
  const { set, write, warnings } = setUp()
  write('1-first.lua', 'function on_message_publish(c, u, topic, p, q, r) return topic .. "/one", p, q, r end function register_hook() return "on_message_publish" end')
  write('2-bad.lua', 'function on_message_publish(c, u, topic, p, q, r) if topic:find("wild") then return "a/#", p, q, r end return topic, p, 7, r end function register_hook() return "on_message_publish" end')
  write('3-last.lua', 'function on_message_publish(c, u, topic, p, q, r) return topic .. "/three", p, q, 1 end function register_hook() return "on_message_publish" end')
  await set.loadAll(() => {})
  const hooks = luaHooks(set, () => {})
  t.same(hooks.publish(message('t')), { topic: 't/one/three', payload: Buffer.from('p'), retain: true })
  t.same(hooks.publish(message('wild')), { topic: 'wild/one/three', payload: Buffer.from('p'), retain: true }, 'a wildcard topic is not taken')
  t.match((await set.list()).find((r) => r.name === '2-bad'), { stats: { calls: 2, errors: 2 } })
  t.match(warnings, [{ script: '2-bad', function: 'on_message_publish' }, { script: '2-bad' }])
})

t.test('on_client_subscribe drops or renames a filter; on_client_unsubscribe renames', async (t) => {
  const { set, write } = setUp()
  write('sub.lua', `
    function on_client_subscribe(clientid, username, topic)
      if topic == "secret/#" then return false end
      if topic == "mine" then return "users/" .. username .. "/#" end
      if topic == "bad" then return "a/#/b" end
    end
    function on_client_unsubscribe(clientid, username, topic)
      if topic == "mine" then return "users/" .. username .. "/#" end
      return false
    end
    function register_hook() return "on_client_subscribe", "on_client_unsubscribe" end`)
  await set.load('sub.lua')
  const hooks = luaHooks(set, () => {})
  t.same(hooks.subscribe(client, { topic: 'secret/#', qos: 0 }), { stop: DROPPED_FILTER })
  t.same(hooks.subscribe(client, { topic: 'mine', qos: 0 }), { topic: 'users/u1/#' })
  t.equal(hooks.subscribe(client, { topic: 'other/+', qos: 0 }), undefined)
  t.equal(hooks.subscribe(client, { topic: 'bad', qos: 0 }), undefined, 'an invalid filter is not taken')
  t.equal(hooks.subscribe(client, { topic: '$share/g/secret/#', qos: 0 }), undefined, '$ filters are not given to scripts')
  t.equal(hooks.unsubscribe(client, 'mine'), 'users/u1/#')
  t.equal(hooks.unsubscribe(client, 'other'), undefined)
})

t.test('notifications get EMQ X arguments; print goes to the log', async (t) => {
  const { set, write, printed } = setUp()
  write('n.lua', `
    function on_client_connected(c, u, rc) print("connected", c, u, rc) end
    function on_client_disconnected(c, u, reason) print("disconnected", c, u, reason) end
    function on_session_subscribed(c, u, t) print("subscribed", c, t) end
    function on_session_unsubscribed(c, u, t) print("unsubscribed", c, t) end
    function on_message_delivered(c, u, t, p, q, r) print("delivered", c, t, p, q, r) end
    function on_message_acked(c, u, t, p, q, r) print("acked", c, t, p, q, r) end
    function register_hook()
      return "on_client_connected", "on_client_disconnected", "on_session_subscribed", "on_session_unsubscribed", "on_message_delivered", "on_message_acked"
    end`)
  await set.load('n')
  const hooks = luaHooks(set, () => {})
  const anonymous = clientInfo({ clientId: 'anon' })
  hooks.connected(anonymous)
  hooks.disconnected(client, 'normal')
  hooks.sessionSubscribed(client, 'a/+')
  hooks.sessionSubscribed(client, '$SYS/#')
  hooks.sessionUnsubscribed(client, 'a/+')
  hooks.delivered(client, message('d', 'x', 2, true))
  hooks.acked(client, message('d', 'y', 1))
  t.same(printed, ['connected\tanon\t\t0', 'disconnected\tc1\tu1\tnormal', 'subscribed\tc1\ta/+', 'unsubscribed\tc1\ta/+', 'delivered\tc1\td\tx\t2\ttrue', 'acked\tc1\td\ty\t1\tfalse'])
})

t.test('an erroring script and an infinite loop are skipped; the others still run; the loop is restarted', async (t) => {
  const { set, write, warnings } = setUp(200)
  write('a-error.lua', 'function on_message_publish() error("boom") end function register_hook() return "on_message_publish" end')
  write('b-loop.lua', 'n = 0 function on_message_publish(c, u, t, p, q, r) n = n + 1 if t == "spin" then while true do end end return t, p .. n, q, r end function register_hook() return "on_message_publish" end')
  write('c-good.lua', 'function on_message_publish(c, u, t, p, q, r) return t, p .. "!", q, r end function register_hook() return "on_message_publish" end')
  await set.loadAll(() => {})
  const hooks = luaHooks(set, () => {})
  t.same(hooks.publish(message('x', 'p')), { topic: 'x', payload: Buffer.from('p1!'), retain: false })
  t.same(hooks.publish(message('spin', 'p')), { topic: 'spin', payload: Buffer.from('p!'), retain: false }, 'the loop is skipped at the deadline')
  t.match(warnings.filter((w) => w.script === 'b-loop'), [{ function: 'on_message_publish', pauseMs: 0, message: /ran past lua\.hook\.timeout/ }])
  t.match((await set.list()).find((r) => r.name === 'b-loop'), { stats: { timeouts: 1 } })
  const status = async (): Promise<string | undefined> => (await set.list()).find((r) => r.name === 'b-loop')?.status
  const untilLoaded = async (): Promise<void> => {
    const deadline = Date.now() + 30_000
    while (await status() !== 'loaded' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await untilLoaded()
  // a second timeout in a row (no call went well in between) pauses it for a second
  hooks.publish(message('spin'))
  t.match(warnings.filter((w) => w.script === 'b-loop').at(-1), { pauseMs: 1000 })
  t.equal(await status(), 'restarting')
  t.same(hooks.publish(message('x', 'p')), { topic: 'x', payload: Buffer.from('p!'), retain: false }, 'skipped while it restarts')
  await untilLoaded()
  t.same(hooks.publish(message('x', 'p')), { topic: 'x', payload: Buffer.from('p1!'), retain: false }, 'built again from its file: its globals start again')
  t.match((await set.list()).find((r) => r.name === 'a-error'), { status: 'loaded', stats: { errors: 5 } })
  t.ok(warnings.some((w) => w.script === 'a-error' && /boom/.test(String(w.error))))
})

t.test('the luahook command: load, unload, reload, enable, disable, list; bad names refused', async (t) => {
  const { set, write, dir } = setUp()
  const command = luahookCommand(set)
  const run = async (...args: string[]) => await command.run(args)
  t.match(await run('list'), { text: `no scripts in ${dir}`, data: [] })
  write('s.lua', 'function on_client_connected() end function register_hook() return "on_client_connected" end')
  t.same(await run('load', 's'), { text: 'Load "s" successfully', data: { script: 's', result: 'ok' } })
  await t.rejects(run('load', 's.lua'), /loaded already/)
  t.match(await run('list'), { text: /^s\.lua {2}loaded {2}hooks=on_client_connected {2}calls=0/, data: [{ name: 's', status: 'loaded' }] })
  write('s.lua', 'function on_client_disconnected() end function register_hook() return "on_client_disconnected" end')
  t.match(await run('reload', 's'), { text: 'Reload "s" successfully' })
  t.match(await run('list'), { data: [{ name: 's', hooks: ['on_client_disconnected'] }] })
  write('s.lua', 'syntax error here')
  await t.rejects(run('reload', 's'), /Reload "s" failed: s\.lua: /)
  t.match(await run('list'), { data: [{ name: 's', status: 'loaded', hooks: ['on_client_disconnected'] }] }, 'a failed reload leaves the old script running')
  t.match(await run('disable', 's'), { text: 'Disable "s" successfully' })
  t.ok(existsSync(join(dir, 's.lua.x')))
  t.notOk(existsSync(join(dir, 's.lua')))
  t.match(await run('list'), { data: [{ name: 's', file: 's.lua.x', status: 'disabled' }] })
  await t.rejects(run('unload', 's'), /not loaded/)
  write('s.lua.x', 'function on_client_connected() end function register_hook() return "on_client_connected" end')
  t.match(await run('enable', 's'), { text: 'Enable "s" successfully' })
  t.ok(existsSync(join(dir, 's.lua')))
  await t.rejects(run('enable', 's'), /enabled already/)
  t.match(await run('unload', 's'), { text: 'Unload "s" successfully' })
  t.match(await run('list'), { data: [{ name: 's', status: 'not_loaded' }] })
  await t.rejects(run('load', 'missing'), /no script missing\.lua/)
  await t.rejects(run('disable', 'missing'), /no script missing\.lua/)
  await t.rejects(run('load', '../etc/passwd'), /bad script name/)
  await t.rejects(run('enable', '../x'), /bad script name/)
  t.match(await run('load').catch((err: unknown) => err), { name: 'CtlError', exit: 2 })
  t.match(await run('frobnicate', 's').catch((err: unknown) => err), { name: 'CtlError', exit: 2 })
  write('big.lua', `-- ${'x'.repeat(MB)}`)
  await t.rejects(run('load', 'big'), /larger than/)
  write('nohook.lua', 'x = 1')
  await t.rejects(run('load', 'nohook'), /no function register_hook/)
  write('slow.lua', 'while true do end')
  await t.rejects(run('load', 'slow'), /top-level code ran past/)
})
