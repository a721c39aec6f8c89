// The OpenAPI 3.1 document of an API (v3 at /api/v3/openapi.json, v2 at
// /api/v2/openapi.json), made from its route table: each row's parameters,
// request body and answer come from the joi schemas the server validates
// with and the answers are checked against (responses.ts), converted by
// joi-to-json. `servers` is the API's base path, relative to the document,
// so it holds behind any host name or proxy; both credentials the server
// accepts are security schemes: HTTP Basic (applications on v3,
// administrator users on v2) and the session cookie of `POST /auth`.
// The v3 document describes the routes plugins add (`ctx.routes.add`) too,
// with the joi schemas a plugin gave them; one without a schema answers any
// JSON value.
import type Joi from 'joi'
import joiToJsonModule from 'joi-to-json'
import type { Api } from './apis.js'
import { COOKIE_NAME } from './cookie-auth.js'
import type { PluginRouteEntry } from './plugin-routes.js'

type JsonSchema = Record<string, unknown>

/** joi-to-json is CommonJS: its `module.exports` is the converter (its types declare it as a named export) */
const joiToJson = joiToJsonModule as unknown as (schema: Joi.Schema, mode: 'open-api-3.1') => JsonSchema

/** joi-to-json writes a `.pattern(regex)` both as a patternProperty and as a property named `/regex/`: drops the second. */
function withoutPatternNames (schema: unknown): void {
  if (typeof schema !== 'object' || schema === null) return
  const s = schema as { properties?: Record<string, unknown>, patternProperties?: Record<string, unknown> }
  if (s.patternProperties !== undefined && s.properties !== undefined) {
    for (const key of Object.keys(s.properties)) if (/^\/.*\/[a-z]*$/.test(key)) delete s.properties[key]
  }
  for (const value of Object.values(schema)) withoutPatternNames(value)
}

/** A joi schema as an OpenAPI 3.1 (JSON Schema 2020-12) schema. */
export function toJsonSchema (schema: Joi.Schema): JsonSchema {
  const converted = joiToJson(schema, 'open-api-3.1')
  withoutPatternNames(converted)
  return converted
}

const json = (schema: JsonSchema): JsonSchema => ({ 'application/json': { schema } })

/** The statuses every route may answer besides its 200, each with the API's refusal body. */
function refusals (api: Api, role: string): Record<string, JsonSchema> {
  const body = json(toJsonSchema(api.refusal))
  return {
    400: { description: 'bad request: code 107 missing, 108 wrong type or value, 109 not JSON', content: body },
    401: { description: 'no or bad credentials', content: body },
    403: { description: `the caller's role is not enough: this operation needs ${role}`, content: body },
    404: { description: 'no such route, node or record', content: body },
    500: { description: 'unexpected failure', content: body }
  }
}

/** The answer of a plugin's route that declares no schema. */
const ANY_JSON: JsonSchema = { description: 'any JSON value: the plugin declared no schema for this answer' }

/** One operation of the document, from a built-in route or a plugin's. */
interface OperationSource {
  name: string
  summary: string
  method: string
  /** OpenAPI style: `/nodes/{node}/delayed/{id}` */
  path: string
  role: string
  open: boolean
  pagingQuery?: Joi.PartialSchemaMap
  query?: Joi.ObjectSchema
  payload?: Joi.Schema
  /** the 200's body; undefined: any JSON value */
  answer?: Joi.Schema
  /** `x-plugin`: the plugin that added the route */
  plugin?: string
}

function operationOf (api: Api, source: OperationSource, operationId: string): JsonSchema {
  const parameters: JsonSchema[] = [...source.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
  for (const [name, schema] of Object.entries(source.pagingQuery ?? {})) parameters.push({ name, in: 'query', required: false, schema: toJsonSchema(schema as Joi.Schema) })
  const declared = source.query === undefined ? undefined : toJsonSchema(source.query) as { properties?: Record<string, JsonSchema>, required?: string[] }
  for (const [name, schema] of Object.entries(declared?.properties ?? {})) {
    parameters.push({ name, in: 'query', required: declared?.required?.includes(name) === true, schema })
  }
  const operation: JsonSchema = {
    operationId,
    summary: source.summary,
    parameters,
    responses: { 200: { description: 'success', content: json(source.answer === undefined ? ANY_JSON : toJsonSchema(source.answer)) }, ...refusals(api, source.role) }
  }
  if (source.open) operation.security = []
  else operation['x-required-role'] = source.role
  if (source.plugin !== undefined) operation['x-plugin'] = source.plugin
  if (source.payload !== undefined) operation.requestBody = { required: true, content: json(toJsonSchema(source.payload)) }
  return operation
}

function builtIn (api: Api): OperationSource[] {
  return api.routes.map((route) => {
    const result = route.paged === true ? api.pageOf(route.response) : route.response
    return {
      name: route.name,
      summary: route.descr,
      method: route.method,
      path: route.path.replace(/:(\w+)/g, '{$1}'),
      role: route.role,
      open: route.auth === false,
      pagingQuery: route.paged === true ? api.pagingQuery : undefined,
      query: route.validate?.query,
      payload: route.validate?.payload,
      answer: route.raw === true ? result : api.answerOf(result)
    }
  })
}

/** A plugin's route: its hapi path's optional (`{id?}`) and multi-segment (`{rest*}`) parameters written as plain ones. */
function ofPlugin (api: Api, { owner, method, path, route }: PluginRouteEntry): OperationSource {
  const name = `${owner}_${method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_+$/, '')
  return {
    name,
    summary: route.summary ?? `${method} ${path} (plugin ${owner})`,
    method,
    path: path.replace(/\{(\w+)[?*]\d*\}/g, '{$1}'),
    role: (route.access ?? (method === 'GET' ? 'read' : 'write')) === 'read' ? 'viewer' : 'administrator',
    open: false,
    query: route.validate?.query,
    payload: route.validate?.payload,
    answer: route.response === undefined ? undefined : api.answerOf(route.response),
    plugin: owner
  }
}

/** The API's document; `plugins`: the routes plugins add under it (v3). */
export function openapi (api: Api, plugins: readonly PluginRouteEntry[] = []): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {}
  const used = new Set<string>()
  for (const source of [...builtIn(api), ...plugins.map((entry) => ofPlugin(api, entry))]) {
    const method = source.method.toLowerCase()
    // a plugin's route under a built-in one's method and path is never served (hapi prefers the built-in)
    if (source.plugin !== undefined && paths[source.path]?.[method] !== undefined) continue
    let operationId = source.name
    for (let n = 2; used.has(operationId); n++) operationId = `${source.name}_${n}`
    used.add(operationId)
    paths[source.path] ??= {}
    paths[source.path][method] = operationOf(api, source, operationId)
  }
  return {
    openapi: '3.1.0',
    info: { title: `Broker management API ${api.name}`, version: api.name.slice(1), description: api.description },
    servers: [{ url: api.base, description: 'this node (relative to the document)' }],
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: api.credentials },
        cookie: { type: 'apiKey', in: 'cookie', name: COOKIE_NAME, description: 'the session cookie a successful POST /auth sets (administrator users)' }
      }
    },
    security: [{ basic: [] }, { cookie: [] }],
    paths
  }
}
