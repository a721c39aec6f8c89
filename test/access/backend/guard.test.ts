import t from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { BackendGuard } from '../../../lib/plugin-kit/backend/guard.js'
import type { PluginAlarm } from '../../../lib/plugin-kit/contract.js'

function setup (timeoutMs = 50): { guard: BackendGuard, logs: Array<Record<string, unknown>>, raised: Map<string, PluginAlarm>, cleared: string[] } {
  const logs: Array<Record<string, unknown>> = []
  const sink = new Writable({ write (chunk: Buffer, _e, done) { logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>); done() } })
  const raised = new Map<string, PluginAlarm>()
  const cleared: string[] = []
  const alarms = {
    raise: (alarm: PluginAlarm) => !raised.has(alarm.id) && raised.set(alarm.id, alarm) !== undefined,
    clear: (id: string) => { cleared.push(id); return raised.delete(id) }
  }
  const guard = new BackendGuard({ plugin: 'broker_auth_x', server: 'X 127.0.0.1:1', timeoutMs, alarms, logger: pino({ level: 'debug' }, sink) })
  return { guard, logs, raised, cleared }
}

const levels = (logs: Array<Record<string, unknown>>, level: number): number => logs.filter((l) => l.level === level).length

t.test('a success passes the value through', async (t) => {
  const { guard, raised } = setup()
  t.same(await guard.run(async () => 42), { ok: true, value: 42 })
  t.equal(raised.size, 0)
})

t.test('failures: one warning and one alarm per outage; recovery logs once and clears', async (t) => {
  const { guard, logs, raised, cleared } = setup()
  const fail = async (): Promise<never> => { throw new Error('ECONNREFUSED') }
  for (let i = 0; i < 5; i++) {
    const r = await guard.run(fail)
    t.equal(r.ok, false)
    if (!r.ok) t.equal(r.error.message, 'ECONNREFUSED')
  }
  await guard.run(() => { throw new Error('sync throw') })
  t.equal(levels(logs, 40), 1, 'one warning')
  t.equal(guard.unavailable, true)
  const alarm = raised.get('broker_auth_x_unavailable')
  t.equal(alarm?.severity, 'warning')
  t.match(alarm?.summary, /X 127\.0\.0\.1:1.*ECONNREFUSED/)
  t.same(await guard.run(async () => 'ok'), { ok: true, value: 'ok' })
  t.equal(raised.size, 0)
  t.same(cleared, ['broker_auth_x_unavailable'])
  t.equal(levels(logs, 30), 1, 'one recovery line')
  await guard.run(async () => 'ok')
  t.equal(levels(logs, 30), 1)
  await guard.run(fail)
  t.equal(levels(logs, 40), 2, 'a new outage warns again')
  t.equal(raised.size, 1)
})

t.test('a call that does not finish in time answers at the timeout; its late answer is dropped', async (t) => {
  const { guard, raised } = setup(30)
  let release: (v: string) => void = () => {}
  const slow = new Promise<string>((resolve) => { release = resolve })
  const r = await guard.run(() => slow)
  t.equal(r.ok, false)
  if (!r.ok) t.match(r.error.message, /did not answer within 30ms/)
  t.equal(raised.size, 1)
  release('late')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(raised.size, 1, 'the late answer does not end the outage')
  let rejectLate: (e: Error) => void = () => {}
  const r2 = await guard.run(() => new Promise((_resolve, reject) => { rejectLate = reject }))
  t.equal(r2.ok, false)
  rejectLate(new Error('late failure')) // handled: no unhandled rejection
})

t.test('a success of a call started before the outage does not end it', async (t) => {
  const { guard, raised } = setup(1000)
  let release: (v: string) => void = () => {}
  const early = guard.run(() => new Promise<string>((resolve) => { release = resolve }))
  await guard.run(async () => { throw new Error('down') })
  release('early')
  t.same(await early, { ok: true, value: 'early' })
  t.equal(raised.size, 1)
  await guard.run(async () => 1)
  t.equal(raised.size, 0)
})

t.test('close clears the alarm and stops telling', async (t) => {
  const { guard, raised, logs } = setup()
  await guard.run(async () => { throw new Error('down') })
  guard.close()
  t.equal(raised.size, 0)
  await guard.run(async () => { throw new Error('down') })
  t.equal(raised.size, 0)
  t.equal(levels(logs, 40), 1)
})

t.test('close settles the calls still waiting (a connection closed under a query may never answer), and later calls answer at once', async (t) => {
  const { guard } = setup(3_600_000)
  const waiting = guard.run(async () => await new Promise<never>(() => {}))
  guard.close()
  t.match(await waiting, { ok: false, error: { message: 'broker_auth_x is unloaded' } })
  let ran = false
  t.match(await guard.run(async () => { ran = true }), { ok: false, error: { message: 'broker_auth_x is unloaded' } })
  t.equal(ran, false, 'the operation is not started')
})
