// The ACL check through the chain runner, in-process: synchronous plugin
// answers give a plain answer (no promise on the publish path); a promise
// answer gives a promise; a failing handler is taken as an ignore.
import t from 'tap'
import { AccessControl } from '../../lib/access/access-control.js'
import { detachedState } from '../../lib/access/client-state.js'
import { Config } from '../../lib/config/store.js'
import { HookRegistry } from '../../lib/hooks/registry.js'
import type { HookHandlers } from '../../lib/hooks/types.js'
import { createLogger } from '../../lib/log.js'

type AclHandler = HookHandlers['client.check_acl']

function setup (...handlers: AclHandler[]): { access: AccessControl, state: ReturnType<typeof detachedState> } {
  const logger = createLogger('silent', false)
  const hooks = new HookRegistry(logger)
  handlers.forEach((h, i) => hooks.add('client.check_acl', h, `plugin_${i}`))
  // no rules loaded and acl_nomatch deny: an answer no handler gave is false
  const access = new AccessControl(new Config([{ key: 'mqtt.acl_nomatch', value: 'deny', origin: 'test' }]), hooks, '/', logger)
  const state = detachedState({
    clientId: 'c', username: 'u', ipAddress: '127.0.0.1', port: 1, protocol: 'mqtt:tcp', protoVer: 4, peercert: 'nossl', mountpoint: '', isSuperuser: false
  })
  return { access, state }
}

t.test('synchronous handlers: a plain answer, cached', async (t) => {
  const asked: string[] = []
  const { access, state } = setup((req) => { asked.push(req.topic); return 'ignore' }, () => 'allow')
  t.equal(access.check(state, 'publish', 'a/b'), true, 'not a promise')
  t.equal(access.check(state, 'publish', 'a/b'), true, 'from the cache')
  t.same(asked, ['a/b'], 'the second answer came from the cache')
  t.equal(access.check(state, 'subscribe', '$share/g/x/#'), true)
  t.same(asked, ['a/b', 'x/#'], 'a shared filter is checked as its filter')
})

t.test('a synchronous ignore then a promise: a promise of the answer, then cached', async (t) => {
  const { access, state } = setup(() => 'ignore', async () => await Promise.resolve<'deny'>('deny'))
  const answer = access.check(state, 'publish', 'a/b')
  t.ok(answer instanceof Promise)
  t.equal(await answer, false)
  t.equal(access.check(state, 'publish', 'a/b'), false, 'cached: plain')
})

t.test('a handler that throws or rejects is an ignore; all ignore: the file rules and acl_nomatch', async (t) => {
  const thrower = (): never => { throw new Error('boom') }
  const rejecter: AclHandler = async () => await Promise.reject(new Error('nope'))
  t.equal(setup(thrower, () => 'allow').access.check(setup().state, 'publish', 't'), true)
  t.equal(await setup(rejecter, () => 'allow').access.check(setup().state, 'publish', 't'), true)
  t.equal(setup(thrower, () => 'ignore').access.check(setup().state, 'publish', 't'), false, 'acl_nomatch deny')
})
