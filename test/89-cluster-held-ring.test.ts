// What a cluster node keeps of the shared-subscription messages it drew for
// other nodes (lib/cluster/held-ring.ts, used by shared-placement.ts): oldest
// first, bounded (the oldest dropped past the bound), the expired let go, and a
// redraw redelivers here exactly those drawn for this node, once. And the
// draw's hash of a message is a function of its identity alone, so every node
// draws the same node.
import t from 'tap'
import { HeldRing } from '../lib/cluster/held-ring.js'
import { hash32 } from '../lib/cluster/shared-placement.js'

t.test('the hash depends on the identity only and spreads near identities', async (t) => {
  t.equal(hash32('node-a:1'), hash32(`node-a:${1}`), 'the same identity, built apart, hashes the same')
  const buckets = new Array<number>(4).fill(0)
  for (let i = 0; i < 4000; i++) buckets[hash32(`broker:${i}`) % 4]++
  for (const [bucket, n] of buckets.entries()) t.ok(n > 800 && n < 1200, `bucket ${bucket} gets about a quarter of consecutive ids (${n})`)
})

t.test('the ring holds up to its bound, drops the oldest, lets the expired go', async (t) => {
  const here: number[] = []
  const ring = new HeldRing<number>(3000, (_group, item) => { here.push(item) })
  let kept = 0
  for (let i = 0; i < 3500; i++) if (ring.push(i, 'g', i, 'other', i)) kept++
  t.equal(kept, 3000, 'the pushes past the bound say so')
  t.equal(ring.size, 3000)
  ring.expire(1000)
  t.equal(ring.size, 2500, 'those held before the time are let go (the 500 oldest were dropped already)')
  ring.redraw(0, () => true, (_group, hash) => hash % 2 === 0 ? undefined : 'third')
  t.equal(here.length, 1250, 'every held message drawn for this node is redelivered')
  t.same(here.slice(0, 3), [1000, 1002, 1004], 'oldest first, only those now drawn here')
  ring.redraw(0, () => true, () => undefined)
  t.equal(here.length, 2500, 'a later redraw gives the rest, not those already delivered')
  t.same(here.slice(1250, 1253), [1001, 1003, 1005])
  ring.redraw(0, () => true, () => undefined)
  t.equal(here.length, 2500, 'nothing is redelivered twice')
})

t.test('a redraw picks by group and node, and only among the recent', async (t) => {
  const here: string[] = []
  const ring = new HeldRing<string>(10, (group, item) => { here.push(`${group}/${item}`) })
  ring.push(1, 'g1', 1, 'n2', 'old')
  ring.push(5, 'g1', 2, 'n2', 'a')
  ring.push(6, 'g2', 3, 'n2', 'b')
  ring.push(7, 'g1', 4, 'n3', 'c')
  ring.redraw(5, (group, drawnFor) => group === 'g1' && drawnFor === 'n2', () => undefined)
  t.same(here, ['g1/a'], 'the group and node picked, held since the time')
})
