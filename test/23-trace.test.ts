// broker_ctl trace: the packets of one client and the messages of a topic
// filter written to files, from a real client session against a running node
// (bin/broker_ctl is a process of its own); and no cost while no trace runs.
import { execFile } from 'node:child_process'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { packetObservers } from '../lib/engine/internals.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { startBroker, tempDir } from './helpers/broker.js'
import { startCtlBroker } from './helpers/ctl.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'

t.test('trace client and trace topic write what a real session did', async (t) => {
  const node = await startCtlBroker()
  t.teardown(node.stop)
  const dir = await tempDir()
  const clientLog = join(dir, 'client.log')
  const topicLog = join(dir, 'topic.log')

  t.equal((await node.run('trace', 'client', 'tr-1', clientLog)).stdout, 'trace client_id tr-1 successfully\n')
  t.equal((await node.run('trace', 'topic', 'tr/+', topicLog)).stdout, 'trace topic tr/+ successfully\n')
  t.same((await node.json('trace', 'list')).data, [
    { type: 'client', name: 'tr-1', destination: clientLog },
    { type: 'topic', name: 'tr/+', destination: topicLog }
  ])
  t.equal((await node.run('trace', 'list')).stdout,
    `Trace(client_id=tr-1, level=all, destination="${clientLog}")\nTrace(topic=tr/+, level=all, destination="${topicLog}")\n`)
  const twice = await node.run('trace', 'client', 'tr-1', clientLog)
  t.equal(twice.code, 1, 'a client traced already')

  const other = await connect(node.mqttUrl, { clientId: 'other' })
  const client = await connect(node.mqttUrl, { clientId: 'tr-1', protocolVersion: 5, username: 'u1', password: 'hunter2' })
  await client.subscribeAsync('tr/#', { qos: 1 })
  const got = nextMessages(client, 1)
  await client.publishAsync('tr/a', 'x'.repeat(10), { qos: 1 })
  await got
  await client.endAsync()
  await other.publishAsync('elsewhere/b', 'not traced')
  await other.publishAsync('tr/b/c', 'not under tr/+')
  await closeAll(other)

  t.equal((await node.run('trace', 'client', 'tr-1', 'off')).stdout, 'stop tracing client_id tr-1 successfully\n')
  t.equal((await node.run('trace', 'topic', 'tr/+', 'off')).code, 0)
  t.equal((await node.run('trace', 'topic', 'tr/+', 'off')).code, 1, 'nothing left to stop')

  const lines = (await readFile(clientLog, 'utf8')).trimEnd().split('\n')
  const kinds = lines.map((line) => /^\S+ tr-1@127\.0\.0\.1:\d+ (RECV|SEND) ([A-Z]+)\(/.exec(line)?.slice(1, 3).join(' '))
  t.same(kinds.slice(0, 4), ['RECV CONNECT', 'SEND CONNACK', 'RECV SUBSCRIBE', 'SEND SUBACK'], 'one line per packet, in order')
  t.same(kinds.slice(4, -1).sort(), ['RECV PUBACK', 'RECV PUBLISH', 'SEND PUBACK', 'SEND PUBLISH'], 'the QoS 1 exchange both ways')
  t.equal(kinds.at(-1), 'RECV DISCONNECT')
  t.match(lines[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d tr-1@127\.0\.0\.1:\d+ RECV CONNECT\(ClientId=tr-1, ProtoName=MQTT, ProtoVer=5, CleanStart=true, KeepAlive=60, Username=u1, Password=\*{6}/)
  t.notMatch(lines.join('\n'), 'hunter2', 'never the password')
  t.ok(lines.some((line) => /RECV SUBSCRIBE\(PacketId=\d+, TopicFilters=tr\/#\(q1\)/.test(line)))
  t.ok(lines.some((line) => /RECV PUBLISH\(Q1, R0, D0, Topic=tr\/a, PacketId=\d+, Payload=10 bytes/.test(line)), 'payload size, not the payload')
  t.ok(lines.some((line) => /SEND PUBLISH\(Q1, R0, D0, Topic=tr\/a/.test(line)))
  t.equal(lines.filter((line) => line.includes(' other')).length, 0, 'only the traced client')

  const topicLines = (await readFile(topicLog, 'utf8')).trimEnd().split('\n')
  t.equal(topicLines.length, 1, 'only messages to tr/+')
  t.match(topicLines[0], /^\S+ tr\/\+ PUBLISH from tr-1 PUBLISH\(Q1, R0, D0, Topic=tr\/a, .*Payload=10 bytes/)

  const size = (await stat(clientLog)).size
  const again = await connect(node.mqttUrl, { clientId: 'tr-1' })
  await closeAll(again)
  t.equal((await stat(clientLog)).size, size, 'nothing is written after the trace stopped')
})

t.test('trace errors; a relative file is where broker_ctl runs', async (t) => {
  const node = await startCtlBroker()
  t.teardown(node.stop)
  const bad = await node.run('trace', 'client', 'x', '/nonexistent-dir/x.log')
  t.equal(bad.code, 1)
  t.match(bad.stderr, /^\[error\] trace client_id x: cannot write \/nonexistent-dir\/x\.log/)
  t.same((await node.json('trace', 'list')).data, [], 'a trace that could not start is not listed')
  t.equal((await node.run('trace', 'client', 'x')).code, 2, 'missing file')
  t.equal((await node.run('trace', 'user', 'x', 'f.log')).code, 2)

  const cwd = await tempDir()
  await promisify(execFile)(process.execPath, [join(INSTALL_ROOT, 'bin', 'broker_ctl'), '--data-dir', node.dataDir, 'trace', 'client', 'rel', 'rel.log'], { cwd })
  t.same((await node.json('trace', 'list')).data, [{ type: 'client', name: 'rel', destination: join(cwd, 'rel.log') }])
  t.ok((await stat(join(cwd, 'rel.log'))).isFile())
})

t.test('while no trace runs, the engine has no tracing observer and no publish listener', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const engine = broker.node.engine
  const base = packetObservers(engine)
  const publishListeners = engine.listenerCount('publish')
  const dir = await tempDir()
  await broker.node.tracer.start('client', 'c', join(dir, 'c.log'))
  t.not(packetObservers(engine).packetIn, base.packetIn, 'a client trace observes packets')
  t.equal(engine.listenerCount('publish'), publishListeners + 1, 'a client trace adds one publish listener (for its client\'s rewritten topics)')
  await broker.node.tracer.start('topic', '#', join(dir, 't.log'))
  t.equal(engine.listenerCount('publish'), publishListeners + 1, 'one for every trace')
  await broker.node.tracer.stopAll()
  t.same(packetObservers(engine), base, 'the metrics\' own observers again')
  t.equal(engine.listenerCount('publish'), publishListeners)
})
