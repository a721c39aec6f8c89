// The MongoDB wire-protocol STAND-IN itself (test/helpers/servers/
// mongo-standin.ts), checked with the real `mongodb` driver: what the plugin's
// tests rely on it to do. It is not a real mongod.
import { connect as netConnect } from 'node:net'
import { once } from 'node:events'
import t, { type Test } from 'tap'
import { BSON, MongoClient, type Document } from 'mongodb'
import { MongoStandin, type MongoStandinOptions } from '../../../test/helpers/servers/mongo-standin.js'
import { MAX_WIRE_VERSION } from '../../../test/helpers/servers/mongo-standin/commands.js'
import { OP_QUERY, OP_REPLY } from '../../../test/helpers/servers/mongo-standin/wire.js'

const DOCS = [
  { username: 'ann', clientid: 'c1', tags: ['a', 'b'], profile: { level: 3 } },
  { username: 'bob', clientid: 'c2', tags: ['b'] },
  { username: '$all', clientid: 'c3' }
]

async function setup (t: Test, options: MongoStandinOptions = {}, uri = ''): Promise<{ server: MongoStandin, client: MongoClient }> {
  const server = await MongoStandin.start({ data: { mqtt: { users: DOCS } }, ...options })
  const client = new MongoClient(`mongodb://${uri}${server.host}/?directConnection=true&serverSelectionTimeoutMS=1000${uri === '' ? '' : '&authSource=mqtt'}`)
  t.teardown(async () => {
    await client.close()
    await server.kill()
  })
  return { server, client }
}

const names = (docs: Document[]): string[] => docs.map((d) => String(d.username))

t.test('stand-in: hello over the legacy OP_QUERY handshake, then OP_MSG; the wire version suits driver 7', async (t) => {
  const { server, client } = await setup(t)
  await client.db('admin').command({ ping: 1 })
  const first = server.seen[0]
  t.match(first, { name: /^ismaster$/i, legacy: true }, 'the driver opened with isMaster over OP_QUERY')
  t.match(server.commands('ping')[0], { legacy: false }, 'then spoke OP_MSG')
  t.ok(MAX_WIRE_VERSION >= 9, 'max wire version at least 9 (the driver\'s minimum)')
  const build = await client.db('admin').command({ buildInfo: 1 })
  t.equal(build.version, '7.0.0')
})

t.test('stand-in: a raw OP_QUERY isMaster gets an OP_REPLY', async (t) => {
  const { server } = await setup(t)
  const socket = netConnect(server.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  const ns = Buffer.from('admin.$cmd\0')
  const query = BSON.serialize({ isMaster: 1 })
  const head = Buffer.alloc(20)
  const length = 20 + ns.length + 8 + query.length
  head.writeInt32LE(length, 0)
  head.writeInt32LE(77, 4)
  head.writeInt32LE(OP_QUERY, 12)
  const tail = Buffer.alloc(8)
  tail.writeInt32LE(-1, 4)
  socket.write(Buffer.concat([head, ns, tail, query]))
  const [reply] = await once(socket, 'data') as [Buffer]
  t.equal(reply.readInt32LE(8), 77, 'responseTo')
  t.equal(reply.readInt32LE(12), OP_REPLY)
  t.equal(reply.readInt32LE(32), 1, 'one document')
  const doc = BSON.deserialize(reply.subarray(36))
  t.match(doc, { ismaster: true, helloOk: true, ok: 1 })
})

t.test('stand-in: find with equality, arrays, dotted paths, $in, $or, $and, limit and projection', async (t) => {
  const { client } = await setup(t)
  const users = client.db('mqtt').collection('users')
  t.strictSame(names(await users.find({ username: 'ann' }).toArray()), ['ann'])
  t.strictSame(names(await users.find({ tags: 'b' }).toArray()), ['ann', 'bob'], 'an array field matches one element')
  t.strictSame(names(await users.find({ 'profile.level': 3 }).toArray()), ['ann'])
  t.strictSame(names(await users.find({ clientid: { $in: ['c2', 'c3'] } }).toArray()), ['bob', '$all'])
  t.strictSame(names(await users.find({ $or: [{ username: 'bob' }, { username: '$all' }] }).toArray()), ['bob', '$all'])
  t.strictSame(names(await users.find({ $and: [{ tags: 'b' }, { clientid: 'c2' }] }).toArray()), ['bob'])
  t.strictSame(names(await users.find({ username: '{"$ne": null}' }).toArray()), [], 'a string that looks like an operator is a string')
  t.strictSame(await users.findOne({ username: 'ann' }, { projection: { clientid: 1, _id: 0 } }), { clientid: 'c1' })
  t.strictSame(names(await users.find({}).limit(2).toArray()), ['ann', 'bob'])
  t.equal(await users.findOne({ username: 'nobody' }), null)
  t.strictSame(await client.db('other').collection('none').find({}).toArray(), [], 'an unknown collection is empty')
  await t.rejects(users.findOne({ username: { $ne: null } }), { code: 2, message: /unknown operator: \$ne/ }, 'other operators are refused')
})

t.test('stand-in: an unknown command is CommandNotFound (59)', async (t) => {
  const { client } = await setup(t)
  await t.rejects(client.db('mqtt').command({ frobnicate: 1 }), { code: 59, message: /no such command/ })
  await t.rejects(client.db('mqtt').collection('users').insertOne({ username: 'x' }), { code: 59 })
})

t.test('stand-in: with users, SCRAM-SHA-256 logs in and data commands need it', async (t) => {
  const users = [{ db: 'mqtt', user: 'broker', password: 'pw' }]
  const { client } = await setup(t, { users }, 'broker:pw@')
  t.equal((await client.db('mqtt').collection('users').findOne({ username: 'bob' }))?.clientid, 'c2', 'logged in')
  const bad = await setup(t, { users }, 'broker:wrong@')
  await t.rejects(bad.client.db('mqtt').collection('users').findOne({}), { code: 18 }, 'wrong password: AuthenticationFailed')
  const anonymous = await setup(t, { users })
  await t.rejects(anonymous.client.db('mqtt').collection('users').findOne({}), { code: 13 }, 'no login: Unauthorized')
})

t.test('stand-in: kill, restart on the same port, stop; slow answers', async (t) => {
  const { server, client } = await setup(t)
  const users = client.db('mqtt').collection('users')
  const port = server.port
  t.ok(await users.findOne({ username: 'ann' }))
  await server.kill()
  t.equal(server.running, false)
  t.equal(server.connections, 0, 'every socket destroyed')
  await t.rejects(users.findOne({ username: 'ann' }), 'killed: the query fails')
  await server.restart()
  t.equal(server.port, port, 'same port')
  t.ok(await users.findOne({ username: 'ann' }), 'the driver is back')
  await server.stop()
  await t.rejects(users.findOne({ username: 'ann' }), 'stopped: the query fails')
  await server.restart()
  t.ok(await users.findOne({ username: 'ann' }))

  server.slow(400)
  const answered = users.findOne({ username: 'bob' }, { maxTimeMS: 5000 }).then((d) => d?.clientid)
  const ping = await client.db('admin').command({ ping: 1 })
  t.equal(ping.ok, 1, 'a slow find does not slow other commands')
  t.equal(await answered, 'c2', 'the slow find is answered')
  server.slow(60_000)
  const before = server.commands('find').length
  const held = users.findOne({ username: 'bob' }).catch((err: Error) => err)
  while (server.commands('find').length === before) await new Promise((resolve) => setTimeout(resolve, 20))
  await server.kill()
  t.type(await held, Error, 'a held answer is dropped when the stand-in is killed')
})
