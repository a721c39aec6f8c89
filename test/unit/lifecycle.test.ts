// The start/stop stack a node's parts start on (lib/lifecycle.ts): stops run
// in reverse, a failed start unwinds what started and rethrows its error, a
// stop that throws is logged and the rest still stop, stop is idempotent.
import t from 'tap'
import { once, StartStopStack } from '../../lib/lifecycle.js'
import type { Logger } from '../../lib/log.js'

function recorder (): { logger: Logger, lines: Array<{ level: string, msg: string, step?: string }> } {
  const lines: Array<{ level: string, msg: string, step?: string }> = []
  const at = (level: string) => (fields: { step?: string }, msg: string) => { lines.push({ level, msg, step: fields.step }) }
  return { logger: { debug: at('debug'), error: at('error') } as unknown as Logger, lines }
}

t.test('parts start in order and stop in reverse, each named in the debug log', async (t) => {
  const { logger, lines } = recorder()
  const stack = new StartStopStack(logger)
  const events: string[] = []
  const value = await stack.start(async (step) => {
    const a = await step('a', () => { events.push('start a'); return 'A' }, (started) => { events.push(`stop a (${started})`) })
    await step('b', async () => { events.push('start b') })
    await step('c', async () => { events.push('start c') }, async () => { events.push('stop c') })
    return a
  })
  t.equal(value, 'A', 'the sequence\'s value')
  t.same(stack.started, ['a', 'c'], 'a step without a stop pushes nothing')
  await stack.stop()
  t.same(events, ['start a', 'start b', 'start c', 'stop c', 'stop a (A)'], 'stopped in reverse; a stop gets what its start returned')
  t.same(lines.map((l) => l.msg), ['starting a', 'starting b', 'starting c', 'stopped c', 'stopped a'])
  t.ok(lines.every((l) => l.level === 'debug'))
})

t.test('a failed step unwinds what started, in reverse, and rethrows its own error', async (t) => {
  const { logger, lines } = recorder()
  const stack = new StartStopStack(logger)
  const events: string[] = []
  const failure = new Error('port in use')
  const started = stack.start(async (step) => {
    await step('store', () => {}, () => { events.push('stop store') })
    await step('engine', () => {}, () => { events.push('stop engine') })
    await step('listeners', () => { throw failure }, () => { events.push('stop listeners') })
    await step('control socket', () => { events.push('start control socket') })
  })
  await t.rejects(started, failure)
  t.equal(await started.catch((err: unknown) => err), failure, 'the very error, not a wrapper')
  t.same(events, ['stop engine', 'stop store'], 'the failed step\'s stop is not called, the later steps never start')
  t.match(lines.find((l) => l.level === 'error'), { msg: 'starting listeners failed', step: 'listeners' }, 'the failure names its step')
  t.same(stack.started, [])
  await stack.stop()
  t.same(events, ['stop engine', 'stop store'], 'stop after a failed start has nothing left to stop')
})

t.test('code between the steps that throws unwinds too', async (t) => {
  const stack = new StartStopStack(recorder().logger)
  const events: string[] = []
  await t.rejects(stack.start(async (step) => {
    await step('store', () => {}, () => { events.push('stop store') })
    throw new Error('wiring')
  }), { message: 'wiring' })
  t.same(events, ['stop store'])
})

t.test('a stop that throws is logged and the unwinding goes on', async (t) => {
  const { logger, lines } = recorder()
  const stack = new StartStopStack(logger)
  const events: string[] = []
  await stack.start(async (step) => {
    await step('store', () => {}, () => { events.push('stop store') })
    await step('plugins', () => {}, async () => { throw new Error('unload failed') })
    await step('listeners', () => {}, () => { events.push('stop listeners') })
  })
  await stack.stop()
  t.same(events, ['stop listeners', 'stop store'], 'the store still closes')
  t.match(lines.find((l) => l.level === 'error'), { msg: 'stopping plugins failed; stopping the rest', step: 'plugins' })
})

t.test('concurrent stops resolve together; each stop runs once', async (t) => {
  const stack = new StartStopStack(recorder().logger)
  let stops = 0
  let release = (): void => {}
  await stack.start(async (step) => {
    await step('slow', () => {}, async () => {
      stops++
      await new Promise<void>((resolve) => { release = resolve })
    })
  })
  const first = stack.stop()
  const second = stack.stop()
  let settled = 0
  void first.then(() => settled++)
  void second.then(() => settled++)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(settled, 0, 'the second call waits for the first')
  release()
  await Promise.all([first, second])
  await stack.stop()
  t.equal(stops, 1)
})

t.test('a stop while starting ends the start at its next step and unwinds it', async (t) => {
  const stack = new StartStopStack(recorder().logger)
  const events: string[] = []
  let proceed = (): void => {}
  const started = stack.start(async (step) => {
    await step('store', () => {}, () => { events.push('stop store') })
    await new Promise<void>((resolve) => { proceed = resolve })
    await step('engine', () => { events.push('start engine') }, () => { events.push('stop engine') })
  })
  await new Promise((resolve) => setImmediate(resolve))
  const stopped = stack.stop()
  proceed()
  await t.rejects(started, { message: 'stopped while starting (before engine)' })
  await stopped
  t.same(events, ['stop store'])
})

t.test('a stack starts once', async (t) => {
  const stack = new StartStopStack(recorder().logger)
  await stack.start(async () => {})
  await t.rejects(stack.start(async () => {}), { message: 'started already' })
})

t.test('once: one run, every caller gets its promise', async (t) => {
  let runs = 0
  const leave = once(async () => { runs++ })
  await Promise.all([leave(), leave()])
  await leave()
  t.equal(runs, 1)
})
