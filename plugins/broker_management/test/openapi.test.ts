// The OpenAPI 3.1 documents of v3 and v2: valid by a maintained OpenAPI
// validator, every route's 200 with a schema, every GET route of a live node
// answering what its document says (so a handler whose answer drifts from
// its schema fails here), and a client generated from the document
// (openapi-typescript types, openapi-fetch) type-checked and run against the
// node in its own process.
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020 } from 'ajv/dist/2020.js'
import mqtt from 'mqtt'
import openapiTS, { astToString } from 'openapi-typescript'
import t from 'tap'
import ts from 'typescript'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'
import Joi from 'joi'
import { v3 } from '../apis.js'
import { openapi } from '../openapi.js'
import { startApiNode } from './api.js'

type Operation = { operationId: string, security?: unknown[], responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }> }
interface Document { openapi: string, servers: Array<{ url: string }>, components: { securitySchemes: Record<string, { type: string, scheme?: string, in?: string }> }, paths: Record<string, Record<string, Operation>> }

const api = await startApiNode()
t.teardown(async () => await api.stop())
const origin = new URL(api.base).origin
const auth = `Basic ${Buffer.from('admin:public').toString('base64')}`

async function get (path: string): Promise<{ status: number, body: unknown }> {
  const res = await fetch(origin + path, { headers: { authorization: auth } })
  return { status: res.status, body: JSON.parse(await res.text()) as unknown }
}

// what the listings show: a connected client with a subscription, a banned entry, an application
const client = await mqtt.connectAsync(api.mqttUrl, { clientId: 'c1', username: 'u1' })
t.teardown(async () => await client.endAsync())
await client.subscribeAsync('a/b', { qos: 1 })
const banned = await api.call('POST', '/banned/', { body: { who: 'x', as: 'client_id', reason: 'test' } })
if (banned.status !== 200) throw new Error(`POST /banned/: ${banned.status}`)
const nodeName = ((await api.call('GET', '/brokers/')).body as Array<{ node: string }>)[0].node

const documents: Record<string, Document> = {}
for (const version of ['v3', 'v2']) {
  const res = await get(`/api/${version}/openapi.json`)
  if (res.status !== 200) throw new Error(`GET /api/${version}/openapi.json: ${res.status}`)
  documents[version] = res.body as Document
}

const ARGS: Record<string, string> = { node: nodeName, clientid: 'c1', topic: 'a/b', plugin: 'broker_management', appid: 'admin', name: 'admin', username: 'admin' }

t.test('each document is valid OpenAPI 3.1 with servers and both credentials', async (t) => {
  for (const [version, doc] of Object.entries(documents)) {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>)
    t.same(result.errors, undefined, `${version}: no validation errors`)
    t.ok(result.valid, `${version} is valid`)
    t.equal(doc.openapi, '3.1.0')
    t.same(doc.servers.map((s) => s.url), [`/api/${version}`])
    t.same(doc.components.securitySchemes.basic, { ...doc.components.securitySchemes.basic, type: 'http', scheme: 'basic' })
    t.same(doc.components.securitySchemes.cookie, { ...doc.components.securitySchemes.cookie, type: 'apiKey', in: 'cookie' })
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const schema = op.responses[200]?.content?.['application/json']?.schema
        t.ok(schema !== undefined && Object.keys(schema).length > 0, `${version} ${method} ${path}: the 200 has a schema`)
      }
    }
  }
  t.same(documents.v3.paths['/auth'].post.security, [], 'POST /auth needs no credentials')
})

t.test('every GET route of a live node answers what its document says', async (t) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  for (const [version, doc] of Object.entries(documents)) {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const op = ops.get
      if (op === undefined) continue
      const url = `/api/${version}` + path.replace(/\{(\w+)\}/g, (_m, name: string) => ARGS[name] ?? t.fail(`no argument for {${name}}`))
      const res = await get(url)
      t.equal(res.status, 200, `GET ${url}`)
      const validate = ajv.compile(op.responses[200].content?.['application/json'].schema ?? {})
      t.ok(validate(res.body), `GET ${url} matches its schema`, { errors: validate.errors, body: res.body })
    }
  }
  // a listing's rows are checked, not just an empty list
  t.equal(((await get('/api/v3/connections/')).body as { items: unknown[] }).items.length, 1)
  t.equal(((await get('/api/v2/nodes/' + nodeName + '/subscriptions')).body as { result: { objects: unknown[] } }).result.objects.length, 1)
})

t.test('the schemas refuse an answer of another shape', async (t) => {
  const ajv = new Ajv2020({ strict: false })
  const schema = documents.v3.paths['/connections/{clientid}'].get.responses[200].content?.['application/json'].schema ?? {}
  const answer = (await get('/api/v3/connections/c1')).body as Array<Record<string, unknown>>
  t.ok(ajv.validate(schema, answer))
  t.notOk(ajv.validate(schema, [{ ...answer[0], connected_at: new Date().toISOString() }]), 'a time in another format')
  t.notOk(ajv.validate(schema, [{ ...answer[0], extra: 1 }]), 'a field the schema does not name')
  const { port: _port, ...missing } = answer[0]
  t.notOk(ajv.validate(schema, [missing]), 'a field missing')
})

/** The types openapi-typescript makes of a document. */
async function typesOf (doc: Document): Promise<string> {
  return astToString(await openapiTS(doc as unknown as Parameters<typeof openapiTS>[0]))
}

// the generated client: typed by the generated paths, so a 200 without a schema (unknown) fails to compile
const CLIENT = `
import createClient from 'openapi-fetch'
import type { paths } from './v3.js'
import type { paths as pathsV2 } from './v2.js'

const [origin, user, password] = process.argv.slice(2)
const authorization = 'Basic ' + Buffer.from(user + ':' + password).toString('base64')
const v3 = createClient<paths>({ baseUrl: origin + '/api/v3', headers: { authorization } })
const v2 = createClient<pathsV2>({ baseUrl: origin + '/api/v2', headers: { authorization } })

const brokers = await v3.GET('/brokers/')
const node: string = brokers.data?.[0]?.node ?? 'none'
const connections = await v3.GET('/nodes/{node}/connections/', { params: { path: { node }, query: { _limit: 10 } } })
const clientIds: string[] = (connections.data?.items ?? []).map((c) => c.client_id)
const published = await v3.POST('/mqtt/publish', { body: { topic: 'generated/client', payload: 'hello', qos: 1, retain: false, client_id: 'generated' } })
const code: number | undefined = published.data?.code
const wrong = 'Basic ' + Buffer.from(user + ':wrong').toString('base64')
const refused = await v3.POST('/mqtt/publish', { body: { topic: 'generated/client', payload: 'x', qos: 0, retain: false, client_id: 'generated' }, headers: { authorization: wrong } })
const refusedMessage: string | undefined = refused.error?.message
const users = await v2.GET('/users')
const userNames: string[] = (users.data?.result ?? []).map((u) => u.username)
console.log(JSON.stringify({ node, clientIds, code, refusedStatus: refused.response.status, refusedMessage, userNames }))
`

t.test('a client generated from the documents works against the node', async (t) => {
  const parent = join(INSTALL_ROOT, '.openapi-client')
  await mkdir(parent, { recursive: true })
  const dir = await mkdtemp(join(parent, 'run-'))
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'v3.d.ts'), await typesOf(documents.v3))
  await writeFile(join(dir, 'v2.d.ts'), await typesOf(documents.v2))
  await writeFile(join(dir, 'client.ts'), CLIENT)
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: ['node'] }
  const program = ts.createProgram([join(dir, 'client.ts')], options)
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  t.same(problems, [], 'the client type-checks against the generated types')

  const { outputText } = ts.transpileModule(CLIENT, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } })
  await writeFile(join(dir, 'client.mjs'), outputText)
  const received = new Promise<string>((resolve) => client.once('message', (_topic, payload) => { resolve(payload.toString()) }))
  await client.subscribeAsync('generated/client', { qos: 1 })
  const { stdout } = await promisify(execFile)(process.execPath, [join(dir, 'client.mjs'), origin, 'admin', 'public'], { timeout: 60_000 })
  const out = JSON.parse(stdout) as Record<string, unknown>
  t.equal(out.node, nodeName)
  t.same(out.clientIds, ['c1'])
  t.equal(out.code, 0, 'POST /mqtt/publish with Basic auth')
  t.equal(await received, 'hello', 'the message was published')
  t.equal(out.refusedStatus, 401, 'a wrong secret is refused')
  t.equal(typeof out.refusedMessage, 'string')
  t.same(out.userNames, ['admin'])
})

t.test('the routes plugins add are in the v3 document while they are loaded, with their schemas', async (t) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  const load = async (plugin: string, action: 'load' | 'unload'): Promise<void> => {
    t.equal((await api.call('PUT', `/nodes/${nodeName}/plugins/${plugin}/${action}`)).body, 'ok', `${action} ${plugin}`)
  }
  await load('broker_plugin_template', 'load')
  await load('broker_delayed_publish', 'load')
  const doc = (await get('/api/v3/openapi.json')).body as Document
  const result = await new Validator().validate(doc as unknown as Record<string, unknown>)
  t.same(result.errors, undefined, 'still valid OpenAPI 3.1')
  const greetings = doc.paths['/template/greetings']?.get as Operation & { summary: string, 'x-plugin': string, 'x-required-role': string }
  t.match(greetings, { summary: 'How many clients were greeted, and on which topic', 'x-plugin': 'broker_plugin_template', 'x-required-role': 'viewer' })
  const schema = greetings.responses[200].content?.['application/json'].schema ?? {}
  t.match(schema, { type: 'object', properties: { greetings: { type: 'integer' }, topic: { type: 'string' } } }, 'the joi schema the plugin gave, converted')
  const live = await get('/api/v3/template/greetings')
  t.equal(live.status, 200)
  t.ok(ajv.validate(schema, live.body), 'the live answer matches it', { errors: ajv.errors })
  t.notOk(ajv.validate(schema, { greetings: 'many', topic: 't' }), 'and it refuses another shape')
  const removal = doc.paths['/delayed/{msgid}']?.delete as Operation & { 'x-required-role': string }
  t.match(removal, { 'x-plugin': 'broker_delayed_publish', 'x-required-role': 'administrator', parameters: [{ name: 'msgid', in: 'path', required: true }] }, 'a write route needs an administrator; its path parameter is described')
  t.ok(doc.paths['/delayed']?.get !== undefined && doc.paths['/brokers/']?.get !== undefined, 'beside the built-in routes')
  await load('broker_plugin_template', 'unload')
  const after = (await get('/api/v3/openapi.json')).body as Document
  t.equal(after.paths['/template/greetings'], undefined, 'an unloaded plugin\'s route leaves the document')
  t.ok(after.paths['/delayed'] !== undefined, 'the other plugin\'s stay')
  t.equal((await get('/api/v2/openapi.json')).body !== undefined && ((await get('/api/v2/openapi.json')).body as Document).paths['/delayed'], undefined, 'v2 serves no plugin routes, its document names none')
  await load('broker_delayed_publish', 'unload')
})

t.test('a plugin route\'s query and body schemas are its parameters and request body', async (t) => {
  const route = {
    method: 'POST' as const,
    path: '/things/{kind}/{rest*}',
    validate: { query: Joi.object({ dry_run: Joi.boolean(), limit: Joi.number().integer().min(1).required() }), payload: Joi.object({ name: Joi.string().required() }) },
    handler: () => 'ok'
  }
  const doc = openapi(v3, [{ owner: 'broker_things', method: route.method, path: route.path, route }]) as unknown as Document
  t.same((await new Validator().validate(doc as unknown as Record<string, unknown>)).errors, undefined, 'valid OpenAPI 3.1')
  const op = doc.paths['/things/{kind}/{rest}']?.post as Operation & { parameters: Array<{ name: string, in: string, required: boolean }>, requestBody: { content: Record<string, { schema: Record<string, unknown> }> }, summary: string }
  t.match(op.parameters, [{ name: 'kind', in: 'path' }, { name: 'rest', in: 'path' }, { name: 'dry_run', in: 'query', required: false }, { name: 'limit', in: 'query', required: true }])
  t.match(op.requestBody.content['application/json'].schema, { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] })
  t.match(op, { summary: 'POST /things/{kind}/{rest*} (plugin broker_things)', 'x-required-role': 'administrator' }, 'a route without a summary is named by its method and path')
  t.match(op.responses[200].content?.['application/json'].schema, { description: /no schema/ }, 'no response schema: any JSON value')
  const shadowing = { method: 'GET' as const, path: '/brokers/', handler: () => [] }
  const again = openapi(v3, [{ owner: 'broker_things', method: 'GET', path: '/brokers/', route: shadowing }]) as unknown as Document
  t.notOk('x-plugin' in (again.paths['/brokers/'].get as object), 'a plugin route under a built-in one is left out (the built-in answers)')
})
