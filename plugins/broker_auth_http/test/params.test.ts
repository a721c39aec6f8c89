// Parameter lists and %variable substitution.
import t from 'tap'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import { fill, parseParams, substitute } from '../params.js'

const client = clientInfo({ clientId: 'c-1', username: 'u 1', ipAddress: '::1' })

t.test('parseParams: comma-separated name=value pairs, trimmed', async (t) => {
  t.strictSame(parseParams('clientid=%c, username = %u,password=%P'), [
    { name: 'clientid', template: '%c' },
    { name: 'username', template: '%u' },
    { name: 'password', template: '%P' }
  ])
  t.strictSame(parseParams('a=b=c,empty='), [{ name: 'a', template: 'b=c' }, { name: 'empty', template: '' }], 'the first = splits')
  t.strictSame(parseParams(''), [])
  t.throws(() => parseParams('a=1,b'), /"b" is not a name=value pair/)
  t.throws(() => parseParams('=x'), /"=x" is not a name=value pair/)
  t.throws(() => parseParams('a=1,,b=2'), /"" is not a name=value pair/)
})

t.test('substitute: the six variables; absent values are empty; others stay', async (t) => {
  const vars = { client, password: Buffer.from('pässword'), topic: 'a/b', access: 'publish' as const }
  t.equal(substitute('%u|%c|%a|%P|%t|%A', vars), 'u 1|c-1|::1|pässword|a/b|2')
  t.equal(substitute('%A', { client, access: 'subscribe' }), '1')
  t.equal(substitute('[%u][%P][%t][%A]', { client: clientInfo() }), '[][][][]')
  t.equal(substitute('%x %% %p %U 100%', vars), '%x %% %p %U 100%')
  t.equal(substitute('pre-%c-%c-post', vars), 'pre-c-1-c-1-post')
  t.equal(substitute('%u', { client: clientInfo({ username: '$& $1 %c' }) }), '$& $1 %c', 'a value is not substituted again')
})

t.test('fill: name/value pairs in the configured order', async (t) => {
  t.strictSame(fill(parseParams('z=%c,a=%u,m=const'), { client }), [['z', 'c-1'], ['a', 'u 1'], ['m', 'const']])
})
