// Authentication through the plugin on a real node with MQTT.js clients; the
// real `mongodb` driver talks to the wire-protocol STAND-IN, not a real mongod.
import t, { type Test } from 'tap'
import type { TestBroker } from '../../../test/helpers/broker.js'
import { bcryptHash, connack, digest, granted, MongoStandin, pbkdf2Hex, startNode } from './standin-node.js'

let standin: MongoStandin
t.before(async () => { standin = await MongoStandin.start() })
t.teardown(async () => { await standin.kill() })

const users = (): ReturnType<MongoStandin['collection']> => standin.collection('mqtt', 'mqtt_user')

async function node (t: Test, settings: Record<string, string> = {}, nodeSettings: Record<string, string> = {}): Promise<TestBroker> {
  const broker = await startNode(standin, settings, nodeSettings)
  t.teardown(() => broker.stop())
  return broker
}

t.test('stand-in: allow, deny (wrong or missing password), ignore (unknown user) with the default sha256', async (t) => {
  users().push({ username: 'alice', password: digest('sha256', 'secret'), created: new Date() })
  const broker = await node(t)
  t.equal(await connack(broker, { clientId: 'a1', username: 'alice', password: 'secret' }), 0, 'right password: connected')
  t.equal(await connack(broker, { clientId: 'a2', username: 'alice', password: 'wrong' }), 4, 'MQTT 3.1.1: 4 bad user name or password')
  t.equal(await connack(broker, { clientId: 'a3', username: 'alice', password: 'wrong', protocolVersion: 5 }), 0x86, 'MQTT 5: 0x86')
  t.equal(await connack(broker, { clientId: 'a4', username: 'alice' }), 4, 'no password: deny')
  t.equal(await connack(broker, { clientId: 'a5', username: 'nobody', password: 'secret' }), 5, 'unknown user: ignored, then allow_anonymous = false refuses')
  t.equal(await connack(broker, { clientId: 'a6' }), 5, 'no user name: ignored')
  const finds = standin.commands('find').filter((c) => c.command.find === 'mqtt_user' && c.command.filter.username === 'alice')
  t.ok(finds.length > 0, 'the driver sent find')
  t.strictSame(finds[0].command.filter, { username: 'alice' }, 'filter: the selector username=%u')
})

t.test('stand-in: an unknown user is ignored, so the next step of the chain decides (allow_anonymous = true lets it in)', async (t) => {
  const broker = await node(t, {}, { 'mqtt.allow_anonymous': 'true' })
  t.equal(await connack(broker, { clientId: 'i1', username: 'stranger', password: 'x' }), 0)
  users().push({ username: 'known', password: digest('sha256', 'right') })
  t.equal(await connack(broker, { clientId: 'i2', username: 'known', password: 'wrong' }), 4, 'a known user with a wrong password is denied, not passed on')
})

t.test('stand-in: a document without a password field never matches (not even an empty password)', async (t) => {
  users().push({ username: 'nopass', is_superuser: false })
  const broker = await node(t, { 'auth.mongo.auth_query.password_hash': 'plain' })
  t.equal(await connack(broker, { clientId: 'np1', username: 'nopass', password: '' }), 4)
  t.equal(await connack(broker, { clientId: 'np2', username: 'nopass', password: 'x' }), 4)
})

interface HashCase {
  hash: string
  stored: (password: string, salt: string) => string
  salted: boolean
}

const SALT = 'pepper42'
const BCRYPT_SALT = '$2a$04$abcdefghijklmnopqrstuu'
const HASHES: HashCase[] = [
  { hash: 'plain', stored: (p) => p, salted: false },
  { hash: 'md5', stored: (p) => digest('md5', p), salted: false },
  { hash: 'sha', stored: (p) => digest('sha1', p), salted: false },
  { hash: 'sha256', stored: (p) => digest('sha256', p), salted: false },
  { hash: 'sha512', stored: (p) => digest('sha512', p), salted: false },
  { hash: 'bcrypt', stored: (p) => bcryptHash(p, BCRYPT_SALT), salted: false },
  { hash: 'pbkdf2,sha256,1000,20', stored: (p, s) => pbkdf2Hex(p, s, 1000, 20, 'sha256'), salted: true },
  { hash: 'salt,sha256', stored: (p, s) => digest('sha256', s + p), salted: true },
  { hash: 'sha256,salt', stored: (p, s) => digest('sha256', p + s), salted: true },
  { hash: 'salt,md5', stored: (p, s) => digest('md5', s + p), salted: true },
  { hash: 'sha512,salt', stored: (p, s) => digest('sha512', p + s), salted: true },
  { hash: 'salt,plain', stored: (p, s) => s + p, salted: true },
  { hash: 'salt,bcrypt', stored: (p) => bcryptHash(p, BCRYPT_SALT), salted: true }
]

t.test('stand-in: every password_hash, and the salt before or after the password', async (t) => {
  for (const { hash, stored, salted } of HASHES) {
    await t.test(hash, async (t) => {
      const username = `user-${hash}`
      const salt = hash.endsWith('bcrypt') ? BCRYPT_SALT : SALT
      users().push(salted ? { username, password: stored('pw-1', salt), salt } : { username, password: stored('pw-1', salt) })
      const settings: Record<string, string> = { 'auth.mongo.auth_query.password_hash': hash }
      if (salted) settings['auth.mongo.auth_query.password_field'] = 'password,salt'
      const broker = await node(t, settings)
      t.equal(await connack(broker, { clientId: `h-${hash}-ok`, username, password: 'pw-1' }), 0, 'right password')
      t.equal(await connack(broker, { clientId: `h-${hash}-bad`, username, password: 'pw-2' }), 4, 'wrong password')
      if (salted && !hash.endsWith('bcrypt') && !hash.startsWith('pbkdf2')) {
        t.equal(await connack(broker, { clientId: `h-${hash}-swap`, username, password: `${SALT}pw-1` }), 4, 'the salt is not part of what the client sends')
      }
    })
  }
})

t.test('stand-in: the salt field is read from the document (another field name works)', async (t) => {
  users().push({ username: 'custom-salt', pw: digest('sha256', 'NaCl' + 'pw'), nacl: 'NaCl' })
  const broker = await node(t, { 'auth.mongo.auth_query.password_hash': 'salt,sha256', 'auth.mongo.auth_query.password_field': 'pw,nacl' })
  t.equal(await connack(broker, { clientId: 's1', username: 'custom-salt', password: 'pw' }), 0)
  t.equal(await connack(broker, { clientId: 's2', username: 'custom-salt', password: 'NaClpw' }), 4)
})

t.test('stand-in: superuser from the super query (is_superuser: true) passes every ACL check; super_query = off never asks', async (t) => {
  users().push({ username: 'root', password: digest('sha256', 'rootpw'), is_superuser: true })
  users().push({ username: 'plainuser', password: digest('sha256', 'pw'), is_superuser: false })
  // both have ACL documents that list nothing under secret/: only a superuser may subscribe there
  standin.collection('mqtt', 'mqtt_acl').push({ username: 'root', subscribe: ['open/#'] }, { username: 'plainuser', subscribe: ['open/#'] })
  const broker = await node(t)
  t.strictSame(await granted(broker, 'root', 'rootpw', ['secret/#', 'open/x']), [1, 1], 'root: a superuser, no ACL query decides')
  t.strictSame(await granted(broker, 'plainuser', 'pw', ['secret/#', 'open/x']), [0x80, 1], 'plainuser: the ACL documents decide')
  const supers = standin.commands('find').filter((c) => c.command.find === 'mqtt_user' && c.command.projection?.is_superuser === 1)
  t.ok(supers.some((c) => c.command.filter.username === 'root'), 'the super query selected username=%u and read is_superuser')

  const off = await node(t, { 'auth.mongo.super_query': 'off' })
  standin.seen.length = 0
  t.strictSame(await granted(off, 'root', 'rootpw', ['secret/#']), [0x80], 'super_query = off: root is an ordinary user')
  t.notOk(standin.commands('find').some((c) => c.command.projection?.is_superuser === 1), 'no super query was sent')
})

t.test('stand-in: injection through the user name does not widen the match', async (t) => {
  users().push({ username: 'admin', password: digest('sha256', 'adminpw'), is_superuser: true })
  const broker = await node(t)
  standin.seen.length = 0
  // (a user name holding U+0000 never reaches the plugin: the broker closes such a CONNECT, test/40)
  const attempts = ['{"$ne": null}', 'x, username=admin', '{"$gt": ""}', 'x,username=admin']
  for (const [i, username] of attempts.entries()) {
    t.equal(await connack(broker, { clientId: `inj-${i}`, username, password: 'adminpw' }), 5, `${JSON.stringify(username)}: no such user (ignored, then refused)`)
  }
  const filters = standin.commands('find').map((c) => c.command.filter)
  t.strictSame(filters, attempts.map((username) => ({ username })), 'each filter is exactly {username: <the string as sent>}')
  t.equal(await connack(broker, { clientId: 'inj-ok', username: 'admin', password: 'adminpw' }), 0, 'the real admin still connects')
})

t.test('stand-in: a selector with several fields and placeholders (username=%u,clientid=%c)', async (t) => {
  users().push({ username: 'dev', clientid: 'dev-7', password: digest('sha256', 'pw') })
  const broker = await node(t, { 'auth.mongo.auth_query.selector': 'username=%u, clientid=%c' })
  t.equal(await connack(broker, { clientId: 'dev-7', username: 'dev', password: 'pw' }), 0)
  t.equal(await connack(broker, { clientId: 'dev-8', username: 'dev', password: 'pw' }), 5, 'another client id finds no document: ignored')
})
