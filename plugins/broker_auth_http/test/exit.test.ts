// After unload nothing of the plugin keeps a process alive: a child process
// with an idle keep-alive connection and an unanswered request exits at once.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createInterface } from 'node:readline'
import t from 'tap'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'
import { startAuthServer, until } from './server.js'

const TS_LOADER = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
const LOADER = TS_LOADER.length > 0
  ? TS_LOADER
  : [`--import=${pathToFileURL(join(INSTALL_ROOT, 'node_modules/@tapjs/typescript/dist/esm/import.mjs')).href}`]

t.test('a process exits right after unload', async (t) => {
  const server = await startAuthServer()
  t.teardown(async () => { await server.close() })
  server.answer((seen) => seen.path === '/mqtt/acl' ? 'hang' : { status: 200 })
  const child = spawn(process.execPath, [...LOADER, join(import.meta.dirname, 'fixtures/unload-child.ts'), `http://127.0.0.1:${server.port}`], {
    cwd: INSTALL_ROOT,
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const kill = setTimeout(() => child.kill('SIGKILL'), 90_000)
  t.teardown(() => { clearTimeout(kill) })
  const lines: string[] = []
  let unloadedAt = 0
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line)
    if (line === 'unloaded') unloadedAt = Date.now()
  })
  const code = await new Promise<number | string>((resolve) => child.once('exit', (c, signal) => resolve(c ?? signal ?? -1)))
  const exitedAt = Date.now()
  t.equal(code, 0, `exit code (output: ${lines.join(' | ')})`)
  t.strictSame(lines, ['auth {"result":"allow","superuser":false}', 'unloaded', 'acl deny'])  // the request cut by the unload has no answer: auth.http.failure (deny by default)
  t.ok(unloadedAt > 0 && exitedAt - unloadedAt < 3000, `exited ${exitedAt - unloadedAt}ms after unload (the request timeout is 20s)`)
  await until(() => server.open.size === 0, 2000, 'the child\'s connections to close')
})
