// GET /api/v3/ and the OpenAPI document both come from the route table.
import t from 'tap'
import { routes } from '../routes.js'
import { startApiNode } from './api.js'

const api = await startApiNode()
t.teardown(async () => await api.stop())

t.test('GET / lists every row of the route table', async (t) => {
  const res = await api.call('GET', '/')
  t.equal(res.status, 200)
  const listed = res.body as Array<Record<string, string>>
  t.equal(listed.length, routes.length)
  for (const route of routes) {
    t.ok(listed.some((l) => l.name === route.name && l.method === route.method && l.path === route.path && l.descr === route.descr), `${route.method} ${route.path}`)
  }
  for (const l of listed) t.same(Object.keys(l).sort(), ['descr', 'method', 'name', 'path'])
  t.ok(listed.some((l) => l.path === '/nodes/:node/connections/:clientid'), 'path params written :param')
  // the operations of SPEC §4.2 added last (publish, metrics, stats, plugin settings, alarms, users) are listed
  for (const [method, path] of [['POST', '/mqtt/publish'], ['POST', '/mqtt/subscribe'], ['POST', '/mqtt/unsubscribe'], ['GET', '/metrics/'], ['GET', '/nodes/:node/metrics/'],
    ['GET', '/stats/'], ['GET', '/nodes/:node/stats/'], ['GET', '/nodes/:node/plugin_configs/:plugin'], ['PUT', '/nodes/:node/plugin_configs/:plugin'], ['GET', '/alarms/'],
    ['GET', '/alarms/:node'], ['GET', '/users/'], ['POST', '/users/'], ['PUT', '/users/:name'], ['DELETE', '/users/:name'], ['POST', '/auth'], ['PUT', '/change_pwd/:username']]) {
    t.ok(listed.some((l) => l.method === method && l.path === path), `${method} ${path} listed`)
  }
})

t.test('GET /openapi.json is an OpenAPI 3.1 document naming every path and method', async (t) => {
  const res = await fetch(`${api.base}/openapi.json`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
  t.equal(res.status, 200)
  const doc = JSON.parse(await res.text()) as { openapi: string, paths: Record<string, Record<string, { operationId: string, parameters: Array<{ name: string, in: string }>, requestBody?: unknown }>> }
  t.match(doc.openapi, /^3\./)
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    const op = doc.paths[path]?.[route.method.toLowerCase()]
    t.ok(op, `${route.method} ${path}`)
    if (route.paged === true) t.ok(op?.parameters.some((p) => p.name === '_page' && p.in === 'query'), `${path} is paged`)
    if (route.validate?.payload !== undefined) t.ok(op?.requestBody, `${path} has a body`)
  }
  const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId))
  t.equal(new Set(ids).size, ids.length, 'operation ids are unique')
  const banned = doc.paths['/banned/'].post.requestBody as { content: { 'application/json': { schema: { required: string[], properties: Record<string, { type?: string, enum?: string[] }> } } } }
  const schema = banned.content['application/json'].schema
  t.same(schema.required, ['who', 'as'])
  t.same(schema.properties.as.enum, ['client_id', 'username', 'ip_address'])
  t.equal(schema.properties.until.type, 'integer')
  const paths = doc.paths as unknown as Record<string, Record<string, { security?: unknown[] }>>
  t.same(paths['/auth'].post.security, [], 'POST /auth needs no application credentials')
  t.equal(paths['/users/'].get.security, undefined, 'the others use the document\'s security')
})
