// Debian's real `mosquitto_pub` / `mosquitto_sub` (mosquitto-clients 2.0.x)
// against an in-process node, for MQTT 3.1, 3.1.1 and 5.0: live delivery at
// QoS 1 and 2, retained messages and the retain flag as those clients print it.
import { spawn, type ChildProcess } from 'node:child_process'
import t from 'tap'
import { engineClient } from '../lib/engine/internals.js'
import { startBroker } from './helpers/broker.js'

const broker = await startBroker()
t.teardown(broker.stop)

const VERSIONS = ['mqttv31', 'mqttv311', 'mqttv5'] as const
type Version = typeof VERSIONS[number]

/** mosquitto_sub's exit code when -W expires (it also prints "Timed out"). */
const TIMED_OUT = 27

interface Run { code: number | string, stdout: string, stderr: string }
interface Started { child: ChildProcess, done: Promise<Run> }

// Every process started here; whatever still runs at the end is killed.
const running = new Set<ChildProcess>()
t.teardown(() => {
  for (const child of running) child.kill('SIGKILL')
})

/** Starts a mosquitto client; it is killed (and its result says so) after `timeoutMs`. */
function start (command: 'mosquitto_pub' | 'mosquitto_sub', args: string[], timeoutMs = 10_000): Started {
  const child = spawn(command, ['-h', '127.0.0.1', '-p', String(broker.port()), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const done = new Promise<Run>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (err) => { stderr += err.message })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(child)
      resolve({ code: code ?? signal ?? -1, stdout, stderr })
    })
  })
  return { child, done }
}

async function run (command: 'mosquitto_pub' | 'mosquitto_sub', args: string[], timeoutMs?: number): Promise<Run> {
  return await start(command, args, timeoutMs).done
}

/** Polls the engine until `clientId` is connected and holds a subscription to `topic`. */
async function subscribed (clientId: string, topic: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (engineClient(broker.node.engine, clientId)?.subscriptions[topic] !== undefined) return
    if (Date.now() > deadline) throw new Error(`${clientId} did not subscribe to ${topic} within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Starts `mosquitto_sub` and resolves once the broker holds its subscription. */
async function startSub (version: Version, clientId: string, topic: string, extra: string[]): Promise<Started> {
  const sub = start('mosquitto_sub', ['-V', version, '-i', clientId, '-t', topic, ...extra])
  await Promise.race([
    subscribed(clientId, topic),
    sub.done.then((r) => { throw new Error(`mosquitto_sub exited early (${r.code}): ${r.stderr}`) })
  ])
  return sub
}

for (const version of VERSIONS) {
  t.test(`${version}: mosquitto_sub receives exactly the payload mosquitto_pub sends at QoS 1`, async (t) => {
    const topic = `mosq/${version}/q1`
    const payload = `hello from ${version} ✓`
    const sub = await startSub(version, `sub-${version}`, topic, ['-C', '1', '-W', '5', '-q', '1'])
    const pub = await run('mosquitto_pub', ['-V', version, '-i', `pub-${version}`, '-t', topic, '-m', payload, '-q', '1'])
    t.equal(pub.code, 0, `mosquitto_pub exits 0 (stderr: ${pub.stderr})`)
    const got = await sub.done
    t.equal(got.stdout, `${payload}\n`, 'the subscriber prints the payload and nothing else')
    t.equal(got.code, 0, `mosquitto_sub exits 0 after one message (stderr: ${got.stderr})`)
  })
}

t.test('mqttv5: a QoS 2 publish reaches a QoS 2 subscriber once, at QoS 2', async (t) => {
  const topic = 'mosq/v5/q2'
  // -C 2 -W 2: waits for a second copy; only the timeout may end it.
  const sub = await startSub('mqttv5', 'sub-q2', topic, ['-C', '2', '-W', '2', '-q', '2', '-F', '%q %p'])
  const pub = await run('mosquitto_pub', ['-V', 'mqttv5', '-i', 'pub-q2', '-t', topic, '-m', 'exactly once', '-q', '2'])
  t.equal(pub.code, 0, `mosquitto_pub -q 2 exits 0 (stderr: ${pub.stderr})`)
  const got = await sub.done
  t.equal(got.stdout, '2 exactly once\n', 'one message, delivered at QoS 2')
  t.equal(got.code, TIMED_OUT, 'mosquitto_sub ends by its -W timeout, not by a second message')
})

t.test('mqttv311: mosquitto_pub -q 2 to a mosquitto_sub -q 1 is delivered at QoS 1', async (t) => {
  const topic = 'mosq/v311/q2'
  const sub = await startSub('mqttv311', 'sub-q2-311', topic, ['-C', '1', '-W', '5', '-q', '1', '-F', '%q %p'])
  const pub = await run('mosquitto_pub', ['-V', 'mqttv311', '-i', 'pub-q2-311', '-t', topic, '-m', 'downgraded', '-q', '2'])
  t.equal(pub.code, 0, `mosquitto_pub exits 0 (stderr: ${pub.stderr})`)
  const got = await sub.done
  t.equal(got.stdout, '1 downgraded\n')
  t.equal(got.code, 0)
})

for (const version of VERSIONS) {
  t.test(`${version}: a message retained with mosquitto_pub -r reaches a later mosquitto_sub -v`, async (t) => {
    const topic = `mosq/retained/${version}`
    const pub = await run('mosquitto_pub', ['-V', version, '-i', `rpub-${version}`, '-t', topic, '-m', `kept ${version}`, '-q', '1', '-r'])
    t.equal(pub.code, 0, `mosquitto_pub -r exits 0 (stderr: ${pub.stderr})`)
    const got = await run('mosquitto_sub', ['-V', version, '-i', `rsub-${version}`, '-t', topic, '-v', '-C', '1', '-W', '5', '-q', '1'])
    t.equal(got.stdout, `${topic} kept ${version}\n`, 'prints "topic payload"')
    t.equal(got.code, 0, `mosquitto_sub exits 0 (stderr: ${got.stderr})`)
  })
}

t.test('mqttv5: the retain flag is 1 on the stored message and 0 on a live one', async (t) => {
  const topic = 'mosq/flag/v5'
  const retained = await run('mosquitto_pub', ['-V', 'mqttv5', '-i', 'flag-pub1', '-t', topic, '-m', 'old', '-q', '1', '-r'])
  t.equal(retained.code, 0)
  const sub = await startSub('mqttv5', 'flag-sub', topic, ['-C', '2', '-W', '5', '-q', '1', '-F', '%r %t %p'])
  const live = await run('mosquitto_pub', ['-V', 'mqttv5', '-i', 'flag-pub2', '-t', topic, '-m', 'new', '-q', '1'])
  t.equal(live.code, 0)
  const got = await sub.done
  t.equal(got.stdout, `1 ${topic} old\n0 ${topic} new\n`)
  t.equal(got.code, 0)
})

t.test('mqttv311: -R hides the retained message and shows only the live one', async (t) => {
  const topic = 'mosq/stale/v311'
  t.equal((await run('mosquitto_pub', ['-i', 'stale-pub1', '-t', topic, '-m', 'stale', '-q', '1', '-r'])).code, 0)
  const sub = await startSub('mqttv311', 'stale-sub', topic, ['-C', '1', '-W', '5', '-q', '1', '-R', '-F', '%r %p'])
  t.equal((await run('mosquitto_pub', ['-i', 'stale-pub2', '-t', topic, '-m', 'fresh', '-q', '1'])).code, 0)
  const got = await sub.done
  t.equal(got.stdout, '0 fresh\n', 'the stale message carried retain=1, the live one retain=0')
  t.equal(got.code, 0)
})

t.test('mosquitto_pub -r -n clears a retained message: a later mosquitto_sub gets nothing', async (t) => {
  const topic = 'mosq/cleared'
  t.equal((await run('mosquitto_pub', ['-i', 'clr-pub1', '-t', topic, '-m', 'doomed', '-q', '1', '-r'])).code, 0)
  const before = await run('mosquitto_sub', ['-i', 'clr-sub1', '-t', topic, '-C', '1', '-W', '5'])
  t.equal(before.stdout, 'doomed\n', 'the message was retained')
  t.equal((await run('mosquitto_pub', ['-i', 'clr-pub2', '-t', topic, '-n', '-q', '1', '-r'])).code, 0)
  const after = await run('mosquitto_sub', ['-i', 'clr-sub2', '-t', topic, '-C', '1', '-W', '1'])
  t.equal(after.stdout, '', 'nothing is printed')
  t.equal(after.code, TIMED_OUT, 'mosquitto_sub ends by its -W timeout')
})

t.test('mqttv5: a wildcard mosquitto_sub gets the retained messages of several topics', async (t) => {
  const topics = ['mosq/wild/a', 'mosq/wild/b', 'mosq/wild/c/d']
  for (const [i, topic] of topics.entries()) {
    t.equal((await run('mosquitto_pub', ['-V', 'mqttv5', '-i', `wild-pub${i}`, '-t', topic, '-m', `v${i}`, '-r'])).code, 0)
  }
  const got = await run('mosquitto_sub', ['-V', 'mqttv5', '-i', 'wild-sub', '-t', 'mosq/wild/#', '-C', '3', '-W', '5', '-F', '%r %t %p'])
  t.same(got.stdout.split('\n').filter(Boolean).sort(), ['1 mosq/wild/a v0', '1 mosq/wild/b v1', '1 mosq/wild/c/d v2'])
  t.equal(got.code, 0)
})
