// The `acl-chain` section: the ACL check of one PUBLISH in-process, with one
// plugin handler that answers synchronously, on a cache miss (the checks go
// round more topics than mqtt.acl_cache_max_size keeps) and on a cache hit. bytes/op is heap allocated
// per check, measured with --expose-gc and a new space large enough that no
// collection runs in the window (a window with a collection is measured again);
// ops/s is checks per second. Run in its own process (see measureAclChain).
import { fork } from 'node:child_process'
import { join } from 'node:path'
import { PerformanceObserver } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { AccessControl } from '../lib/access/access-control.js'
import { detachedState, type ClientState } from '../lib/access/client-state.js'
import { Config } from '../lib/config/store.js'
import { HookRegistry } from '../lib/hooks/registry.js'
import { createLogger } from '../lib/log.js'
import { ROOT, track } from './servers.js'

export const ACL_CHAIN_SECTION = 'acl-chain'
export interface AclChainFigures { miss: { bytes: number, rate: number }, hit: { bytes: number, rate: number } }

const WINDOW_OPS = 20_000
const TIMED_MS = 1000
/** twice the default mqtt.acl_cache_max_size (32): going round them, every check misses */
const MISSED_TOPICS = Array.from({ length: 64 }, (_, i) => `bench/in/${i}`)
const HIT_TOPIC = 'bench/in/hit'

function setup (): { access: AccessControl, state: ClientState } {
  const logger = createLogger('silent', false)
  const hooks = new HookRegistry(logger)
  hooks.add('client.check_acl', (req) => req.topic.startsWith('bench/') ? 'allow' : 'ignore', 'bench_plugin')
  const access = new AccessControl(new Config(), hooks, ROOT, logger)
  const state = detachedState({
    clientId: 'bench', username: 'bench', ipAddress: '127.0.0.1', port: 1, protocol: 'mqtt:tcp', protoVer: 4, peercert: 'nossl', mountpoint: '', isSuperuser: false
  })
  return { access, state }
}

/**
 * `count` publish checks, one after the other as the engine makes them: a
 * promise answer is waited for before the next check (so its answer is cached).
 */
async function checks (access: AccessControl, state: ClientState, miss: boolean, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const allowed = access.check(state, 'publish', miss ? MISSED_TOPICS[i & 63] : HIT_TOPIC)
    if (typeof allowed !== 'boolean') await allowed
  }
}

const settled = async (): Promise<void> => await new Promise((resolve) => setImmediate(resolve))

async function bytesPerOp (access: AccessControl, state: ClientState, miss: boolean): Promise<number> {
  let collections = 0
  const observer = new PerformanceObserver((list) => { collections += list.getEntries().length })
  observer.observe({ entryTypes: ['gc'] })
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      await checks(access, state, miss, 1)
      globalThis.gc?.()
      await settled()
      await settled()
      collections = 0
      const before = process.memoryUsage().heapUsed
      await checks(access, state, miss, WINDOW_OPS)
      const after = process.memoryUsage().heapUsed
      for (let i = 0; i < 3; i++) await settled()
      if (collections === 0) return Math.max(0, after - before) / WINDOW_OPS
    }
    return NaN
  } finally {
    observer.disconnect()
  }
}

async function opsPerSecond (access: AccessControl, state: ClientState, miss: boolean): Promise<number> {
  let ops = 0
  const start = performance.now()
  while (performance.now() - start < TIMED_MS) {
    await checks(access, state, miss, 1000)
    ops += 1000
  }
  return ops / ((performance.now() - start) / 1000)
}

async function measure (): Promise<AclChainFigures> {
  const { access, state } = setup()
  // warm up: let the optimizing compiler settle on the check path
  await opsPerSecond(access, state, true)
  await opsPerSecond(access, state, false)
  const figures = async (miss: boolean): Promise<{ bytes: number, rate: number }> =>
    ({ bytes: await bytesPerOp(access, state, miss), rate: await opsPerSecond(access, state, miss) })
  return { miss: await figures(true), hit: await figures(false) }
}

/** Runs the measurement in a fresh process, so the runner's own heap is not counted. */
export async function measureAclChain (): Promise<AclChainFigures> {
  const child = fork(join(ROOT, 'dist', 'bench', 'acl-chain.js'), [], {
    execArgv: ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64'], stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  track(child)
  return await new Promise((resolve, reject) => {
    child.once('message', (figures: AclChainFigures) => resolve(figures))
    child.once('exit', (code) => reject(new Error(`${ACL_CHAIN_SECTION} measurement exited (code ${code ?? 'signal'}) without figures`)))
  })
}

// run directly (`node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 dist/bench/acl-chain.js`) it prints the figures
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const figures = await measure()
  if (process.send === undefined) process.stdout.write(JSON.stringify(figures) + '\n')
  else process.send(figures, () => process.disconnect())
}
