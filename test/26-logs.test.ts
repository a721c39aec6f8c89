// Logs (issue 10): the console format forced to json or text, the log file
// with rotation by size and count, and levels that change at run time.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { Config } from '../lib/config/store.js'
import { setsToLines } from '../lib/config/load.js'
import { createNodeLogger, followLevel, logSettings } from '../lib/log.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { freePort, tempDir } from './helpers/broker.js'
import { closeAll, connect } from './helpers/mqtt.js'

interface Run { stdout: string[], stderr: string[], port: number, stop: () => Promise<void> }

/** A real `bin/broker` with its stdout and stderr kept apart; stops with SIGTERM. */
async function runBroker (dataDir: string, settings: Record<string, string>): Promise<Run> {
  const port = await freePort()
  await writeFile(join(dataDir, 'loaded_plugins'), '')
  const all: Record<string, string> = { 'listener.tcp.external': `127.0.0.1:${port}`, 'listener.ssl.external': 'off', 'listener.ws.external': 'off', 'listener.wss.external': 'off', ...settings }
  const args = [join(INSTALL_ROOT, 'bin', 'broker'), '--data-dir', dataDir, ...Object.entries(all).flatMap(([k, v]) => ['--set', `${k}=${v}`])]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const stdout: string[] = []
  const stderr: string[] = []
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  createInterface({ input: child.stderr }).on('line', (line) => stderr.push(line))
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout.push(line)
      if (line.includes('broker node is running')) resolve()
    })
    void exited.then((code) => reject(new Error(`broker exited (${code}) before running:\n${[...stdout, ...stderr].join('\n')}`)))
  })
  return {
    stdout,
    stderr,
    port,
    async stop () {
      child.kill('SIGTERM')
      await exited
    }
  }
}

t.test('log.console.format = json: every stdout line is one JSON record', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const run = await runBroker(dir, { 'log.console.format': 'json', 'log.console.level': 'debug' })
  const client = await connect(`mqtt://127.0.0.1:${run.port}`, { clientId: 'json-log' })
  await closeAll(client)
  await run.stop()
  t.ok(run.stdout.length >= 3, `several lines (${run.stdout.length})`)
  for (const line of run.stdout) {
    const record = JSON.parse(line) as Record<string, unknown>
    t.ok(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(record.level as string) && typeof record.msg === 'string', line)
    t.match(record.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/, 'RFC 3339 with the offset')
  }
  t.ok(run.stdout.some((l) => JSON.parse(l).msg === 'broker node is running'))
  t.ok(run.stdout.some((l) => JSON.parse(l).msg === 'client connected' && JSON.parse(l).clientId === 'json-log'), 'a debug record with its fields')
  t.ok(run.stdout.some((l) => JSON.parse(l).msg === 'broker node stopped'))
})

t.test('log.console.format = text: human-readable lines, not JSON, even without a terminal', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const run = await runBroker(dir, { 'log.console.format': 'text', 'log.console.level': 'info' })
  await run.stop()
  const running = run.stdout.find((l) => l.includes('broker node is running'))
  t.ok(running, 'the running line is there')
  t.match(running, /INFO/)
  t.match(running, /node: "broker@127\.0\.0\.1"|"node":"broker@127\.0\.0\.1"/, 'its fields on the same line')
  for (const line of run.stdout.filter((l) => l.trim() !== '')) {
    t.throws(() => JSON.parse(line), line)
  }
})

t.test('log.file: written as JSON lines beside the console, relative to the install root when relative', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'log', 'broker.log')
  const run = await runBroker(dir, { 'log.console.format': 'text', 'log.console.level': 'info', 'log.file': file, 'log.file.level': 'debug' })
  const client = await connect(`mqtt://127.0.0.1:${run.port}`, { clientId: 'file-log' })
  await closeAll(client)
  await run.stop()
  t.notOk(run.stdout.some((l) => l.includes('client connected')), 'debug is not on the console (info)')
  const lines = (await readFile(file, 'utf8')).trim().split('\n')
  const records = lines.map((l) => JSON.parse(l) as { msg: string, clientId?: string })
  const messages = records.map((r) => r.msg)
  t.ok(messages.includes('broker node is running'))
  t.ok(records.some((r) => r.msg === 'client connected' && r.clientId === 'file-log'), 'debug is in the file (debug)')
  t.ok(messages.includes('broker node stopped'))

  const config = new Config(setsToLines(['log.file=log/broker.log']))
  t.equal(logSettings(config, '/opt/broker').file?.path, '/opt/broker/log/broker.log')
  t.equal(logSettings(new Config(), '/opt/broker').file, undefined, 'empty: no file')
})

t.test('log.file rotates by size and keeps at most max_count files', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'broker.log')
  const logger = createNodeLogger({ level: 'emergency', format: 'json', file: { path, level: 'info', maxSize: 2048, maxCount: 3 } })
  for (let i = 0; i < 200; i++) logger.info({ i, pad: 'x'.repeat(60) }, 'record')
  t.same((await readdir(dir)).sort(), ['broker.log', 'broker.log.1', 'broker.log.2'], 'the current file and two rotated ones')
  const numbers: number[][] = []
  for (const name of ['broker.log.2', 'broker.log.1', 'broker.log']) {
    t.ok((await stat(join(dir, name))).size <= 2048, `${name} within max_size`)
    const records = (await readFile(join(dir, name), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { i: number })
    numbers.push(records.map((r) => r.i))
  }
  const flat = numbers.flat()
  t.equal(flat.at(-1), 199, 'the newest record is in the current file')
  t.same(flat, flat.map((_, k) => flat[0] + k), 'oldest file first, no record lost or repeated between the kept files')
  t.ok(flat[0] > 0, 'the oldest records were deleted with the oldest file')

  const one = join(dir, 'single', 'b.log')
  const single = createNodeLogger({ level: 'emergency', format: 'json', file: { path: one, level: 'info', maxSize: 512, maxCount: 1 } })
  for (let i = 0; i < 50; i++) single.info({ i }, 'record')
  t.same(await readdir(join(dir, 'single')), ['b.log'], 'max_count 1: one file, emptied when full')
  t.ok((await stat(one)).size <= 512)
})

t.test('the log file level and the console level change at run time', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'broker.log')
  const config = new Config(setsToLines(['log.console.level=emergency', `log.file=${path}`, 'log.file.level=error']))
  const logger = createNodeLogger(logSettings(config, dir))
  const unfollow = followLevel(config, logger)
  t.teardown(unfollow)
  logger.info('before')
  t.notOk(existsSync(path) && (await readFile(path, 'utf8')).includes('before'), 'info is below the file level')
  t.equal(logger.level, 'error', 'the logger is at the lower of the two levels')
  config.set('log.file.level', 'debug')
  t.equal(logger.level, 'debug')
  logger.debug('after')
  t.match(await readFile(path, 'utf8'), /"msg":"after"/, 'debug reaches the file now')
  config.set('log.file.level', 'warning')
  config.set('log.console.level', 'info')
  t.equal(logger.level, 'info', 'the console is the lower one now')
  config.set('log.console.level', 'emergency')
  t.equal(logger.level, 'warn')
  logger.info('not written')
  t.notMatch(await readFile(path, 'utf8'), /not written/, 'info no longer reaches the file')
})
