// The chain runner (lib/hooks/chain.ts): first non-ignore answer wins,
// synchronous while the handlers answer synchronously.
import t from 'tap'
import { runChain, type ChainHandler, type ChainRules } from '../../lib/hooks/chain.js'

type Answer = 'allow' | 'deny' | 'ignore'
type Handler = ChainHandler<string, Answer>

/** Rules that record what happened in `log`: an error ends the chain as 'error' unless `failedGoesOn`. */
function rules (log: string[], failedGoesOn = false): ChainRules<string, Answer, string, string> {
  return {
    decide: (answer, request, ctx) => {
      log.push(`decide ${answer} ${request} ${ctx}`)
      return answer === 'ignore' ? undefined : answer
    },
    failed: (err, request, ctx) => {
      log.push(`failed ${(err as Error).message} ${request} ${ctx}`)
      return failedGoesOn ? undefined : 'error'
    },
    fallback: (request, ctx) => {
      log.push(`fallback ${request} ${ctx}`)
      return 'default'
    }
  }
}

const sync = (answer: Answer, calls: string[], name: string): Handler => () => { calls.push(name); return answer }
const later = (answer: Answer, calls: string[], name: string): Handler => async () => { calls.push(name); return await Promise.resolve(answer) }

t.test('synchronous answers: a plain result, the first non-ignore wins, later handlers are not asked', async (t) => {
  const calls: string[] = []
  const log: string[] = []
  const result = runChain([sync('ignore', calls, 'a'), sync('deny', calls, 'b'), sync('allow', calls, 'c')], 'req', rules(log), 'ctx')
  t.equal(result, 'deny', 'not a promise')
  t.same(calls, ['a', 'b'])
  t.same(log, ['decide ignore req ctx', 'decide deny req ctx'])
})

t.test('asynchronous answers: a promise of the first non-ignore answer', async (t) => {
  const calls: string[] = []
  const result = runChain([later('ignore', calls, 'a'), later('allow', calls, 'b'), later('deny', calls, 'c')], 'req', rules([]), 'ctx')
  t.ok(result instanceof Promise)
  t.equal(await result, 'allow')
  t.same(calls, ['a', 'b'])
})

t.test('mixed: a synchronous ignore, then an asynchronous allow', async (t) => {
  const calls: string[] = []
  const result = runChain([sync('ignore', calls, 'a'), later('allow', calls, 'b'), sync('deny', calls, 'c')], 'req', rules([]), 'ctx')
  t.same(calls, ['a', 'b'], 'the asynchronous handler was asked at once')
  t.equal(await result, 'allow')
  t.same(calls, ['a', 'b'], 'nothing asked after the decision')
})

t.test('mixed: an asynchronous ignore, then the rest in order', async (t) => {
  const calls: string[] = []
  const result = runChain([later('ignore', calls, 'a'), sync('ignore', calls, 'b'), later('ignore', calls, 'c'), sync('deny', calls, 'd')], 'req', rules([]), 'ctx')
  t.equal(await result, 'deny')
  t.same(calls, ['a', 'b', 'c', 'd'])
})

t.test('a handler that throws: failed decides, or the chain goes on when it says so', async (t) => {
  const thrower: Handler = () => { throw new Error('boom') }
  const calls: string[] = []
  const log: string[] = []
  t.equal(runChain([thrower, sync('allow', calls, 'b')], 'req', rules(log), 'ctx'), 'error', 'synchronously')
  t.same(calls, [])
  t.same(log, ['failed boom req ctx'])
  t.equal(runChain([thrower, sync('allow', calls, 'b')], 'req', rules([], true), 'ctx'), 'allow', 'taken as an ignore')
  t.same(calls, ['b'])
})

t.test('a handler whose promise rejects: failed decides, or the chain goes on when it says so', async (t) => {
  const rejecter: Handler = async () => await Promise.reject(new Error('nope'))
  const calls: string[] = []
  const log: string[] = []
  t.equal(await runChain([rejecter, sync('allow', calls, 'b')], 'req', rules(log), 'ctx'), 'error')
  t.same(calls, [])
  t.same(log, ['failed nope req ctx'])
  t.equal(await runChain([rejecter, sync('deny', calls, 'b')], 'req', rules([], true), 'ctx'), 'deny', 'taken as an ignore')
  t.same(calls, ['b'])
})

t.test('every handler ignores: the fallback, synchronously when all answered so', async (t) => {
  const calls: string[] = []
  const log: string[] = []
  t.equal(runChain([sync('ignore', calls, 'a'), sync('ignore', calls, 'b')], 'req', rules(log), 'ctx'), 'default')
  t.same(log, ['decide ignore req ctx', 'decide ignore req ctx', 'fallback req ctx'])
  t.equal(runChain([], 'req', rules([]), 'ctx'), 'default', 'no handler at all')
  t.equal(await runChain([sync('ignore', calls, 'c'), later('ignore', calls, 'd')], 'req', rules([]), 'ctx'), 'default')
  t.same(calls, ['a', 'b', 'c', 'd'])
})

t.test('decide gets the handler that answered', async (t) => {
  const a: Handler = () => 'ignore'
  const b: Handler = async () => await Promise.resolve<Answer>('allow')
  const seen: Handler[] = []
  const result = await runChain<string, Answer, string, undefined>([a, b], 'req', {
    decide: (answer, _request, _ctx, handler) => { seen.push(handler); return answer === 'ignore' ? undefined : answer },
    failed: () => 'error',
    fallback: () => 'default'
  }, undefined)
  t.equal(result, 'allow')
  t.same(seen, [a, b])
})
