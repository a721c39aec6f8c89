// The two APIs one hapi server serves: each is a route table under a base
// path with its own credentials, paging and answer shapes.
// - v3 (SPEC §4.1–4.3): applications; `_page`/`_limit`; bare results; refusals `{code?, message}`.
// - v2 (SPEC §4.5): administrator users; `curr_page`/`page_size`; every answer
//   `{code, result}` (0 on success), refusals `{code, result: [], message}`.
import Joi from 'joi'
import { CODE, type ApiError } from './errors.js'
import { page, pageOf, pageOfV2, pageV2, pagingQuery, pagingQueryV2 } from './paging.js'
import { routes, type ApiContext, type Route } from './routes.js'
import { routesV2 } from './routes-v2.js'
import { roleOfTags, type Role } from './roles.js'

/** What the server is given: the handlers' context but for the table and its document, which are each API's own. */
export type ServerContext = Omit<ApiContext, 'routes' | 'openapi'>

export interface Api {
  /** `v3` */
  name: string
  /** what the OpenAPI document says of it */
  description: string
  /** `/api/v3` */
  base: string
  routes: readonly Route[]
  /** the hapi auth strategy's name, and what it accepts (HTTP Basic user name and password): the caller's role, undefined when refused */
  strategy: string
  verify: (api: ServerContext, user: string, password: string) => Promise<Role | undefined>
  pagingQuery: Joi.PartialSchemaMap
  page: (rows: unknown[], query: Record<string, unknown>, maxRowLimit: number) => unknown
  /** the body of a 200 answer */
  success: (result: unknown) => unknown
  /** the body of a refusal */
  failure: (err: ApiError) => unknown
  /** the `WWW-Authenticate` header of a 401; none when absent (a browser page's API must not make the browser ask) */
  challenge?: string
  /** for the OpenAPI document (openapi.ts): who the HTTP Basic credentials are */
  credentials: string
  /** the schemas of a page of rows, of a 200's body around a result, and of a refusal's body */
  pageOf: (row: Joi.Schema) => Joi.Schema
  answerOf: (result: Joi.Schema) => Joi.Schema
  refusal: Joi.Schema
}

const BASIC_CHALLENGE = 'Basic realm="broker"'

export const v3: Api = {
  name: 'v3',
  description: 'EMQ X 3.x-style management API v3 (SPEC §4.1–4.3): bare results, refusals {code?, message}; times YYYY-MM-DD HH:MM:SS (SPEC §2)',
  base: '/api/v3',
  routes,
  strategy: 'application',
  verify: async ({ apps }, appId, secret) => await apps.verify(appId, secret) ? await apps.role(appId) : undefined,
  pagingQuery,
  page,
  success: (result) => result,
  failure: (err) => err.body,
  challenge: BASIC_CHALLENGE,
  credentials: 'an application: app_id as the user name, its secret as the password',
  pageOf,
  answerOf: (result) => result,
  refusal: Joi.object({ code: Joi.number().integer(), message: Joi.string().allow('').required() })
}

/** v2 has no bad-topic code (115 is v3's): such a refusal is a parameter of the wrong value. */
function codeV2 (err: ApiError): number {
  const code = err.body.code ?? err.envelopeCode ?? CODE.unknown
  return code === CODE.badTopic ? CODE.wrongType : code
}

export const v2: Api = {
  name: 'v2',
  description: 'EMQ X 2.x-style management API v2 (SPEC §4.5): every answer {code, result}; times YYYY-MM-DD HH:MM:SS (SPEC §2)',
  base: '/api/v2',
  routes: routesV2,
  strategy: 'administrator',
  verify: async ({ users }, username, password) => await users.verify(username, password) ? roleOfTags((await users.get(username))?.tags ?? '') : undefined,
  pagingQuery: pagingQueryV2,
  page: pageV2,
  success: (result) => ({ code: 0, result }),
  failure: (err) => ({ code: codeV2(err), result: [], message: err.body.message }),
  challenge: BASIC_CHALLENGE,
  credentials: 'an administrator user (user name and password)',
  pageOf: pageOfV2,
  answerOf: (result) => Joi.object({ code: Joi.number().valid(0).required(), result: result.required() }),
  refusal: Joi.object({ code: Joi.number().integer().required(), result: Joi.array().length(0).required(), message: Joi.string().allow('').required() })
}

export const APIS: readonly Api[] = Object.freeze([v3, v2])
