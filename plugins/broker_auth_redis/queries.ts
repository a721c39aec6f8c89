// What the three commands' replies mean (EMQ X 3.x emqx_auth_redis):
// - auth_cmd: HMGET → [password, salt?]; HGET/GET → password. A nil
//   password (no such key or field) is "not found".
// - super_cmd: a true value (1, true, on …) → superuser.
// - acl_cmd: HGETALL mqtt_acl:<user> → field = topic filter, value = access
//   (1 subscribe, 2 publish, 3 both); every field is an allow rule.
import { isTrue, type AclRule, type BackendQueries, type QueryValues, type StoredUser } from '../../lib/plugin-kit/index.js'
import { commandArgs, type CommandTemplate } from './command.js'
import type { RedisConnections } from './connections.js'

type Send = RedisConnections['call']

function text (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (typeof value === 'string' || typeof value === 'number') return String(value)
  return undefined
}

async function send (call: Send, command: CommandTemplate, values: QueryValues): Promise<unknown> {
  const args = commandArgs(command, values)
  return args === undefined ? null : await call(command.name, args)
}

export function storedUserOf (reply: unknown): StoredUser | undefined {
  const [password, salt] = Array.isArray(reply) ? reply.map(text) : [text(reply)]
  if (password === undefined) return undefined
  return salt === undefined ? { password } : { password, salt }
}

/** HGETALL's reply (a flat field/value array, or an object) as allow rules. */
export function aclRulesOf (reply: unknown): AclRule[] {
  const pairs: Array<[unknown, unknown]> = []
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) pairs.push([reply[i], reply[i + 1]])
  } else if (reply !== null && typeof reply === 'object') {
    pairs.push(...Object.entries(reply))
  }
  const rules: AclRule[] = []
  for (const [field, value] of pairs) {
    const topic = text(field)
    const access = Number(text(value))
    if (topic === undefined || topic === '' || (access !== 1 && access !== 2 && access !== 3)) continue
    // the hash belongs to the client the command named: its rules apply to it
    rules.push({ allow: true, access, topic, username: '$all' })
  }
  return rules
}

export function queriesOf (call: Send, auth: CommandTemplate, superuser?: CommandTemplate): BackendQueries {
  const queries: BackendQueries = {
    findUser: async (values) => storedUserOf(await send(call, auth, values))
  }
  if (superuser !== undefined) queries.isSuperuser = async (values) => isTrue(text(await send(call, superuser, values)))
  return queries
}

export function aclRulesQuery (call: Send, acl: CommandTemplate): (values: QueryValues) => Promise<AclRule[]> {
  return async (values) => aclRulesOf(await send(call, acl, values))
}
