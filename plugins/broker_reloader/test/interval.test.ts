// The interval check: a plugin whose files change is reloaded without being
// asked, in this process (the node runs from sources) and in a node process
// running from dist/ as an installed node does (plain Node, no TypeScript
// loader), driven by the real bin/broker_ctl. And the settings the plugin
// refuses, with file:line.
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { connectMqtt, INSTALL_ROOT, readPluginConfigLines, startPluginNode, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { schema } from '../index.js'
import { CODE_PLUGIN, writeAnswer, writeCodePlugin, until } from './fixtures.js'


const logLines = async (file: string): Promise<string[]> => (await readFile(file, 'utf8').catch(() => '')).trim().split('\n').filter((l) => l !== '')

t.test('a changed plugin is reloaded by the interval check; a broken change is refused once', async (t) => {
  const dir = t.testdir({})
  await writeCodePlugin(dir, 'ts')
  const logFile = join(dir, 'logs', 'reloader.log')
  const harness = await startPluginNode({
    plugin: 'broker_reloader',
    settings: { 'reloader.interval': '1s', 'reloader.logfile': logFile },
    others: { [CODE_PLUGIN]: {} },
    pluginDirs: [dir]
  })
  t.teardown(harness.stop)
  const fixture = async (): Promise<unknown> => (await harness.node.commands.run(['fixture'])).data
  const client = await harness.mqtt({ clientId: 'stays' })
  let closed = false
  client.on('close', () => { closed = true })

  await writeAnswer(dir, 'ts', 'v2')
  await until('the new code', async () => await fixture() === 'v2')
  await until('the log line', async () => (await logLines(logFile)).length === 1)
  t.match((await logLines(logFile))[0], `${CODE_PLUGIN}@${harness.node.name} by interval: reloaded, version 1.0.0, running`)

  await writeAnswer(dir, 'ts', 'v3', 'export const broken = (')
  await until('the failure logged', async () => (await logLines(logFile)).length === 2)
  t.match((await logLines(logFile))[1], /by interval: failed: plugin broker_fixture_code: its new code does not import: .*answer\.ts/)
  t.equal(await fixture(), 'v2', 'the old code runs on')

  await writeAnswer(dir, 'ts', 'v4')
  await until('the fixed code', async () => await fixture() === 'v4')
  await until('its log line', async () => (await logLines(logFile)).length === 3)
  t.match((await logLines(logFile))[2], 'by interval: reloaded')
  t.notOk(closed, 'the client stayed connected')
  t.ok(client.connected)
})

t.test('the shipped settings file holds the defaults; settings the reloader refuses', async (t) => {
  const shipped = join(INSTALL_ROOT, 'etc', 'plugins', 'broker_reloader.conf')
  t.same(validatePluginConfig(schema, await readPluginConfigLines(shipped), shipped), { 'reloader.interval': 60_000, 'reloader.logfile': 'log/reloader.log' })
  t.same(validatePluginConfig(schema, [], shipped), { 'reloader.interval': 60_000, 'reloader.logfile': 'log/reloader.log' }, 'the same as the schema\'s defaults')
  const refused = async (settings: Record<string, string>): Promise<string> =>
    await startPluginNode({ plugin: 'broker_reloader', settings }).then(async (node) => { await node.stop(); return 'loaded' }, (err: Error) => err.message)
  t.match(await refused({ 'reloader.interval': 'soon' }), /broker_reloader\.conf:1: reloader\.interval: .*"soon" is not a duration/)
  t.match(await refused({ 'reloader.interval': '500ms' }), /broker_reloader\.conf:1: reloader\.interval: .*must be 0 \(off\) or at least 1s/)
  const underAFile = join(INSTALL_ROOT, 'package.json', 'reloader.log')
  t.match(await refused({ 'reloader.logfile': underAFile }), `reloader.logfile: ${underAFile}: E`)
  t.equal(await refused({ 'reloader.interval': '0', 'reloader.logfile': '' }), 'loaded', 'off, and no log file')
})

/** Runs the real bin/broker_ctl against a node's data folder. */
async function ctl (dataDir: string, ...args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  return await new Promise((resolve) => {
    execFile(process.execPath, [join(INSTALL_ROOT, 'bin', 'broker_ctl'), '--data-dir', dataDir, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr })
    })
  })
}

t.test('a node running from dist/ (plain Node): the interval, broker_ctl reload and its exit codes', async (t) => {
  const dir = t.testdir({})
  await writeCodePlugin(dir, 'js')
  const logFile = join(dir, 'reloader.log')
  const child = join(dir, 'node.mjs')
  await writeFile(child, `import { startPluginNode } from '${pathToFileURL(join(INSTALL_ROOT, 'dist/lib/plugin-kit/testing.js')).href}'
const [dir, logFile] = process.argv.slice(2)
const node = await startPluginNode({
  plugin: 'broker_reloader',
  settings: { 'reloader.interval': '1s', 'reloader.logfile': logFile },
  others: { ${CODE_PLUGIN}: {} },
  pluginDirs: [dir]
})
console.log(JSON.stringify({ dataDir: node.dataDir, port: node.port() }))
process.once('SIGTERM', () => { node.stop().then(() => process.exit(0)) })
`)
  const proc = spawn(process.execPath, [child, dir, logFile], { cwd: INSTALL_ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(async () => {
    if (proc.exitCode !== null) return
    proc.kill('SIGTERM')
    const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
    await once(proc, 'exit')
    clearTimeout(killer)
  })
  const [line] = await once(createInterface({ input: proc.stdout }), 'line') as [string]
  const { dataDir, port } = JSON.parse(line) as { dataDir: string, port: number }
  const client = await connectMqtt(`mqtt://127.0.0.1:${port}`, { clientId: 'stays' })
  t.teardown(async () => { await client.endAsync(true) })
  let closed = false
  client.on('close', () => { closed = true })

  t.same(await ctl(dataDir, 'fixture'), { code: 0, stdout: 'v1\n', stderr: '' })
  await writeAnswer(dir, 'js', 'v2')
  await until('the interval reload', async () => (await logLines(logFile)).some((l) => l.includes('by interval: reloaded')))
  t.equal((await ctl(dataDir, 'fixture')).stdout, 'v2\n', 'the new code of the second module runs')

  await writeAnswer(dir, 'js', 'v3', 'export const broken = (')
  const broken = await ctl(dataDir, 'reload', CODE_PLUGIN)
  t.equal(broken.code, 1, 'a failed reload exits 1')
  t.match(broken.stderr, new RegExp(`its new code does not import: \\S*${CODE_PLUGIN}/lib/answer\\.js:\\d+: SyntaxError: `), 'naming the file and line')
  t.equal((await ctl(dataDir, 'fixture')).stdout, 'v2\n', 'the old code runs on')
  await writeAnswer(dir, 'js', 'v3', "throw new Error('v3 throws at import')")
  t.match((await ctl(dataDir, 'reload', CODE_PLUGIN)).stderr, new RegExp(`its new code does not import: \\S*${CODE_PLUGIN}/lib/answer\\.js:2: Error: v3 throws at import`), 'an error thrown at import: its file and line')

  await writeAnswer(dir, 'js', 'v4')
  const fixed = await ctl(dataDir, 'reload', CODE_PLUGIN)
  t.equal(fixed.code, 0)
  t.equal(fixed.stdout, `Plugin ${CODE_PLUGIN} reloaded successfully (version 1.0.0).\n`)
  t.equal((await ctl(dataDir, 'fixture')).stdout, 'v4\n')
  t.equal((await ctl(dataDir, 'reload', 'broker_reloader')).code, 1, 'the reloader refuses its own reload')
  t.equal((await ctl(dataDir, 'reload')).code, 2, 'no plugin named: a usage error')
  t.notOk(closed, 'the client stayed connected')
})
