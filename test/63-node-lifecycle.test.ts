// The node's ordered lifecycle (issue 16, point 5; lib/lifecycle.ts): a start
// that fails at a late step leaves nothing behind (the store's lock, sockets,
// timers, booted plugins); stop resolves for concurrent callers; a stop step
// that throws does not keep the store open.
import { once } from 'node:events'
import { rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { freePort, startBroker, tempDir } from './helpers/broker.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { live } from './fixtures/lifecycle-plugins/broker_fixture_live/index.js'

// apart from test/fixtures/plugins, whose listing test/12 checks
const LIFECYCLE_PLUGINS = join(INSTALL_ROOT, 'test', 'fixtures', 'lifecycle-plugins')

/** The process's lasting resources (sockets, servers, timers), without the file system requests in flight. */
async function resources (): Promise<string[]> {
  // a closed server's handle is released a turn or two of the event loop after its close callback
  for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve))
  return process.getActiveResourcesInfo().filter((name) => !name.startsWith('FSReq')).sort()
}

async function listening (port: number): Promise<Server> {
  const server = createServer().listen(port, '127.0.0.1')
  await once(server, 'listening')
  return server
}

async function close (server: Server): Promise<void> {
  await new Promise((resolve) => server.close(resolve))
}

/** The port can be bound again: nothing of the node holds it. */
async function free (t: Test, port: number, what: string): Promise<void> {
  const server = await listening(port).catch((err: NodeJS.ErrnoException) => err)
  t.notOk(server instanceof Error, `${what} port is free`)
  if (!(server instanceof Error)) await close(server)
}

/** A node on the same data dir starts (the store's lock was released) and stops. */
async function reopens (t: Test, dataDir: string): Promise<void> {
  const again = await startBroker({}, ['tcp'], dataDir)
  t.equal(again.node.lifecycle.state, 'running', 'a second node opens the same data dir')
  await again.stop()
}

async function dataDir (t: Test): Promise<string> {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('a start failing at its listeners unwinds everything: store lock, sockets, timers, booted plugins', async (t) => {
  const dir = await dataDir(t)
  const busy = await listening(0)
  t.teardown(async () => await close(busy))
  const busyPort = (busy.address() as { port: number }).port
  const before = await resources()
  const [http, tcp] = [await freePort(), await freePort()]
  const plugins = { broker_fixture_live: {}, broker_management: { 'management.listener.http': `127.0.0.1:${http}` } }
  // the TCP listener opens, then the WebSocket one finds its port taken
  const settings = { 'listener.tcp.external': `127.0.0.1:${tcp}`, 'listener.ws.external': `127.0.0.1:${busyPort}` }
  await t.rejects(startBroker(settings, ['tcp', 'ws'], dir, { plugins, pluginDirs: [LIFECYCLE_PLUGINS] }), { code: 'EADDRINUSE' }, 'the listener\'s own error')
  t.same([...live], [], 'the plugins that booted were unloaded')
  t.same(await resources(), before, 'no socket, server or timer of the failed node is left')
  await free(t, tcp, 'the TCP listener\'s')
  await free(t, http, 'the management API\'s')
  await reopens(t, dir)
})

t.test('a TLS listener with a missing key file: the start fails and the store is closed', async (t) => {
  const dir = await dataDir(t)
  const before = await resources()
  await t.rejects(startBroker({ 'listener.ssl.external.keyfile': `${dir}/missing-key.pem` }, ['tcp', 'ssl'], dir), { name: 'ConfigError', message: /missing-key\.pem \(ENOENT\)/ }, 'the missing file named')
  t.same(await resources(), before, 'nothing left open')
  await reopens(t, dir)
})

t.test('two concurrent stops both resolve, once the node has stopped', async (t) => {
  const broker = await startBroker({}, ['tcp'], await dataDir(t))
  const states: string[] = []
  broker.node.lifecycle.onChange((state) => states.push(state))
  await Promise.all([broker.node.stop(), broker.node.stop()])
  t.same(states, ['stopping', 'stopped'])
  await broker.node.stop()
  await free(t, broker.port(), 'the TCP listener\'s')
})

t.test('a stop step that throws does not keep the later steps from running', async (t) => {
  const dir = await dataDir(t)
  const broker = await startBroker({}, ['tcp'], dir)
  // the real unload runs first, so the plugins loaded by default release their timers and sockets
  const stopAll = broker.node.plugins.stopAll.bind(broker.node.plugins)
  broker.node.plugins.stopAll = async () => { await stopAll(); throw new Error('a plugin would not unload') }
  await broker.node.stop()
  t.equal(broker.node.lifecycle.state, 'stopped')
  await reopens(t, dir)
})
