// A plugin listed in data/loaded_plugins whose settings are refused stops the
// start of a real `bin/broker` as a refused setting of the node does (test/07:
// exit 1, `broker: <file>:<line>: <key>: <why>` on stderr), nothing left
// listening (issue 22 #3); `--lenient-plugins` logs it and runs without the plugin.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from './helpers/broker.js'
import { isolatedSettings, spawnWithConf } from './helpers/broker-process.js'

/** A data dir loading `plugins`, with `conf` written as each plugin's run-time settings file (data/plugins/<name>.conf). */
async function dataDir (plugins: string[], conf: Record<string, string>): Promise<{ data: string, conf: string }> {
  const dir = await tempDir()
  const data = join(dir, 'data')
  await mkdir(join(data, 'plugins'), { recursive: true })
  await writeFile(join(data, 'loaded_plugins'), plugins.map((p) => `${p}.\n`).join(''))
  for (const [plugin, text] of Object.entries(conf)) await writeFile(join(data, 'plugins', `${plugin}.conf`), text)
  const file = join(dir, 'broker.conf')
  await writeFile(file, isolatedSettings({}))
  return { data, conf: file }
}

for (const { plugin, line, why } of [
  { plugin: 'broker_management', line: 'management.listener.http = 127.0.0.1:99999', why: /management\.listener\.http: .*port over 65535/ },
  { plugin: 'broker_retainer', line: 'retainer.max_payload_size = big', why: /retainer\.max_payload_size: / }
]) {
  t.test(`${plugin}: a refused setting stops the start`, async (t) => {
    const { data, conf } = await dataDir([plugin, 'broker_modules'], { [plugin]: `# first line\n${line}\n` })
    const file = join(data, 'plugins', `${plugin}.conf`)
    const broker = spawnWithConf(['-c', conf, '-d', data])
    t.equal(await broker.exited, 1, 'exit 1, as for the node\'s own settings')
    const stderr = broker.stderr.join('\n')
    t.match(stderr, new RegExp(`^broker: ${file.replaceAll('.', '\\.')}:2: `), 'broker: file:line: on stderr')
    t.match(stderr, why, 'key: why')
    t.notOk(broker.lines.some((l) => l.includes('"listener started"')), 'no listener was opened')
    t.notOk(broker.lines.some((l) => l.includes('"broker node is running"')), 'the node never ran')
  })
}

t.test('--lenient-plugins: the plugin is logged and skipped, the node runs', async (t) => {
  const { data, conf } = await dataDir(['broker_management', 'broker_retainer'], { broker_management: 'management.listener.http = 127.0.0.1:99999\n' })
  const broker = spawnWithConf(['-c', conf, '-d', data, '--lenient-plugins'])
  t.teardown(() => { broker.child.kill('SIGKILL') })
  await broker.line('"broker node is running"')
  t.match(await broker.line('"plugin failed to load at boot"'), /"plugin":"broker_management".*management\.listener\.http/)
  t.ok(broker.lines.some((l) => l.includes('"plugin loaded"') && l.includes('"broker_retainer"')), 'the other plugins load')
  broker.child.kill('SIGTERM')
  t.equal(await broker.exited, 0)
})
