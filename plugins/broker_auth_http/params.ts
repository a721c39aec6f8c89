// Request parameters: `name=template` pairs separated by commas, where a
// template may hold the variables %u %c %a %P %t %A (SPEC §5.2 rule 7).
// Other `%x` sequences are kept as written.
import type { AclAccess, ClientInfo } from '../../lib/plugin-kit/index.js'

export interface Param {
  name: string
  template: string
}

/** What the variables stand for in one request; an absent value substitutes ''. */
export interface Variables {
  client: ClientInfo
  password?: Buffer
  topic?: string
  access?: AclAccess
}

/** Parses `clientid=%c,username=%u`; throws on a pair without `=` or with an empty name. */
export function parseParams (text: string): Param[] {
  if (text.trim() === '') return []
  return text.split(',').map((pair) => {
    const eq = pair.indexOf('=')
    const name = eq < 0 ? '' : pair.slice(0, eq).trim()
    if (name === '') throw new Error(`"${pair.trim()}" is not a name=value pair`)
    return { name, template: pair.slice(eq + 1).trim() }
  })
}

const VARIABLE = /%[ucaPtA]/g

function value (variable: string, vars: Variables): string {
  switch (variable) {
    case '%u': return vars.client.username ?? ''
    case '%c': return vars.client.clientId
    case '%a': return vars.client.ipAddress
    case '%P': return vars.password?.toString('utf8') ?? ''
    case '%t': return vars.topic ?? ''
    default: return vars.access === undefined ? '' : vars.access === 'subscribe' ? '1' : '2'
  }
}

export function substitute (template: string, vars: Variables): string {
  return template.replace(VARIABLE, (variable) => value(variable, vars))
}

/** The name/value pairs of one request, in the order configured. */
export function fill (params: readonly Param[], vars: Variables): Array<[string, string]> {
  return params.map(({ name, template }) => [name, substitute(template, vars)])
}
