// What each plugin of plugins/ needs to load against a real backend, for
// tests that load every plugin (test/66): the server it talks to, started
// here (Redis, PostgreSQL, MariaDB, slapd with the plugins' own schema and
// seed, the MongoDB stand-in, an HTTP auth server, a free port for the API),
// and its settings pointing at it. Every auth plugin is set to answer
// `ignore` for a client the backend does not know and when the backend
// does not answer, so test traffic is decided by the node's own settings.
import { once } from 'node:events'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { INSTALL_ROOT } from '../../lib/root.js'
import { freePort } from './broker.js'
import { MongoStandin } from './servers/mongo-standin.js'
import { startMariadb } from './servers/mariadb.js'
import { startPostgres } from './servers/postgres.js'
import { startRedis } from './servers/redis.js'
import { ROOT_DN, ROOT_PASSWORD, startSlapd } from './servers/slapd.js'

type Settings = Record<string, string | number>
interface Backend { settings: Settings, close?: () => Promise<void> }

const plugin = (name: string, file: string): string => join(INSTALL_ROOT, 'plugins', name, file)
const IGNORE_UNAVAILABLE = (prefix: string): Settings => ({ [`${prefix}.unavailable.auth`]: 'ignore', [`${prefix}.unavailable.acl`]: 'ignore' })

/** An HTTP auth server answering 200 `ignore` to every request: the plugin asks, the node decides. */
async function ignoringHttpServer (): Promise<Backend> {
  const server = createServer((req, res) => {
    req.resume()
    req.once('end', () => res.end('ignore'))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return {
    settings: { 'auth.http.auth_req': `${base}/auth`, 'auth.http.super_req': `${base}/superuser`, 'auth.http.acl_req': `${base}/acl`, 'auth.http.failure': 'ignore' },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

async function sql (name: 'broker_auth_mysql' | 'broker_auth_pgsql'): Promise<Backend> {
  const prefix = name === 'broker_auth_mysql' ? 'auth.mysql' : 'auth.pgsql'
  const server = name === 'broker_auth_mysql' ? await startMariadb() : await startPostgres()
  await server.seed(plugin(name, 'schema.sql'))
  const acl: Settings = name === 'broker_auth_pgsql'
    ? { 'auth.pgsql.acl_query': "select allow, ipaddr, username, clientid, access, topic from mqtt_acl where ipaddr = '%a' or username = '%u' or username = '$all' or clientid = '%c'" }
    : {}
  return {
    settings: {
      [`${prefix}.server`]: `127.0.0.1:${server.port}`,
      [`${prefix}.username`]: server.user,
      [`${prefix}.password`]: server.password,
      [`${prefix}.database`]: server.database,
      [`${prefix}.pool`]: 2,
      ...acl,
      ...IGNORE_UNAVAILABLE(prefix)
    },
    close: server.close
  }
}

const BACKENDS: Record<string, () => Promise<Backend>> = {
  broker_auth_clientid: async () => ({ settings: {} }),
  broker_auth_username: async () => ({ settings: {} }),
  broker_plugin_template: async () => ({ settings: { 'template.greeting_topic': 'greetings' } }),
  broker_auth_jwt: async () => ({ settings: { 'auth.jwt.secret': 'leak-test-secret' } }),
  broker_auth_http: ignoringHttpServer,
  broker_management: async () => ({ settings: { 'management.listener.http': `127.0.0.1:${await freePort()}` } }),
  broker_stomp: async () => ({ settings: { 'stomp.listener': '127.0.0.1:0' } }),
  broker_auth_mysql: async () => await sql('broker_auth_mysql'),
  broker_auth_pgsql: async () => await sql('broker_auth_pgsql'),
  broker_auth_redis: async () => {
    const redis = await startRedis({ password: 'redis-pw' })
    return { settings: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.password': 'redis-pw', 'auth.redis.pool': 2, ...IGNORE_UNAVAILABLE('auth.redis') }, close: redis.close }
  },
  broker_auth_ldap: async () => {
    const slapd = await startSlapd({ seed: [plugin('broker_auth_ldap', 'schema.ldif'), plugin('broker_auth_ldap', 'seed.ldif')] })
    return {
      settings: { 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': slapd.port, 'auth.ldap.bind_dn': ROOT_DN, 'auth.ldap.bind_password': ROOT_PASSWORD, 'auth.ldap.pool': 2, 'auth.ldap.unavailable.auth': 'ignore' },
      close: slapd.close
    }
  },
  broker_auth_mongo: async () => {
    const standin = await MongoStandin.start()
    return { settings: { 'auth.mongo.server': standin.host, 'auth.mongo.pool': 2, ...IGNORE_UNAVAILABLE('auth.mongo') }, close: async () => await standin.stop() }
  }
}

export interface PluginBackends {
  /** the settings that load the plugin against its backend; {} for a plugin this file does not know */
  settings: (name: string) => Settings
  /** whether this file knows what the plugin needs */
  knows: (name: string) => boolean
  close: () => Promise<void>
}

/** Starts, at once, the backends of the named plugins. */
export async function startPluginBackends (names: string[]): Promise<PluginBackends> {
  const started = new Map<string, Backend>()
  const results = await Promise.allSettled(names.filter((name) => BACKENDS[name] !== undefined).map(async (name) => {
    started.set(name, await BACKENDS[name]())
  }))
  const close = async (): Promise<void> => { await Promise.all([...started.values()].map(async (b) => await b.close?.())) }
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed !== undefined) {
    await close()
    throw failed.reason
  }
  return {
    settings: (name) => started.get(name)?.settings ?? {},
    knows: (name) => BACKENDS[name] !== undefined,
    close
  }
}
