// The two APIs one hapi server serves: each is a route table under a base
// path with its own credentials, paging and answer shapes.
// - v3 (SPEC §4.1–4.3): applications; `_page`/`_limit`; bare results; refusals `{code?, message}`.
// - v2 (SPEC §4.5): administrator users; `curr_page`/`page_size`; every answer
//   `{code, result}` (0 on success), refusals `{code, result: [], message}`.
import type Joi from 'joi'
import { CODE, type ApiError } from './errors.js'
import { page, pageV2, pagingQuery, pagingQueryV2 } from './paging.js'
import { routes, type ApiContext, type Route } from './routes.js'
import { routesV2 } from './routes-v2.js'
import { roleOfTags, type Role } from './roles.js'

/** What the server is given: the handlers' context but for the table, which is each API's own. */
export type ServerContext = Omit<ApiContext, 'routes'>

export interface Api {
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
}

const BASIC_CHALLENGE = 'Basic realm="broker"'

export const v3: Api = {
  base: '/api/v3',
  routes,
  strategy: 'application',
  verify: async ({ apps }, appId, secret) => await apps.verify(appId, secret) ? await apps.role(appId) : undefined,
  pagingQuery,
  page,
  success: (result) => result,
  failure: (err) => err.body,
  challenge: BASIC_CHALLENGE
}

/** v2 has no bad-topic code (115 is v3's): such a refusal is a parameter of the wrong value. */
function codeV2 (err: ApiError): number {
  const code = err.body.code ?? err.envelopeCode ?? CODE.unknown
  return code === CODE.badTopic ? CODE.wrongType : code
}

export const v2: Api = {
  base: '/api/v2',
  routes: routesV2,
  strategy: 'administrator',
  verify: async ({ users }, username, password) => await users.verify(username, password) ? roleOfTags((await users.get(username))?.tags ?? '') : undefined,
  pagingQuery: pagingQueryV2,
  page: pageV2,
  success: (result) => ({ code: 0, result }),
  failure: (err) => ({ code: codeV2(err), result: [], message: err.body.message }),
  challenge: BASIC_CHALLENGE
}

export const APIS: readonly Api[] = Object.freeze([v3, v2])
