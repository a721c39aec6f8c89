// One validator, one style (issue 22 #8): etc/broker.conf's values and the
// plugins' confs are both validated by joi and refused in the same words,
// `file:line: key: why`, by a real `bin/broker` that exits 1 before anything
// listens. The starts run side by side (each fails within its first second).
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from './helpers/broker.js'
import { isolatedSettings, spawnWithConf } from './helpers/broker-process.js'

interface Refusal { stderr: string, code: number | string, listened: boolean }

/** Starts bin/broker with `line` as the 2nd line of etc/broker.conf (or, `plugin` given, of that plugin's conf); resolves when it exits. */
async function start (line: string, plugin?: string): Promise<{ file: string, refusal: Refusal }> {
  const dir = await tempDir()
  const data = join(dir, 'data')
  await mkdir(join(data, 'plugins'), { recursive: true })
  const conf = join(dir, 'broker.conf')
  const file = plugin === undefined ? conf : join(data, 'plugins', `${plugin}.conf`)
  await writeFile(join(data, 'loaded_plugins'), plugin === undefined ? '' : `${plugin}.\n`)
  await writeFile(conf, plugin === undefined ? `# first line\n${line}\n${isolatedSettings({})}` : isolatedSettings({}))
  if (plugin !== undefined) await writeFile(file, `# first line\n${line}\n`)
  const broker = spawnWithConf(['-c', conf, '-d', data])
  const code = await broker.exited
  return { file, refusal: { stderr: broker.stderr.join('\n'), code, listened: broker.lines.some((l) => l.includes('"listener started"')) } }
}

const CASES: Array<{ what: string, line: string, plugin?: string, why: string }> = [
  { what: 'a wrong duration', line: 'mqtt.acl_cache_ttl = 5 minutes', why: 'mqtt.acl_cache_ttl: "5 minutes" is not a duration (e.g. 30s, 5m, 2h, or seconds)' },
  { what: 'a wrong enum', line: 'broker.shared_subscription_strategy = fastest', why: 'broker.shared_subscription_strategy: "fastest" is not one of random | round_robin | sticky | hash' },
  { what: 'an out-of-range integer', line: 'zone.external.max_qos_allowed = 3', why: 'zone.external.max_qos_allowed: 3 is out of range 0..2' },
  { what: 'not an integer', line: 'node.drain_rate = 1.5', why: 'node.drain_rate: 1.5 is not an integer' },
  { what: 'a wrong switch', line: 'mqtt.allow_anonymous = maybe', why: 'mqtt.allow_anonymous: "maybe" is not a switch (true | false | on | yes | enable | off | no | disable)' },
  { what: 'an unknown key', line: 'mqtt.allow_anonymus = false', why: 'mqtt.allow_anonymus: unknown setting' },
  { what: 'a broken line', line: 'mqtt.allow_anonymous false', why: 'expected "key = value", got "mqtt.allow_anonymous false"' },
  // the same words for a plugin's conf (its joi schema)
  { what: 'a plugin\'s wrong enum', plugin: 'broker_retainer', line: 'retainer.storage_type = tape', why: 'retainer.storage_type: "tape" is not one of ram | disc | disc_only' },
  { what: 'a plugin\'s out-of-range integer', plugin: 'broker_retainer', line: 'retainer.max_retained_messages = -1', why: 'retainer.max_retained_messages: -1 is out of range 0..9007199254740991' },
  { what: 'a plugin\'s wrong duration', plugin: 'broker_retainer', line: 'retainer.expiry_interval = soon', why: 'retainer.expiry_interval: "soon" is not a duration (e.g. 30s, 5m, 2h, or seconds)' },
  { what: 'a plugin\'s unknown key', plugin: 'broker_retainer', line: 'retainer.storage = disc', why: 'retainer.storage: unknown setting' }
]

const outcomes = await Promise.all(CASES.map(async (c) => await start(c.line, c.plugin)))

CASES.forEach(({ what, why }, i) => {
  t.test(what, async (t) => {
    const { file, refusal } = outcomes[i]
    t.equal(refusal.code, 1, 'exit 1')
    t.equal(refusal.stderr.trim(), `broker: ${file}:2: ${why}`, 'file:line: key: why on stderr')
    t.notOk(refusal.listened, 'nothing was opened')
  })
})
