// Starts broker nodes for tests: in-process (fast, inspectable) or as a real
// `bin/broker` process (for restarts, signals and kill -9). Every node listens
// on 127.0.0.1 free ports and keeps its data in a fresh temporary folder.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { INSTALL_ROOT } from '../../lib/root.js'
import { freePort, startTestNode, type ListenerKind, type PluginSettings, type TestNode } from '../../lib/plugin-kit/test-node.js'

export { freePort, tempDir, writePluginFiles, type ListenerKind } from '../../lib/plugin-kit/test-node.js'

export type TestBroker = TestNode

export interface StartOptions {
  /**
   * Plugins to load at boot, in chain order, each with its settings: written to
   * <dataDir>/etc/<name>.conf and <dataDir>/loaded_plugins. Default: the
   * retainer alone (retained messages work as on a new install).
   */
  plugins?: PluginSettings
  /** extra folders holding broker_* plugins (test fixtures) */
  pluginDirs?: string[]
}

export const FIXTURE_PLUGINS = join(INSTALL_ROOT, 'test', 'fixtures', 'plugins')

/**
 * An in-process node (lib/plugin-kit/test-node.ts). `listeners` names the
 * listeners to open (the others are off); `settings` are extra `key=value` overrides.
 */
export async function startBroker (settings: Record<string, string | number> = {}, listeners: ListenerKind[] = ['tcp'], dataDir?: string, options: StartOptions = {}): Promise<TestBroker> {
  return await startTestNode({ settings, listeners, dataDir, ...options, plugins: options.plugins ?? { [RETAINER]: {} } })
}

/** The plugin that keeps retained messages, loaded by default (as on a new install) by startBroker and spawnBroker. */
export const RETAINER = 'broker_retainer'

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
  // the retainer alone unless the test listed plugins (a new install would load broker_management on port 8080 too)
  if (!existsSync(join(dataDir, 'loaded_plugins'))) await writeFile(join(dataDir, 'loaded_plugins'), `${RETAINER}.\n`)
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
