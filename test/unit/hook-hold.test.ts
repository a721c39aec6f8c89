// The registry's hold (a plugin's code swapped by broker_reloader): while a
// swap runs, the chains it holds make their callers wait, except calls made
// by the swap itself; the hold ends with the swap, also when it fails.
import { AsyncResource } from 'node:async_hooks'
import t from 'tap'
import { AccessControl } from '../../lib/access/access-control.js'
import { detachedState } from '../../lib/access/client-state.js'
import { Config } from '../../lib/config/store.js'
import { foldPublish, foldSubscribe } from '../../lib/hooks/folds.js'
import { HookRegistry } from '../../lib/hooks/registry.js'
import type { ClientInfo, PublishMessage } from '../../lib/hooks/types.js'
import { createLogger } from '../../lib/log.js'

const logger = createLogger('silent', false)

function gate (): { promise: Promise<void>, open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => { open = resolve })
  return { promise, open }
}

t.test('held while the swap runs; free after it, also when it throws', async (t) => {
  const hooks = new HookRegistry(logger)
  t.equal(hooks.held('client.authenticate'), undefined, 'nothing held')
  const swap = gate()
  const swapping = hooks.holding(['client.authenticate'], async () => {
    t.equal(hooks.held('client.authenticate'), undefined, 'the swap itself is not held')
    await swap.promise
    return 'swapped'
  })
  t.type(hooks.held('client.authenticate'), Promise, 'held for others')
  t.equal(hooks.held('client.check_acl'), undefined, 'only the hooks named')
  let freed = false
  const waiting = hooks.whenFree('client.authenticate').then(() => { freed = true })
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(freed, 'a caller waits')
  swap.open()
  t.equal(await swapping, 'swapped')
  await waiting
  t.equal(hooks.held('client.authenticate'), undefined)

  const failing = hooks.holding(['client.check_acl'], async () => { throw new Error('load failed') })
  await t.rejects(failing, /load failed/)
  t.equal(hooks.held('client.check_acl'), undefined, 'a failed swap releases its hold')
})

t.test('two holds of one hook: free only when both ended', async (t) => {
  const hooks = new HookRegistry(logger)
  const first = gate()
  const second = gate()
  const a = hooks.holding(['client.authenticate'], async () => { await first.promise })
  const b = hooks.holding(['client.authenticate'], async () => { await second.promise })
  let freed = false
  const waiting = hooks.whenFree('client.authenticate').then(() => { freed = true })
  first.open()
  await a
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(freed, 'the second still holds')
  second.open()
  await b
  await waiting
  t.ok(freed)
})

t.test('an ACL check during a swap answers after it, with the handlers then registered', async (t) => {
  const hooks = new HookRegistry(logger)
  // acl_nomatch allow: without the plugin's handler the check would pass
  const access = new AccessControl(new Config([{ key: 'mqtt.acl_nomatch', value: 'allow', origin: 'test' }, { key: 'mqtt.cache_acl', value: 'false', origin: 'test' }]), hooks, '/', logger)
  const state = detachedState({
    clientId: 'c', username: 'u', ipAddress: '127.0.0.1', port: 1, protocol: 'mqtt:tcp', protoVer: 4, peercert: 'nossl', mountpoint: '', isSuperuser: false
  })
  const swap = gate()
  let answer: boolean | Promise<boolean> | undefined
  const swapping = hooks.holding(['client.check_acl'], async () => {
    answer = access.check(state, 'publish', 'secret/x')
    await swap.promise
    hooks.add('client.check_acl', () => 'deny', 'plugin_new')
  })
  t.equal(answer, true, 'the swap\'s own check is not held (no handler yet: acl_nomatch)')
  const held = access.check(state, 'publish', 'secret/x')
  t.type(held, Promise, 'another check waits')
  swap.open()
  await swapping
  t.equal(await held, false, 'answered by the new handler')
  t.equal(access.check(state, 'publish', 'secret/x'), false, 'and synchronously again once free')
})

t.test('what a swap started (a timer, a server) is held by a later swap', async (t) => {
  const hooks = new HookRegistry(logger)
  let ask!: () => Promise<void> | undefined
  await hooks.holding(['client.authenticate'], async () => {
    // a callback bound where the swap runs, as a timer or a server's connections are
    ask = AsyncResource.bind(() => hooks.held('client.authenticate'))
    t.equal(ask(), undefined, 'within its own swap: not held')
  })
  const second = gate()
  const swapping = hooks.holding(['client.authenticate'], async () => { await second.promise })
  t.type(ask(), Promise, 'in another swap: held')
  second.open()
  await swapping
})

t.test('the folds wait too, then run the handlers registered by then', async (t) => {
  const hooks = new HookRegistry(logger)
  const client: ClientInfo = { clientId: 'c', username: 'u', ipAddress: '127.0.0.1', port: 1, protocol: 'mqtt:tcp', protoVer: 4, peercert: 'nossl', mountpoint: '', isSuperuser: false }
  const message = { topic: 'a', payload: Buffer.from('x'), qos: 0, retain: false, authorize: () => true } as unknown as PublishMessage
  const swap = gate()
  const swapping = hooks.holding(['message.publish', 'client.subscribe'], async () => {
    await swap.promise
    hooks.add('message.publish', () => ({ topic: 'rewritten' }), 'plugin_new')
    hooks.add('client.subscribe', () => ({ stop: 0x87 }), 'plugin_new')
  })
  const published = foldPublish(hooks, message)
  const subscribed = foldSubscribe(hooks, client, { topic: 'x', qos: 1 })
  t.type(published, Promise)
  t.type(subscribed, Promise)
  swap.open()
  await swapping
  t.match(await published, { topic: 'rewritten' })
  t.same(await subscribed, { stop: 0x87 })
})
