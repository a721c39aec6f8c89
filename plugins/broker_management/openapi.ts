// The OpenAPI 3.1 document of an API (v3 at /api/v3/openapi.json, v2 at
// /api/v2/openapi.json), made from its route table: each row's parameters,
// request body and answer come from the joi schemas the server validates
// with and the answers are checked against (responses.ts), converted by
// joi-to-json. `servers` is the API's base path, relative to the document,
// so it holds behind any host name or proxy; both credentials the server
// accepts are security schemes: HTTP Basic (applications on v3,
// administrator users on v2) and the session cookie of `POST /auth`.
import type Joi from 'joi'
import joiToJsonModule from 'joi-to-json'
import type { Api } from './apis.js'
import { COOKIE_NAME } from './cookie-auth.js'

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

export function openapi (api: Api): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {}
  const used = new Set<string>()
  for (const route of api.routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    const parameters: JsonSchema[] = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
    const query: Joi.PartialSchemaMap = { ...(route.paged === true ? api.pagingQuery : {}) }
    for (const [name, schema] of Object.entries(query)) parameters.push({ name, in: 'query', required: false, schema: toJsonSchema(schema as Joi.Schema) })
    const declared = route.validate?.query === undefined ? undefined : toJsonSchema(route.validate.query) as { properties?: Record<string, JsonSchema>, required?: string[] }
    for (const [name, schema] of Object.entries(declared?.properties ?? {})) {
      parameters.push({ name, in: 'query', required: declared?.required?.includes(name) === true, schema })
    }
    let operationId = route.name
    for (let n = 2; used.has(operationId); n++) operationId = `${route.name}_${n}`
    used.add(operationId)
    const result = route.paged === true ? api.pageOf(route.response) : route.response
    const operation: JsonSchema = {
      operationId,
      summary: route.descr,
      parameters,
      responses: { 200: { description: 'success', content: json(toJsonSchema(route.raw === true ? result : api.answerOf(result))) }, ...refusals(api, route.role) }
    }
    if (route.auth === false) operation.security = []
    else operation['x-required-role'] = route.role
    if (route.validate?.payload !== undefined) {
      operation.requestBody = { required: true, content: json(toJsonSchema(route.validate.payload)) }
    }
    paths[path] ??= {}
    paths[path][route.method.toLowerCase()] = operation
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
