// Progress of the long operations a person waits on at `broker_ctl` (issue 22
// point 7), against a real node process: a followed drain, a plugin reload and
// a big listing report on stderr (`--progress`: plain lines), and stdout holds
// only the answer (--json stays JSON). The terminal form (one line that
// updates) is checked on ProgressDisplay with a stand-in terminal.
import t from 'tap'
import { ProgressDisplay } from '../lib/ctl/progress-display.js'
import { spawnCtlNode } from './helpers/ctl.js'
import { closeAll, connect } from './helpers/mqtt.js'

t.test('terminal: one line that updates, cut to the width, wiped before the answer', async (t) => {
  const written: string[] = []
  const display = new ProgressDisplay('terminal', { write: (text: string) => written.push(text) > 0, columns: 20 })
  display.show('draining: 1 of 9')
  display.show('draining: 2 of 9 clients disconnected')
  display.done()
  t.strictSame(written, ['\r\x1b[Kdraining: 1 of 9', '\r\x1b[Kdraining: 2 of 9 c…', '\r\x1b[K'])
})

t.test('a node process', async (t) => {
  const node = await spawnCtlNode({ broker_retainer: {} }, { 'mqtt.allow_anonymous': 'true' })
  t.teardown(node.stop)

  t.test('a big listing: a counter on stderr, only the answer on stdout', async (t) => {
    const topics = Array.from({ length: 1500 }, (_, i) => `progress/listing/${i}`)
    const client = await connect(node.mqttUrl, { clientId: 'many-subscriptions' })
    t.teardown(() => closeAll(client))
    await client.subscribeAsync(topics, { qos: 1 })

    const text = await node.run('--progress', 'subscriptions', 'list')
    t.equal(text.code, 0)
    t.equal(text.stdout.trim().split('\n').length, topics.length, 'stdout: one line per subscription, nothing else')
    t.match(text.stderr, /^received the answer: \d+ KiB$/m, 'stderr: the size of the answer')

    const json = await node.run('--progress', '--json', 'subscriptions', 'list')
    t.equal((JSON.parse(json.stdout) as unknown[]).length, topics.length, '--json: stdout is the JSON answer alone')
    t.match(json.stderr, /received the answer: \d+ KiB/)

    const quiet = await node.run('subscriptions', 'list')
    t.equal(quiet.stderr, '', 'no --progress and no terminal: nothing on stderr')
  })

  t.test('a plugin reload says what it waits for', async (t) => {
    const run = await node.run('--progress', 'plugins', 'reload', 'broker_retainer')
    t.equal(run.code, 0)
    t.equal(run.stderr, 'reloading plugin broker_retainer\n')
    t.equal(run.stdout, 'Plugin broker_retainer reloaded successfully.\n')
  })

  t.test('a followed drain: how many clients are left, until none', async (t) => {
    const clients = await Promise.all(Array.from({ length: 6 }, async (_, i) => await connect(node.mqttUrl, { clientId: `drained-${i}`, reconnectPeriod: 0 })))
    t.teardown(() => closeAll(...clients))
    const run = await node.run('--progress', '--json', 'node', 'drain', '3')
    t.equal(run.code, 0)
    t.match(JSON.parse(run.stdout), { state: 'drained', total: 6, disconnected: 6, remaining: 0 }, '--json: the final status alone on stdout')
    const lines = run.stderr.trim().split('\n')
    const left = lines.map((line) => /^draining: (\d+) of 6 clients disconnected, (\d+) left \(3\/s\)$/.exec(line))
    t.ok(left.every((m) => m !== null), `every stderr line is a progress line:\n${run.stderr}`)
    const remaining = left.map((m) => Number(m![2]))
    t.ok(remaining[0] > 0, 'the first line came while clients were left')
    t.strictSame(remaining, [...remaining].sort((a, b) => b - a), 'the count of clients left only goes down')
    t.ok(remaining.every((n, i) => i === 0 || n < remaining[i - 1]), 'a line only when something changed')
  })
})
