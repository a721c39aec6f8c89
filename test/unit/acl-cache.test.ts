// A client's ACL cache (lib/access/acl-cache.ts): by action and topic, bounded, oldest out first.
import t from 'tap'
import { AclCache } from '../../lib/access/acl-cache.js'

t.test('answers by action and topic; a refreshed answer becomes the newest; past the bound the oldest goes', async (t) => {
  const cache = new AclCache()
  cache.set('publish', 'a', true, 10, 3)
  cache.set('subscribe', 'a', false, 20, 3)
  cache.set('publish', 'b', true, 30, 3)
  t.equal(cache.get('publish', 'a')?.allow, true)
  t.equal(cache.get('subscribe', 'a')?.allow, false)
  t.equal(cache.get('subscribe', 'b'), undefined)
  cache.set('publish', 'a', false, 40, 3)
  t.same([...cache.keys()], ['s:a', 'p:b', 'p:a'], 'refreshed: newest')
  cache.set('publish', 'c', true, 50, 3)
  t.same([...cache.keys()], ['p:b', 'p:a', 'p:c'], 'the oldest went')
  t.equal(cache.size, 3)
  t.equal(cache.get('subscribe', 'a'), undefined)
})

t.test('delete and clear', async (t) => {
  const cache = new AclCache()
  cache.set('publish', 'a', true, 10, 5)
  cache.set('subscribe', 'a', true, 10, 5)
  cache.delete('publish', 'a')
  cache.delete('publish', 'not-there')
  t.same([...cache.keys()], ['s:a'])
  cache.clear()
  t.equal(cache.size, 0)
  t.equal(cache.get('subscribe', 'a'), undefined)
})
