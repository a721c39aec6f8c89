// broker_auth_mysql with a real MariaDB (case-insensitive, space-padding
// collation) and real clients: `ALICE` and `alice ` get in with alice's
// password, and are then alice for the ACL rows, bans and listings; %c in an
// ACL row is never a wildcard (issue 14 #4, #8).
import t from 'tap'
import type { BannedEntry } from '../../../lib/plugin-kit/testing.js'
import { addAcl, addUser, brokerWith, client, connack, database, granted } from '../../../test/access/backend/sql-suite.js'
import { closeAll } from '../../../test/helpers/mqtt.js'
import { target } from './target.js'

const ban = (who: string): BannedEntry => ({ who, as: 'username', reason: 'test', desc: '', by: 'tests', until: Math.floor(Date.now() / 1000) + 600 })

t.test('the stored user name is the one ACL rows, bans and listings see', async (t) => {
  const server = await database(t, target)
  await addUser(server, 'alice', 'alice-pw', 'sha256')
  await addAcl(server, [[0, null, 'alice', null, 1, 'secret/#']])
  const broker = await brokerWith(t, target, server)
  const upper = await client(broker, 'ALICE', 'a1', 'alice-pw')
  const padded = await client(broker, 'alice ', 'a2', 'alice-pw')
  const alice = await client(broker, 'alice', 'a3', 'alice-pw')
  t.teardown(() => closeAll(upper, padded, alice))
  t.same(await granted(upper, 'secret/x', 'open/x'), [0x87, 1], 'the deny row for alice applies to ALICE')
  t.same(await granted(padded, 'secret/x'), [0x87], 'and to "alice "')
  t.same(await granted(alice, 'secret/x', 'open/x'), [0x87, 1], 'and to alice, as before')
  t.equal(broker.node.service.connection('a1')[0]?.username, 'alice', 'ALICE is listed as alice')
  await broker.node.banned.add(ban('alice'))
  t.equal(await connack(broker, 'Alice', 'alice-pw', 5), 0x8a, 'a ban on alice refuses Alice')
  t.equal(await connack(broker, 'bob', 'x', 5), 0x87, 'an unknown user is still left to the chain')
})

t.test('an auth query without a username column keeps the name the client sent', async (t) => {
  const server = await database(t, target)
  await addUser(server, 'alice', 'alice-pw', 'sha256')
  const broker = await brokerWith(t, target, server, { 'auth.mysql.auth_query': "select password from mqtt_user where username = '%u' limit 1" })
  const upper = await client(broker, 'ALICE', 'a1', 'alice-pw')
  t.teardown(() => closeAll(upper))
  t.equal(broker.node.service.connection('a1')[0]?.username, 'ALICE')
})

t.test('%c in an ACL row: client id + or # is not a wildcard', async (t) => {
  const server = await database(t, target)
  await addUser(server, 'dev', 'dev-pw', 'sha256')
  await addAcl(server, [[1, null, '$all', null, 1, 'clients/%c/#'], [0, null, '$all', null, 1, 'clients/#']])
  const broker = await brokerWith(t, target, server)
  const plus = await client(broker, 'dev', '+', 'dev-pw')
  const hash = await client(broker, 'dev', '#', 'dev-pw')
  const legit = await client(broker, 'dev', 'dev-1', 'dev-pw')
  t.teardown(() => closeAll(plus, hash, legit))
  t.same(await granted(plus, 'clients/+/#'), [0x87], 'client id + does not read every client')
  t.same(await granted(hash, 'clients/#'), [0x87], 'client id # does not read everything')
  t.same(await granted(legit, 'clients/dev-1/#', 'clients/dev-2/#'), [1, 0x87], 'dev-1 reads its own tree only')
})
