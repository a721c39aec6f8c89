// The parts of broker_recon without a node: where a heap snapshot may be
// written (every way out of the data directory refused, on a real folder
// with real symbolic links; the writing itself is tested on a node
// process, test/ctl.test.ts: a snapshot of this tap process takes minutes), the settings (shipped file, refusals with
// file:line), the top lists and the node_stats limits.
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, validatePluginConfig, type ClientLoadFacts } from '../../../lib/plugin-kit/testing.js'
import { top, topAttribute } from '../figures.js'
import { snapshotPath, writeHeapSnapshot } from '../heap-snapshot.js'
import { nodeStatsRefusal } from '../node-stats.js'
import { schema, type ReconConfig } from '../settings.js'

const FILE = 'etc/plugins/broker_recon.conf'
const read = (text: string): ReconConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

const root = await mkdtemp(join(tmpdir(), 'recon-unit-'))
t.teardown(async () => await rm(root, { recursive: true, force: true }))
const data = join(root, 'data')
const outside = join(root, 'outside')
await mkdir(join(data, 'snapshots'), { recursive: true })
await mkdir(outside)
await symlink(outside, join(data, 'linked'))
await symlink(join(outside, 'target.heapsnapshot'), join(data, 'dangling.heapsnapshot'))
await writeFile(join(data, 'there.heapsnapshot'), 'x')

t.test('a snapshot name is taken inside the data directory, with .heapsnapshot added', async (t) => {
  t.equal(await snapshotPath(data, 'one'), join(data, 'one.heapsnapshot'))
  t.equal(await snapshotPath(data, 'snapshots/two.heapsnapshot'), join(data, 'snapshots', 'two.heapsnapshot'))
  t.equal(await snapshotPath(data, join(data, 'snapshots', 'three')), join(data, 'snapshots', 'three.heapsnapshot'), 'an absolute path inside it')
  t.equal(await snapshotPath(data, 'snapshots/../four'), join(data, 'four.heapsnapshot'), '.. that stays inside')
})

t.test('every way out of the data directory is refused, and nothing is written there', async (t) => {
  const refusals: Array<[string, RegExp]> = [
    ['../escape', /inside the data directory/],
    ['snapshots/../../escape', /inside the data directory/],
    [join(outside, 'abs'), /inside the data directory/],
    ['/etc/passwd', /inside the data directory/],
    ['linked/through-a-link', /linked: a symbolic link/],
    ['missing/x', /missing: no such folder/],
    ['there.heapsnapshot/x', /there\.heapsnapshot: not a folder/],
    ['', /name a file/],
    ['a\0b', /name a file/]
  ]
  for (const [name, why] of refusals) await t.rejects(snapshotPath(data, name), { name: 'SnapshotRefused', message: why }, JSON.stringify(name))
  // an existing file, or a link put where the file would go, is never opened
  await t.rejects(writeHeapSnapshot(data, 'there'), { name: 'SnapshotRefused', message: /exists already/ })
  await t.rejects(writeHeapSnapshot(data, 'dangling'), { name: 'SnapshotRefused', message: /exists already/ })
  t.same(await readdir(outside), [], 'nothing appeared outside')
  t.equal(await readFile(join(data, 'there.heapsnapshot'), 'utf8'), 'x', 'the existing file is untouched')
})

t.test('settings: the shipped file gives the defaults; bad values are refused with file:line', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  t.same(validatePluginConfig(schema, await readPluginConfigLines(file), file), { 'recon.top': 10, 'recon.event_loop.resolution': 10, 'recon.heapsnapshot': true })
  t.same(read('recon.top = 50\nrecon.event_loop.resolution = 1ms\nrecon.heapsnapshot = off'), { 'recon.top': 50, 'recon.event_loop.resolution': 1, 'recon.heapsnapshot': false })
  t.throws(() => read('recon.top = many'), { message: /^etc\/plugins\/broker_recon\.conf:1: recon\.top: \S+ is not (a number|an integer)/ })
  t.throws(() => read('\nrecon.top = 1001'), { message: /:2: recon\.top: 1001 is out of range 1\.\.1000$/ })
  t.throws(() => read('recon.event_loop.resolution = 2s'), { message: /:1: recon\.event_loop\.resolution: .*longer than 1s/ })
  t.throws(() => read('recon.heapsnapshot = maybe'), { message: /:1: recon\.heapsnapshot: \S+ is not a switch/ })
  t.throws(() => read('recon.tops = 1'), { message: /:1: recon\.tops: unknown setting$/ })
})

t.test('top lists: most first, ties by client id, clients with none left out; EMQ X attribute names accepted', async (t) => {
  const client = (id: string, fields: Partial<ClientLoadFacts>): ClientLoadFacts => ({ client_id: id, mqueue_len: 0, inflight_len: 0, awaiting_rel_len: 0, heap_size: 8192, buffered: 0, recv_oct: 0, send_oct: 0, ...fields })
  const clients = [client('b', { mqueue_len: 5 }), client('a', { mqueue_len: 5 }), client('c', { mqueue_len: 9 }), client('d', {})]
  t.same(top(clients, 'mqueue_len', 10).map((c) => c.client_id), ['c', 'a', 'b'])
  t.same(top(clients, 'mqueue_len', 2).map((c) => c.client_id), ['c', 'a'])
  t.same(top(clients, 'heap_size', 10).map((c) => c.client_id), ['a', 'b', 'c', 'd'])
  t.equal(topAttribute('message_queue_len'), 'mqueue_len')
  t.equal(topAttribute('memory'), 'heap_size')
  t.equal(topAttribute('recv_oct'), 'recv_oct')
  t.equal(topAttribute('reductions'), undefined)
  t.equal(topAttribute('__proto__'), undefined)
})

t.test('node_stats: samples and interval within what broker_ctl waits for', async (t) => {
  t.equal(nodeStatsRefusal(10, 1000), undefined)
  t.match(nodeStatsRefusal(0, 1000), /1 to 60/)
  t.match(nodeStatsRefusal(61, 100), /1 to 60/)
  t.match(nodeStatsRefusal(3, 50), /100 to 10000 ms/)
  t.match(nodeStatsRefusal(60, 1000), /at most 55 s/)
  t.match(nodeStatsRefusal(1.5, 1000), /1 to 60/)
})
