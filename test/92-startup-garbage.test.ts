// The node collects its start-up garbage once before its listeners open (lib/startup-garbage.ts, issue 20
// #5): the collection must really run (the heap shrinks by the garbage made before it) and must not
// leave a `gc` function on the node's global, where a plugin could call it on every message, nor a
// second native context (broker_recon reports their count), nor natives syntax allowed.
import { getHeapStatistics } from 'node:v8'
import t from 'tap'
import { collectStartupGarbage } from '../lib/startup-garbage.js'

t.test('a full collection runs, and gc stays off the global', (t) => {
  const hadGc = typeof (globalThis as { gc?: unknown }).gc === 'function'
  const contexts = getHeapStatistics().number_of_native_contexts
  // ~64 MiB of old-generation garbage: arrays kept alive past a few scavenges, then dropped
  const keep: number[][] = []
  for (let i = 0; i < 64; i++) keep.push(new Array<number>(128 * 1024).fill(i))
  const before = process.memoryUsage().heapUsed
  keep.length = 0
  collectStartupGarbage()
  const after = process.memoryUsage().heapUsed
  t.ok(before - after > 32 * 1024 * 1024, `heap used fell from ${before} to ${after} bytes`)
  t.equal(typeof (globalThis as { gc?: unknown }).gc === 'function', hadGc, 'the global gains no gc function')
  t.equal(getHeapStatistics().number_of_native_contexts, contexts, 'no native context is added')
  t.throws(() => new Function('%CollectGarbage(null)'), SyntaxError, 'natives syntax is refused again afterwards')
  t.end()
})
