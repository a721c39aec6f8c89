// Runs the real `bin/broker_ctl` (a separate process) against a node's data
// directory, and a spawned node to run it against.
import { execFile } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { INSTALL_ROOT } from '../../lib/root.js'
import { freePort, spawnBroker, startBroker, tempDir, writePluginFiles, type BrokerProcess, type TestBroker } from './broker.js'

export interface CtlRun { code: number, stdout: string, stderr: string }

/**
 * How long a broker_ctl run may take before it is killed (code -1): generous, since a heap snapshot of the node
 * took over 30 s at load 23 (the run was killed with the file half written)
 */
const CTL_RUN_MS = 120_000

export async function ctl (dataDir: string, ...args: string[]): Promise<CtlRun> {
  return await new Promise((resolve) => {
    execFile(process.execPath, [join(INSTALL_ROOT, 'bin', 'broker_ctl'), '--data-dir', dataDir, ...args], { timeout: CTL_RUN_MS }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1
      resolve({ code, stdout, stderr })
    })
  })
}

/** `--json` output, parsed. */
export async function ctlJson<T = unknown> (dataDir: string, ...args: string[]): Promise<{ code: number, data: T }> {
  const run = await ctl(dataDir, '--json', ...args)
  return { code: run.code, data: JSON.parse(run.stdout) as T }
}

export interface CtlNode extends BrokerProcess {
  dataDir: string
  mqttUrl: string
  /** the management API's base URL when broker_management is loaded */
  api: string
  run: (...args: string[]) => Promise<CtlRun>
  json: <T = unknown>(...args: string[]) => Promise<{ code: number, data: T }>
  stop: () => Promise<void>
}

/** A real node process with `plugins` loaded (broker_management gets a free port). */
export async function spawnCtlNode (plugins: Record<string, Record<string, string | number>> = {}, settings: Record<string, string | number> = {}): Promise<CtlNode> {
  const dataDir = await tempDir()
  const httpPort = await freePort()
  const withPorts = { ...plugins }
  if ('broker_management' in withPorts) withPorts.broker_management = { 'management.listener.http': `127.0.0.1:${httpPort}`, ...withPorts.broker_management }
  const etcDir = await writePluginFiles(dataDir, withPorts)
  const node = await spawnBroker(dataDir, { 'plugins.etc_dir': etcDir, ...settings })
  return {
    ...node,
    dataDir,
    mqttUrl: `mqtt://127.0.0.1:${node.port}`,
    api: `http://127.0.0.1:${httpPort}`,
    run: async (...args) => await ctl(dataDir, ...args),
    json: async (...args) => await ctlJson(dataDir, ...args),
    async stop () {
      node.child.kill('SIGTERM')
      await node.exited
      await rm(dataDir, { recursive: true, force: true })
    }
  }
}

export interface InProcessCtlNode {
  broker: TestBroker
  dataDir: string
  port: number
  mqttUrl: string
  run: (...args: string[]) => Promise<CtlRun>
  json: <T = unknown>(...args: string[]) => Promise<{ code: number, data: T }>
  stop: () => Promise<void>
}

/** A node in this process (its control socket serves the real `bin/broker_ctl` all the same). */
export async function startCtlBroker (settings: Record<string, string | number> = {}, plugins: Record<string, Record<string, string | number>> = {}): Promise<InProcessCtlNode> {
  const broker = await startBroker(settings, ['tcp'], undefined, { plugins })
  return {
    broker,
    dataDir: broker.dataDir,
    port: broker.port(),
    mqttUrl: `mqtt://127.0.0.1:${broker.port()}`,
    run: async (...args) => await ctl(broker.dataDir, ...args),
    json: async (...args) => await ctlJson(broker.dataDir, ...args),
    stop: broker.stop
  }
}
