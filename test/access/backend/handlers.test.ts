import t from 'tap'
import { BackendGuard } from '../../../lib/plugin-kit/backend/guard.js'
import { backendAclChecker, backendAuthenticator, isTrue, type StoredUser } from '../../../lib/plugin-kit/backend/handlers.js'
import { passwordChecker } from '../../../lib/plugin-kit/backend/password.js'
import type { AclRule } from '../../../lib/plugin-kit/backend/acl-rules.js'
import type { QueryValues } from '../../../lib/plugin-kit/backend/placeholders.js'
import { createLogger } from '../../../lib/log.js'
import { clientInfo } from '../../../lib/plugin-kit/fake-context.js'

const logger = createLogger('error', false)
const alarms = { raise: () => true, clear: () => true }
const guard = (): BackendGuard => new BackendGuard({ plugin: 'p', server: 'S', timeoutMs: 100, alarms, logger })
const users: Record<string, StoredUser> = { alice: { password: 'pw' }, root: { password: 'pw' }, flagged: { password: 'pw', superuser: true }, nopass: { password: undefined } }
let down = false
const seen: QueryValues[] = []
const queries = {
  findUser: async (v: QueryValues) => {
    seen.push(v)
    if (down) throw new Error('down')
    return v.username === undefined ? undefined : users[v.username]
  },
  isSuperuser: async (v: QueryValues) => v.username === 'root'
}

t.test('authenticate: allow, deny, ignore, superuser, unavailable', async (t) => {
  const auth = backendAuthenticator({ guard: guard(), checkPassword: passwordChecker('plain'), queries, unavailable: 'deny', logger })
  const ask = async (username: string | undefined, password?: string): Promise<unknown> =>
    await auth({ client: clientInfo({ username }), password: password === undefined ? undefined : Buffer.from(password) })
  t.same(await ask('alice', 'pw'), { result: 'allow', superuser: false })
  t.same(await ask('root', 'pw'), { result: 'allow', superuser: true })
  t.same(await ask('flagged', 'pw'), { result: 'allow', superuser: true })
  t.same(await ask('alice', 'nope'), { result: 'deny', reason: 'bad_username_or_password' })
  t.same(await ask('alice'), { result: 'deny', reason: 'bad_username_or_password' })
  t.same(await ask('nopass', ''), { result: 'deny', reason: 'bad_username_or_password' })
  t.equal(await ask('nobody', 'pw'), 'ignore')
  t.equal(seen.at(-1)?.password, 'pw')
  down = true
  t.same(await ask('alice', 'pw'), { result: 'deny', reason: 'server_unavailable' })
  const lenient = backendAuthenticator({ guard: guard(), checkPassword: passwordChecker('plain'), queries, unavailable: 'ignore', logger })
  t.equal(await lenient({ client: clientInfo({ username: 'alice' }), password: Buffer.from('pw') }), 'ignore')
  down = false
})

t.test('check_acl: rules decide, unavailable answers the setting', async (t) => {
  let rules: AclRule[] | Error = [{ allow: false, access: 2, topic: 'x', username: '$all' }]
  const deps = (unavailable: 'ignore' | 'deny') => ({
    guard: guard(),
    rules: async () => { if (rules instanceof Error) throw rules; return rules },
    unavailable,
    logger
  })
  const acl = backendAclChecker(deps('ignore'))
  t.equal(await acl({ client: clientInfo(), access: 'publish', topic: 'x' }), 'deny')
  t.equal(await acl({ client: clientInfo(), access: 'publish', topic: 'y' }), 'ignore')
  rules = new Error('down')
  t.equal(await acl({ client: clientInfo(), access: 'publish', topic: 'x' }), 'ignore')
  t.equal(await backendAclChecker(deps('deny'))({ client: clientInfo(), access: 'publish', topic: 'x' }), 'deny')
})

t.test('isTrue', async (t) => {
  for (const v of [1, true, '1', 'true', 't', 'on', Buffer.from('1')]) t.equal(isTrue(v), true, String(v))
  for (const v of [0, false, '0', 'false', null, undefined, 'f', 2]) t.equal(isTrue(v), false, String(v))
})
