// The per-client ACL answer cache (lib/access/acl-cache.ts) against lru-cache,
// the figure package.json's "//" quotes: heap per client holding 16 answers,
// and the time of a cache hit. Run: `npm run build && node --expose-gc
// dist/bench/acl-cache-lru.js`. A measuring tool: it prints, never judges.
import { LRUCache } from 'lru-cache'
import { AclCache } from '../lib/access/acl-cache.js'
import type { AclAccess } from '../lib/hooks/types.js'

const MAX = 32
const CLIENTS = 20_000
const HITS = 2_000_000
const topics = Array.from({ length: 16 }, (_, i) => `devices/d${i}/state`)

interface Cache { set: (access: AclAccess, topic: string) => void, get: (access: AclAccess, topic: string) => unknown }

const candidates: Array<[string, () => Cache]> = [
  ['AclCache (ours)', () => {
    const cache = new AclCache()
    return { set: (access, topic) => cache.set(access, topic, true, Infinity, MAX), get: (access, topic) => cache.get(access, topic) }
  }],
  ['lru-cache, one per action', () => {
    const publish = new LRUCache<string, { allow: boolean }>({ max: MAX })
    const subscribe = new LRUCache<string, { allow: boolean }>({ max: MAX })
    return {
      set: (access, topic) => (access === 'publish' ? publish : subscribe).set(topic, { allow: true }),
      get: (access, topic) => (access === 'publish' ? publish : subscribe).get(topic)
    }
  }],
  ['lru-cache, keyed p:/s:<topic>', () => {
    const cache = new LRUCache<string, { allow: boolean }>({ max: MAX })
    return { set: (access, topic) => cache.set(access[0] + ':' + topic, { allow: true }), get: (access, topic) => cache.get(access[0] + ':' + topic) }
  }]
]

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')
for (const [name, make] of candidates) {
  gc()
  const before = process.memoryUsage().heapUsed
  const caches = Array.from({ length: CLIENTS }, () => {
    const cache = make()
    for (const topic of topics) cache.set('publish', topic)
    return cache
  })
  gc()
  const perClient = (process.memoryUsage().heapUsed - before) / CLIENTS
  const cache = caches[0]
  let found = 0
  const start = process.hrtime.bigint()
  for (let i = 0; i < HITS; i++) if (cache.get('publish', topics[i & 15]) !== undefined) found++
  const ns = Number(process.hrtime.bigint() - start) / HITS
  console.log(`${name.padEnd(32)} ${Math.round(perClient)} B per client, ${ns.toFixed(0)} ns per hit (${found} hits)`)
}
