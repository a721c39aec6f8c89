// A real node in this process for tests: it listens on 127.0.0.1 free ports
// and keeps its data (and the plugins' settings files) in a fresh temporary
// folder, removed at stop. test/helpers/broker.ts and the plugin harness
// (harness.ts) both start their nodes here.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Config } from '../config/store.js'
import { setsToLines } from '../config/load.js'
import { createLogger } from '../log.js'
import { BrokerNode } from '../node.js'
import { INSTALL_ROOT } from '../root.js'
import { openStore } from '../engine/store.js'
import { levelTextStores } from '../engine/text-store.js'
import { pluginStore } from '../plugins/plugin-store.js'
import type { PluginStore } from './contract.js'

export type ListenerKind = 'tcp' | 'ssl' | 'ws' | 'wss'
const KINDS: ListenerKind[] = ['tcp', 'ssl', 'ws', 'wss']
const PROTOCOL: Record<ListenerKind, string> = { tcp: 'mqtt:tcp', ssl: 'mqtt:ssl', ws: 'mqtt:ws', wss: 'mqtt:wss' }

/** Plugin settings by plugin name, as `key = value` lines of its .conf file. */
export type PluginSettings = Record<string, Record<string, string | number>>

export async function tempDir (prefix = 'broker-test-'): Promise<string> {
  return await mkdtemp(join(tmpdir(), prefix))
}

const FREE_PORT_LOW = 10_000
const FREE_PORT_HIGH = 32_768

/**
 * A port free on 127.0.0.1 now, below the kernel's ephemeral range (32768 on):
 * a port from that range, free when asked, could be taken by any outgoing
 * connection (of the tests' many clients) before the server the test starts
 * binds it (EADDRINUSE on a busy machine). Chosen at random, so that test
 * processes running side by side rarely try the same one.
 */
export async function freePort (): Promise<number> {
  for (;;) {
    const port = FREE_PORT_LOW + Math.floor(Math.random() * (FREE_PORT_HIGH - FREE_PORT_LOW))
    const server = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (!bound) continue
    await new Promise((resolve) => server.close(resolve))
    return port
  }
}

/** A plugin's .conf file holding these settings. */
export function pluginConfText (settings: Record<string, string | number>): string {
  return Object.entries(settings).map(([k, v]) => `${k} = ${v}\n`).join('')
}

/** Writes plugin settings files and data/loaded_plugins (in the given order) for a node about to start. */
export async function writePluginFiles (dataDir: string, plugins: PluginSettings): Promise<string> {
  const etcDir = join(dataDir, 'etc')
  await mkdir(etcDir, { recursive: true })
  for (const [name, settings] of Object.entries(plugins)) {
    await writeFile(join(etcDir, `${name}.conf`), pluginConfText(settings))
  }
  await writeFile(join(dataDir, 'loaded_plugins'), Object.keys(plugins).map((name) => `${name}.\n`).join(''))
  return etcDir
}

export interface TestNode {
  node: BrokerNode
  dataDir: string
  /** the port a listener of this kind was given */
  port: (kind?: ListenerKind) => number
  /** stops the node and removes its data folder (unless the caller gave it) */
  stop: () => Promise<void>
}

export interface TestNodeOptions {
  /** node settings, `key: value` (as `--set key=value`) */
  settings?: Record<string, string | number>
  /** the MQTT listeners to open (the others are off); default tcp */
  listeners?: ListenerKind[]
  /** a data folder to keep (default: a fresh one, removed at stop) */
  dataDir?: string
  /** plugins loaded at boot, in chain order, each with its settings */
  plugins?: PluginSettings
  /** more folders holding broker_* plugins (test fixtures) */
  pluginDirs?: string[]
}

/** Starts an in-process node; refusals are answered at once (`mqtt.auth_failure_delay=0`) unless `settings` says otherwise. */
export async function startTestNode (options: TestNodeOptions = {}): Promise<TestNode> {
  const { settings = {}, listeners = ['tcp'], dataDir, plugins = {}, pluginDirs } = options
  const dir = dataDir ?? await tempDir()
  const etcDir = await writePluginFiles(dir, plugins)
  const sets = [
    `node.data_dir=${dir}`,
    `plugins.etc_dir=${etcDir}`,
    ...KINDS.map((kind) => `listener.${kind}.external=${listeners.includes(kind) ? '127.0.0.1:0' : 'off'}`),
    // every test client shares one address: a delay would hold each refusal
    'mqtt.auth_failure_delay=0',
    ...Object.entries(settings).map(([k, v]) => `${k}=${v}`)
  ]
  const config = new Config(setsToLines(sets))
  const node = await BrokerNode.start({ config, logger: createLogger('error', false), root: INSTALL_ROOT, pluginDirs })
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

/**
 * The store of `plugin` in a stopped node's data folder (one node, LevelDB),
 * for a test to plant or read what the next start finds. `run` gets it; the
 * database is closed when `run` settles.
 */
export async function withPluginStore<T> (dataDir: string, plugin: string, run: (store: PluginStore) => Promise<T>): Promise<T> {
  const { db } = await openStore(dataDir)
  try {
    return await run(pluginStore(levelTextStores(db), plugin))
  } finally {
    await db.close()
  }
}
