// The real bin/broker_ctl (a process of its own) against a running node: every
// node command, its text and --json output, errors and exit statuses (0 done,
// 1 failed, 2 usage, 3 no node). The node runs in this process so that the
// commands' code is measured by the coverage; test/22 runs broker_ctl against
// a node process.
import { stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ISubackPacket } from 'mqtt-packet'
import t from 'tap'
import { tempDir } from './helpers/broker.js'
import { ctl, startCtlBroker } from './helpers/ctl.js'
import { closeAll, connect, nextMessages, noMessageWithin, waitEvent } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const NODE = 'broker@127.0.0.1'

// dozens of broker_ctl runs (a Node.js process each) against one node: it ran out of tap's 120 s beside 5
// other test files (load 20 and more), so the limit is generous
t.setTimeout(480_000)

t.test('broker_ctl runs the node commands of a running node', async (t) => {
  const dir = await tempDir()
  const aclFile = join(dir, 'acl.conf')
  await writeFile(aclFile, '{allow, all}.\n')
  const node = await startCtlBroker({ 'mqtt.acl_file': aclFile })
  t.teardown(node.stop)

  t.test('the control socket is only for the node\'s user (mode 0600)', async (t) => {
    t.equal((await stat(join(node.dataDir, 'broker_ctl.sock'))).mode & 0o777, 0o600)
  })

  t.test('status and broker', async (t) => {
    const status = await node.run('status')
    t.equal(status.code, 0)
    t.match(status.stdout, `Node '${NODE}' is started\nbroker `)
    t.match((await node.json('status')).data, { node: NODE, status: 'started' })
    const broker = await node.run('broker')
    t.match(broker.stdout, /^sysdescr : MQTT Broker\nversion {2}: \S+\nuptime {3}: .*seconds\ndatetime : \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n$/)
    t.equal((await node.run('cluster', 'status')).stdout, `Cluster status: running_nodes=[${NODE}], stopped_nodes=[]\n`)
    t.same((await node.json('cluster', 'status')).data, { running_nodes: [NODE], stopped_nodes: [] })
  })

  t.test('broker stats and metrics count a real client', async (t) => {
    const client = await connect(node.mqttUrl, { clientId: 'stats-1' })
    t.teardown(async () => await closeAll(client))
    const stats = await node.json<Record<string, number>>('broker', 'stats')
    t.equal(stats.data['connections/count'], 1)
    t.match((await node.run('broker', 'stats')).stdout, /^connections\/count {10}: 1$/m)
    const metrics = await node.json<Record<string, number>>('broker', 'metrics')
    t.ok(metrics.data['packets/connect'] >= 1)
    t.same(Object.keys(metrics.data), Object.keys(metrics.data).sort(), 'sorted as EMQ X prints them')
  })

  t.test('clients, sessions, subscriptions and routes show a real client; kick ends it', async (t) => {
    const client = await connect(node.mqttUrl, { clientId: 'c-show', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 300 } })
    await client.subscribeAsync('r/+/x', { qos: 1 })
    const list = await node.run('clients', 'list')
    t.match(list.stdout, /^Connection\(c-show, clean_start=false, username=undefined, peername=127\.0\.0\.1:\d+, connected_at=\d{4}-.*\)$/m)
    t.match((await node.json('clients', 'show', 'c-show')).data, [{ client_id: 'c-show', clean_start: false, proto_ver: 5 }])
    t.match((await node.run('sessions', 'show', 'c-show')).stdout, /^Session\(c-show, clean_start=false, .*subscriptions_count=1, /)
    t.match((await node.run('sessions', 'list')).stdout, /Session\(c-show,/)
    t.equal((await node.run('subscriptions', 'show', 'c-show')).stdout, 'c-show -> r/+/x qos=1\n')
    t.match((await node.run('subscriptions', 'list')).stdout, /^c-show -> r\/\+\/x qos=1$/m)
    t.equal((await node.run('routes', 'show', 'r/+/x')).stdout, `r/+/x -> ${NODE}\n`)
    t.match((await node.run('routes', 'list')).stdout, new RegExp(`^r/\\+/x -> ${NODE}$`, 'm'))

    const closed = waitEvent<[{ reasonCode?: number }]>(client, 'disconnect')
    const kick = await node.run('clients', 'kick', 'c-show')
    t.equal(kick.code, 0)
    t.equal(kick.stdout, 'ok\n')
    t.equal((await closed)[0].reasonCode, 0x98, 'the client gets DISCONNECT 0x98 (administrative action)')
    await closeAll(client)
    const gone = await node.run('clients', 'show', 'c-show')
    t.equal(gone.code, 1)
    t.equal(gone.stderr, 'Not Found.\n')
    t.equal((await node.run('clients', 'kick', 'c-show')).code, 1, 'kicking a client that is not connected fails')
    t.match((await node.run('sessions', 'show', 'c-show')).stdout, /^Session\(c-show, clean_start=false/, 'the persistent session stays')
  })

  t.test('subscriptions add and del act for a connected client', async (t) => {
    const client = await connect(node.mqttUrl, { clientId: 'c-sub' })
    const publisher = await connect(node.mqttUrl, { clientId: 'c-pub' })
    t.teardown(async () => await closeAll(client, publisher))
    const add = await node.run('subscriptions', 'add', 'c-sub', 'added/topic', '1')
    t.equal(add.code, 0)
    const got = nextMessages(client, 1)
    await publisher.publishAsync('added/topic', 'hello', { qos: 1 })
    t.match(await got, [{ topic: 'added/topic', payload: 'hello', qos: 1 }])
    t.equal((await node.run('subscriptions', 'del', 'c-sub', 'added/topic')).code, 0)
    await publisher.publishAsync('added/topic', 'again', { qos: 1 })
    t.ok(await noMessageWithin(client, 300), 'unsubscribed')
    const badQos = await node.run('subscriptions', 'add', 'c-sub', 'x', '3')
    t.equal(badQos.code, 2)
    t.match(badQos.stderr, 'QoS should be 0, 1, 2')
    t.equal((await node.run('subscriptions', 'add', 'nobody', 'x', '0')).code, 1, 'a client that is not connected')
    t.equal((await node.run('subscriptions', 'add', 'c-sub', 'a/#/b', '0')).code, 2, 'a bad filter')
  })

  t.test('acl reload reads the file again and applies it to connected clients', async (t) => {
    const client = await RawClient.open(node.port, 5)
    t.teardown(() => client.end())
    await client.connect({ clientId: 'c-acl' })
    let messageId = 0
    const granted = async (topic: string): Promise<number> => {
      client.send({ cmd: 'subscribe', messageId: ++messageId, subscriptions: [{ topic, qos: 0 }] })
      return ((await client.next('suback')) as ISubackPacket).granted[0] as number
    }
    t.equal(await granted('secret/1'), 0, 'allowed before')
    await writeFile(aclFile, '{deny, all, subscribe, ["secret/#"]}.\n{allow, all}.\n')
    const reload = await node.run('acl', 'reload')
    t.equal(reload.code, 0)
    t.equal(reload.stdout, 'ok (2 rules)\n')
    t.equal(await granted('secret/1'), 0x87, 'refused after the reload, cache cleaned')
    await writeFile(aclFile, '{allow, all\n')
    const broken = await node.run('acl', 'reload')
    t.equal(broken.code, 2, 'a broken file is refused')
    t.match(broken.stderr, 'acl.conf')
    t.equal(await granted('secret/2'), 0x87, 'the rules in force stay')
  })

  t.test('listeners and vm', async (t) => {
    t.match((await node.run('listeners')).stdout, new RegExp(`^listener on mqtt:tcp:127\\.0\\.0\\.1:${node.port}\\n {2}acceptors +: \\d+\\n {2}max_conns +: \\d+\\n {2}current_conn +: \\d+\\n {2}shutdown_count : `))
    const vm = await node.json<Record<string, number | string>>('vm')
    t.equal(vm.data['process/pid'], process.pid)
    t.ok((vm.data['memory/rss'] as number) > 0)
    t.match((await node.run('vm', 'io')).stdout, /^io\/max_fds +: \d+\nio\/active_fds : \d+\n$/)
    t.equal((await node.run('vm', 'bogus')).code, 2)
  })

  t.test('log set-level changes the level at run time', async (t) => {
    t.equal((await node.run('log', 'set-level', 'debug')).stdout, 'debug\n')
    t.equal((await node.run('log', 'primary-level')).stdout, 'debug\n')
    t.equal(node.broker.node.logger.level, 'debug', 'the node logs debug lines now')
    const bad = await node.run('log', 'set-level', 'loud')
    t.equal(bad.code, 2)
    t.match(bad.stderr, 'bad log level loud')
    t.equal((await node.run('log', 'set-level', 'info')).code, 0)
  })

  t.test('banned add, list and del', async (t) => {
    const add = await node.run('banned', 'add', 'client_id', 'bad-one', '1h', 'spam')
    t.equal(add.code, 0)
    const refused = connect(node.mqttUrl, { clientId: 'bad-one', protocolVersion: 5 })
    await t.rejects(refused, { code: 0x8a }, 'the banned client is refused with 0x8A')
    const listed = await node.json<Array<{ who: string, as: string, reason: string, by: string, until: number }>>('banned', 'list')
    const entry = listed.data.find((b) => b.who === 'bad-one')
    t.match(entry, { as: 'client_id', reason: 'spam', by: 'broker_ctl' })
    t.ok(Math.abs(entry!.until - (Date.now() / 1000 + 3600)) < 60, 'until is now + 1h')
    t.match((await node.run('banned', 'list')).stdout, /^Banned\(bad-one, as=client_id, reason=spam, by=broker_ctl, until=/m)
    t.equal((await node.run('banned', 'del', 'client_id', 'bad-one')).code, 0)
    const back = await connect(node.mqttUrl, { clientId: 'bad-one' })
    await closeAll(back)
    t.equal((await node.run('banned', 'del', 'client_id', 'bad-one')).code, 1, 'nothing left to delete')
    t.equal((await node.run('banned', 'add', 'hostname', 'x')).code, 2, 'an unknown kind')
    t.equal((await node.run('banned', 'add', 'username', 'x', 'soon')).code, 2, 'a bad duration')
  })

  t.test('bad commands: usage and exit status 2; --json failures parse', async (t) => {
    const unknown = await node.run('frobnicate')
    t.equal(unknown.code, 2)
    t.match(unknown.stderr, /^unknown command: frobnicate\n\nUsage:\n/)
    t.match(unknown.stderr, /^status +# Show broker status$/m)
    const wrong = await node.run('clients', 'show')
    t.equal(wrong.code, 2)
    t.match(wrong.stderr, /clients kick <ClientId> +# Kick out a client/)
    t.notMatch(wrong.stderr, /status +#/, 'only the usage of that command')
    const json = await ctl(node.dataDir, '--json', 'clients', 'show', 'nobody')
    t.equal(json.code, 1)
    t.same(JSON.parse(json.stdout), { error: 'Not Found.', exit: 1 })
    const users = await node.run('users', 'list')
    t.equal(users.code, 2)
    t.match(users.stderr, 'broker_ctl plugins load broker_auth_username', 'names the plugin that adds the command')
    const help = await node.run('help', 'clients')
    t.match(help.stdout, /^clients list +# List all clients\nclients show <ClientId> +# Show a client\nclients kick <ClientId> +# Kick out a client\n$/)
    const all = await node.run('--help')
    t.match(all.stdout, /^Usage: broker_ctl \[options\]/)
    t.match(all.stdout, /^trace topic <Topic> off +# Stop tracing a topic$/m)
    t.equal((await ctl(node.dataDir, '--bogus-option', 'status')).code, 2)
  })
})

t.test('without a running node: exit status 3, and help still works', async (t) => {
  const dir = await tempDir()
  const down = await ctl(dir, 'status')
  t.equal(down.code, 3)
  t.match(down.stderr, `broker_ctl: the node is not running (no answer on ${join(dir, 'broker_ctl.sock')})`)
  const json = await ctl(dir, '--json', 'status')
  t.equal(json.code, 3)
  t.match(JSON.parse(json.stdout), { exit: 3 })
  const help = await ctl(dir)
  t.equal(help.code, 0)
  t.match(help.stdout, /^subscriptions add <ClientId> <Topic> <QoS> +# /m)
  t.match(help.stdout, /users +\(with broker_auth_username loaded\)/)
})
