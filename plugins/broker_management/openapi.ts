// The OpenAPI 3 document, made from the route table and its joi schemas. The
// converter knows the joi types the table uses: object, string (with valid
// values), number (integer), boolean, alternatives.
import type Joi from 'joi'
import { pagingQuery } from './paging.js'
import type { Route } from './routes.js'

type JsonSchema = Record<string, unknown>

interface Description {
  type: string
  flags?: { presence?: string, description?: string, only?: boolean }
  allow?: unknown[]
  keys?: Record<string, Description>
  rules?: Array<{ name: string }>
  matches?: Array<{ schema: Description }>
}

export function toJsonSchema (d: Description): JsonSchema {
  const out: JsonSchema = {}
  if (d.flags?.description !== undefined) out.description = d.flags.description
  switch (d.type) {
    case 'object': {
      const keys = Object.entries(d.keys ?? {})
      out.type = 'object'
      out.properties = Object.fromEntries(keys.map(([k, v]) => [k, toJsonSchema(v)]))
      const required = keys.filter(([, v]) => v.flags?.presence === 'required').map(([k]) => k)
      if (required.length > 0) out.required = required
      break
    }
    case 'number':
      out.type = d.rules?.some((r) => r.name === 'integer') === true ? 'integer' : 'number'
      break
    case 'boolean':
      out.type = 'boolean'
      break
    case 'alternatives':
      out.oneOf = (d.matches ?? []).map((m) => toJsonSchema(m.schema))
      break
    default:
      out.type = 'string'
      if (d.flags?.only === true && d.allow !== undefined) out.enum = d.allow.filter((v) => v !== '')
  }
  return out
}

const describe = (schema: Joi.Schema): Description => schema.describe() as Description

export function openapi (routes: readonly Route[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {}
  const used = new Set<string>()
  for (const route of routes) {
    const path = '/api/v3' + route.path.replace(/:(\w+)/g, '{$1}')
    const parameters: JsonSchema[] = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
    const query = { ...(route.paged === true ? pagingQuery : {}) }
    for (const [name, schema] of Object.entries(query)) parameters.push({ name, in: 'query', required: false, schema: toJsonSchema(describe(schema)) })
    for (const [name, d] of Object.entries(route.validate?.query === undefined ? {} : describe(route.validate.query).keys ?? {})) {
      parameters.push({ name, in: 'query', required: d.flags?.presence === 'required', schema: toJsonSchema(d) })
    }
    let operationId = route.name
    for (let n = 2; used.has(operationId); n++) operationId = `${route.name}_${n}`
    used.add(operationId)
    const operation: JsonSchema = {
      operationId,
      summary: route.descr,
      parameters,
      responses: {
        200: { description: 'success', content: { 'application/json': {} } },
        400: { description: 'bad request: {code: 107 missing | 108 wrong type | 109 not JSON, message}' },
        401: { description: 'no or bad application credentials' },
        403: { description: `the caller's role is not enough: this operation needs ${route.role}` },
        404: { description: 'no such route, node or record: {message}' },
        500: { description: 'unexpected failure: {message}' }
      }
    }
    if (route.auth === false) operation.security = []
    else operation['x-required-role'] = route.role
    if (route.validate?.payload !== undefined) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: toJsonSchema(describe(route.validate.payload)) } } }
    }
    paths[path] ??= {}
    paths[path][route.method.toLowerCase()] = operation
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Broker management API', version: '3' },
    components: { securitySchemes: { application: { type: 'http', scheme: 'basic', description: 'app_id and secret of an application' } } },
    security: [{ application: [] }],
    paths
  }
}
