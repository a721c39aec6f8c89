// The production path (issue 22 #1): `--version` of both programs, the
// systemd unit accepted by systemd, and `npm start`'s build step, which builds
// only when an input of `npm run build` is newer than the last build (run on
// a scratch project: the real build takes a minute). The install itself (npm
// ci, build, prune, run) is scripts/production-smoke.sh, run by .ci/run.
import { execFile, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, readFile, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { tempDir } from './helpers/broker.js'
import { INSTALL_ROOT } from '../lib/root.js'

const run = promisify(execFile)
const { version } = JSON.parse(await readFile(join(INSTALL_ROOT, 'package.json'), 'utf8')) as { version: string }

t.test('--version', async (t) => {
  for (const [program, flag] of [['broker', '--version'], ['broker_ctl', '-v']]) {
    const { stdout } = await run(process.execPath, [join(INSTALL_ROOT, 'bin', program), flag])
    t.equal(stdout, `${program} ${version} (Node.js ${process.version})\n`, `${program} ${flag}`)
  }
})

t.test('the systemd unit', async (t) => {
  const unit = join(INSTALL_ROOT, 'etc', 'systemd', 'broker.service')
  const text = await readFile(unit, 'utf8')
  // every line is a comment, a [Section] or a Key=value; the service part holds what the README promises
  const service = new Map<string, string>()
  const unparsed: string[] = []
  let section = ''
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header !== null) {
      section = header[1]
      continue
    }
    const entry = /^([A-Za-z]+)=(.*)$/.exec(line)
    if (entry === null) unparsed.push(line)
    else if (section === 'Service') service.set(entry[1], entry[2])
  }
  t.same(unparsed, [], 'every line is a comment, a [Section] or a Key=value')
  t.same([service.get('User'), service.get('StateDirectoryMode'), service.get('Restart'), service.get('ExecReload')],
    ['broker', '0700', 'on-failure', '/bin/kill -HUP $MAINPID'])
  t.match(service.get('ExecStart'), /bin\/broker --data-dir \/var\/lib\/broker$/)
  const analyze = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' })
  if (analyze.error === undefined) {
    // verify exits 0 on an unknown key or a bad value too: what it prints is the verdict
    t.equal(analyze.status, 0, 'systemd-analyze verify exits 0')
    t.equal(`${analyze.stdout}${analyze.stderr}`, '', 'systemd-analyze verify has nothing to say about it')
  } else {
    t.comment(`systemd-analyze is not installed (${analyze.error.message}): the unit was parse-checked only`)
  }
})

t.test('npm start builds only when an input of the build is newer than the last build', async (t) => {
  const root = await tempDir()
  await mkdir(join(root, 'scripts'))
  await copyFile(join(INSTALL_ROOT, 'scripts', 'build-if-stale.mjs'), join(root, 'scripts', 'build-if-stale.mjs'))
  await writeFile(join(root, 'package.json'), JSON.stringify({
    name: 'scratch',
    private: true,
    type: 'module',
    scripts: {
      build: 'node -e "require(\'node:fs\').appendFileSync(\'builds\', \'x\')" && mkdir -p dist',
      postbuild: 'node scripts/build-if-stale.mjs --stamp'
    }
  }))
  await writeFile(join(root, 'package-lock.json'), '{}\n')
  await writeFile(join(root, 'tsconfig.json'), '{}\n')
  await writeFile(join(root, 'tsconfig.build.json'), JSON.stringify({ include: ['src/**/*.ts', 'plugins/**/*.ts'] }))
  await mkdir(join(root, 'src'))
  await writeFile(join(root, 'src', 'a.ts'), '')
  await mkdir(join(root, 'plugins', 'broker_x', 'ui', 'src'), { recursive: true })
  await writeFile(join(root, 'plugins', 'broker_x', 'ui', 'src', 'App.tsx'), '')
  const builds = async (): Promise<number> => existsSync(join(root, 'builds')) ? (await readFile(join(root, 'builds'), 'utf8')).length : 0
  const step = (...args: string[]): { status: number | null, stderr: string } =>
    spawnSync(process.execPath, [join(root, 'scripts', 'build-if-stale.mjs'), ...args], { cwd: root, encoding: 'utf8' })
  // mtimes set ahead of the clock, so the order does not depend on the file system's time resolution
  const touch = async (file: string, secondsAhead: number): Promise<void> => {
    const at = new Date(Date.now() + secondsAhead * 1000)
    await utimes(join(root, file), at, at)
  }
  const due = (): string => {
    const { status, stderr } = step('--check')
    return status === 0 ? 'up to date' : stderr.trim().replace(root, '<root>')
  }

  t.equal(due(), 'npm start: no build yet: npm run build')
  t.equal(step().status, 0, 'the build step runs npm run build')
  t.equal(await builds(), 1, 'no build yet: built')
  t.ok(existsSync(join(root, 'dist', '.build-stamp')), 'postbuild stamps the build')
  t.equal(step().status, 0)
  t.equal(await builds(), 1, 'nothing changed: no build')
  await touch('dist/.build-stamp', 100)
  for (const [input, why] of [['src/a.ts', 'src'], ['plugins/broker_x/ui/src/App.tsx', 'plugins'], ['package-lock.json', 'package-lock.json'], ['tsconfig.build.json', 'tsconfig.build.json']]) {
    t.equal(due(), 'up to date', `before ${input} changes`)
    await touch(input, 200)
    t.equal(due(), `npm start: <root>/${why} changed since the last build: npm run build`, `${input} newer than the last build`)
    await touch(input, 50)
  }
  await touch('src/a.ts', 200)
  t.equal(step().status, 0)
  t.equal(await builds(), 2, 'a source newer than the last build: built')
})
