// fast-check generators of management API requests, made from the route
// tables themselves (broker_management's APIS: v3 and v2): every row with
// generated path parameters, query strings and bodies (from its joi schema,
// then with wrong types, missing and extra keys, prototype keys, non-JSON),
// sometimes the wrong method, content type or credentials.
import fc from 'fast-check'
import type Joi from 'joi'
import { APIS } from '../plugins/broker_management/apis.js'
import type { Route } from '../plugins/broker_management/routes.js'
import type { ApiRequest } from './corpus.js'

/** What the generator aims at: names that exist on the broker under fuzz. */
export interface ApiWorld {
  node: string
  plugins: string[]
  configKeys: string[]
  /** `user:password` of the harness's own v3 application and v2 administrator */
  v3Credentials: string
  v2Credentials: string
}

/** Ids the harness uses for its own credentials: never touched by a generated request. */
export const HARNESS_ID = 'fuzz-harness'

export interface GeneratedRequest { api: string, route: string, params: Record<string, string>, request: ApiRequest }

interface Description { type: string, keys?: Record<string, Description>, allow?: unknown[], flags?: { only?: boolean }, matches?: Array<{ schema: Description }>, patterns?: unknown[] }

const hostile = fc.constantFrom('', ' ', '..', '%', '%00', '%zz', '\u0000', '#', '+', '/', 'a/b', '$SYS/#', '__proto__', 'constructor', 'x'.repeat(5000), '\ud800', 'é', '*', '-1', '1e400')
const word = fc.oneof({ weight: 3, arbitrary: fc.string({ maxLength: 12 }) }, { weight: 1, arbitrary: hostile })

function paramValue (name: string, world: ApiWorld): fc.Arbitrary<string> {
  const pool: Record<string, string[]> = {
    node: [world.node, world.node, world.node, 'other@127.0.0.1'],
    plugin: [...world.plugins, 'broker_nope'],
    app: ['mqtt', 'log', 'zone', 'listener', 'broker', 'management'],
    appid: ['admin', 'fz-app'],
    name: ['admin', 'fz-user'],
    username: ['admin', 'fz-user'],
    clientid: ['fz1', 'fz2', 'http'],
    topic: ['a/b', '/a', '#', 'a/+'],
    who: ['fz1', 'bad-guy']
  }
  return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...(pool[name] ?? ['x'])) }, { weight: 2, arbitrary: word })
}

/** A value for the described schema: right type mostly, a wrong one sometimes. */
function valueFor (d: Description | undefined, world: ApiWorld, depth = 0): fc.Arbitrary<unknown> {
  const wrong = fc.constantFrom<unknown>(null, [], {}, 0, -1, 1.5, 2 ** 53, 'x', true, '', [1, 'a'], { a: { b: [] } })
  let right: fc.Arbitrary<unknown>
  switch (d?.type) {
    case 'string':
      right = d.flags?.only === true && d.allow !== undefined ? fc.constantFrom(...d.allow) : fc.oneof(word, fc.constantFrom(...world.configKeys, 'a/b', 'fz1'))
      break
    case 'number': right = fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom(0, 2 ** 31, 2 ** 53, 1e300, -0.5)); break
    case 'boolean': right = fc.boolean(); break
    case 'alternatives': right = fc.oneof(...(d.matches ?? []).map((m) => valueFor(m.schema, world, depth + 1))); break
    case 'object': right = depth > 2 ? fc.constant({}) : objectFor(d, world, depth + 1); break
    default: right = fc.oneof(word, fc.integer(), fc.boolean())
  }
  return fc.oneof({ weight: 5, arbitrary: right }, { weight: 1, arbitrary: wrong })
}

function objectFor (d: Description, world: ApiWorld, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.entries(d.keys ?? {})
  // a pattern object (plugin settings): keys from the configuration, string values
  if (keys.length === 0) return fc.dictionary(fc.oneof(fc.constantFrom(...world.configKeys), word), fc.oneof(word, fc.constantFrom('on', 'off', '1', '10s')), { maxKeys: 3 })
  const fields = keys.map(([k, v]) => fc.option(valueFor(v, world, depth), { freq: 6, nil: undefined }).map((value) => [k, value] as const))
  const extra = fc.option(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', ''), fc.oneof(word, fc.constant({ polluted: true }))), { freq: 5, nil: undefined })
  return fc.tuple(fc.tuple(...fields), extra).map(([pairs, more]) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of pairs) if (v !== undefined) out[k] = v
    // defineProperty, so `__proto__` is an own key of the JSON sent
    if (more !== undefined) Object.defineProperty(out, more[0], { value: more[1], enumerable: true, configurable: true, writable: true })
    return out
  })
}

const describe = (schema: Joi.Schema | undefined): Description | undefined => schema?.describe() as Description | undefined

/** Raw bodies: not JSON, truncated, deep, huge, JSON of the wrong shape. */
const rawBody = fc.constantFrom('', '{', 'not json', 'null', '[]', '"s"', '1e999', '{"a":1,"a":2}', '['.repeat(20000), '{"a":'.repeat(5000), '\u0000', '{"topic":"\ud800"}', 'x'.repeat(2_000_000))

function bodyFor (route: Route, world: ApiWorld): fc.Arbitrary<string | undefined> {
  const schema = describe(route.validate?.payload)
  const json = (schema === undefined ? fc.oneof(fc.constant({}), fc.dictionary(word, word, { maxKeys: 2 }), fc.constant({ rate: 0 }), fc.constant({ active: 'yes' })) : valueFor(schema, world)).map((v) => JSON.stringify(v))
  const none = route.method === 'GET' || route.method === 'DELETE' ? 6 : 1
  return fc.oneof({ weight: none, arbitrary: fc.constant(undefined) }, { weight: 8, arbitrary: json }, { weight: 1, arbitrary: rawBody })
}

function queryFor (route: Route, pagingKeys: string[]): fc.Arbitrary<string> {
  const own = Object.keys(describe(route.validate?.query)?.keys ?? {})
  const keys = [...own, ...(route.paged === true ? pagingKeys : []), 'x', '_page', 'as']
  const value = fc.oneof(fc.constantFrom('1', '0', '-1', '2', '99999999999999999999', '1.5', 'abc', '', 'client_id', 'username', 'ip_address', '%00', '%zz'), word.map(percent))
  return fc.array(fc.tuple(fc.constantFrom(...keys), value), { maxLength: 3 })
    .map((pairs) => pairs.length === 0 ? '' : '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&'))
}

/** encodeURIComponent over the UTF-8 bytes, which also takes a lone surrogate (as U+FFFD) */
function percent (text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('')
}

function encodePath (path: string, params: Record<string, string>, raw: boolean): string {
  return path.replace(/:(\w+)/g, (_m, name: string) => raw ? params[name].replace(/[?# ]/g, percent) : percent(params[name]))
}

const authFor = (credentials: string): fc.Arbitrary<string | undefined> => fc.oneof(
  { weight: 20, arbitrary: fc.constant('Basic ' + Buffer.from(credentials).toString('base64')) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, 'Basic', 'Basic !!!', 'Basic ' + Buffer.from(':').toString('base64'), 'Basic ' + Buffer.from('admin:wrong').toString('base64'), 'Bearer x', 'Basic ' + 'A'.repeat(20000)) }
)

function requestFor (base: string, route: Route, world: ApiWorld, credentials: string, pagingKeys: string[]): fc.Arbitrary<GeneratedRequest> {
  const names = [...route.path.matchAll(/:(\w+)/g)].map(([, n]) => n)
  const params = fc.tuple(...names.map((n) => paramValue(n, world))).map((values) => Object.fromEntries(names.map((n, i) => [n, values[i]])))
  const method = fc.oneof({ weight: 15, arbitrary: fc.constant<string>(route.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') })
  const contentType = fc.oneof({ weight: 12, arbitrary: fc.constant<string | undefined>('application/json') }, { weight: 1, arbitrary: fc.constantFrom(undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1') })
  return fc.record({ params, method, query: queryFor(route, pagingKeys), body: bodyFor(route, world), contentType, auth: authFor(credentials), raw: fc.nat(5) })
    .map(({ params, method, query, body, contentType, auth, raw }) => {
      const headers: Record<string, string> = {}
      if (auth !== undefined) headers.authorization = auth
      if (body !== undefined && contentType !== undefined) headers['content-type'] = contentType
      return { api: base, route: route.name, params, request: { method, path: base + encodePath(route.path, params, raw === 0) + query, headers, ...(body === undefined ? {} : { body }) } }
    })
}

/** Any row of either API, or now and then a path no row has. */
export function apiRequest (world: ApiWorld): fc.Arbitrary<GeneratedRequest> {
  const rows = APIS.flatMap((api) => api.routes.map((route) => requestFor(api.base, route, world, api.base === '/api/v2' ? world.v2Credentials : world.v3Credentials, Object.keys(api.pagingQuery))))
  const stray = fc.tuple(fc.constantFrom('/api/v3', '/api/v2', '/api', '', '/status'), word).map(([base, rest]) => ({
    api: base, route: 'none', params: {}, request: { method: 'GET', path: `${base}/${percent(rest)}`, headers: { authorization: 'Basic ' + Buffer.from(world.v3Credentials).toString('base64') } }
  }))
  return fc.oneof({ weight: 30, arbitrary: fc.oneof(...rows) }, { weight: 1, arbitrary: stray })
}

/**
 * Requests that would take the harness down rather than test the API: draining
 * the node (one-way), stopping or reconfiguring broker_management itself, or
 * anything naming the harness's own credentials.
 */
export function spoilsHarness (g: GeneratedRequest, world: ApiWorld): boolean {
  if (JSON.stringify(g.request).includes(HARNESS_ID)) return true
  const self = g.params.node === world.node
  if (g.route === 'drain_node' && self) return true
  return g.params.plugin === 'broker_management' && ['unload_plugin', 'load_plugin', 'update_plugin_configs', 'start_stop_plugin'].includes(g.route)
}
