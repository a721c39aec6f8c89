// Starts broker nodes for tests: in-process (fast, inspectable) or as a real
// `bin/broker` process (for restarts, signals and kill -9). Every node listens
// on 127.0.0.1 free ports and keeps its data in a fresh temporary folder.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { once } from 'node:events'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Config } from '../../lib/config/store.js'
import { setsToLines } from '../../lib/config/load.js'
import { createLogger } from '../../lib/log.js'
import { BrokerNode } from '../../lib/node.js'
import { INSTALL_ROOT } from '../../lib/root.js'

export type ListenerKind = 'tcp' | 'ssl' | 'ws' | 'wss'
const KINDS: ListenerKind[] = ['tcp', 'ssl', 'ws', 'wss']
const PROTOCOL: Record<ListenerKind, string> = { tcp: 'mqtt:tcp', ssl: 'mqtt:ssl', ws: 'mqtt:ws', wss: 'mqtt:wss' }

export async function tempDir (prefix = 'broker-test-'): Promise<string> {
  return await mkdtemp(join(tmpdir(), prefix))
}

export async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface TestBroker {
  node: BrokerNode
  dataDir: string
  port: (kind?: ListenerKind) => number
  stop: () => Promise<void>
}

export interface StartOptions {
  /**
   * Plugins to load at boot, in chain order, each with its settings: written to
   * <dataDir>/etc/<name>.conf and <dataDir>/loaded_plugins.
   */
  plugins?: Record<string, Record<string, string | number>>
  /** extra folders holding broker_* plugins (test fixtures) */
  pluginDirs?: string[]
}

export const FIXTURE_PLUGINS = join(INSTALL_ROOT, 'test', 'fixtures', 'plugins')

/** Writes plugin settings files and data/loaded_plugins for a node about to start. */
export async function writePluginFiles (dataDir: string, plugins: Record<string, Record<string, string | number>>): Promise<string> {
  const etcDir = join(dataDir, 'etc')
  await mkdir(etcDir, { recursive: true })
  for (const [name, settings] of Object.entries(plugins)) {
    await writeFile(join(etcDir, `${name}.conf`), Object.entries(settings).map(([k, v]) => `${k} = ${v}\n`).join(''))
  }
  await writeFile(join(dataDir, 'loaded_plugins'), Object.keys(plugins).map((name) => `${name}.\n`).join(''))
  return etcDir
}

/**
 * An in-process node. `listeners` names the listeners to open (the others are
 * off); `settings` are extra `key=value` overrides.
 */
export async function startBroker (settings: Record<string, string | number> = {}, listeners: ListenerKind[] = ['tcp'], dataDir?: string, options: StartOptions = {}): Promise<TestBroker> {
  const dir = dataDir ?? await tempDir()
  const etcDir = await writePluginFiles(dir, options.plugins ?? {})
  const sets = [
    `node.data_dir=${dir}`,
    `plugins.etc_dir=${etcDir}`,
    ...KINDS.map((kind) => `listener.${kind}.external=${listeners.includes(kind) ? '127.0.0.1:0' : 'off'}`),
    // refusals answered at once unless a test sets it: every test client shares one address
    'mqtt.auth_failure_delay=0',
    ...Object.entries(settings).map(([k, v]) => `${k}=${v}`)
  ]
  const config = new Config(setsToLines(sets))
  const node = await BrokerNode.start({ config, logger: createLogger('error', false), root: INSTALL_ROOT, pluginDirs: options.pluginDirs })
  return {
    node,
    dataDir: dir,
    port (kind = 'tcp') {
      const listener = node.listeners.find((l) => l.protocol === PROTOCOL[kind])
      if (!listener) throw new Error(`no ${kind} listener`)
      return listener.address.port
    },
    async stop () {
      await node.stop()
      if (dataDir === undefined) await rm(dir, { recursive: true, force: true })
    }
  }
}

export interface BrokerProcess {
  child: ChildProcess
  port: number
  /** log lines the process printed (JSON) */
  lines: string[]
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>
}

/** A real `bin/broker` process on a free TCP port (other listeners off unless set); `nodeArgs` go to node before the script. */
export async function spawnBroker (dataDir: string, settings: Record<string, string | number> = {}, port?: number, nodeArgs: string[] = []): Promise<BrokerProcess> {
  const tcpPort = port ?? await freePort()
  const all: Record<string, string | number> = {
    'listener.tcp.external': `127.0.0.1:${tcpPort}`,
    'listener.ssl.external': 'off',
    'listener.ws.external': 'off',
    'listener.wss.external': 'off',
    'log.console.level': 'info',
    'mqtt.auth_failure_delay': 0,
    ...settings
  }
  // no plugin unless the test listed some (a new install would load broker_management on port 8080)
  if (!existsSync(join(dataDir, 'loaded_plugins'))) await writeFile(join(dataDir, 'loaded_plugins'), '')
  const args = [...nodeArgs, join(INSTALL_ROOT, 'bin', 'broker'), '--data-dir', dataDir]
  for (const [k, v] of Object.entries(all)) args.push('--set', `${k}=${v}`)
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  const running = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line)
      if (line.includes('broker node is running')) resolve()
    })
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line))
    void exited.then((code) => reject(new Error(`broker exited (${code}) before running:\n${lines.join('\n')}`)))
  })
  await running
  return { child, port: tcpPort, lines, exited }
}
