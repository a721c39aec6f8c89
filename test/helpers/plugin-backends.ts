// What each plugin of plugins/ needs to load against a real backend, for
// tests that load every plugin (test/66): the server it talks to, started
// here (Redis, PostgreSQL, MariaDB, slapd with the plugins' own schema and
// seed, the MongoDB stand-in, an HTTP auth server, a web hook endpoint, a
// free port for the API), and its settings pointing at it. Every auth plugin is set to answer
// `ignore` for a client the backend does not know and when the backend
// does not answer, so test traffic is decided by the node's own settings.
import { createSocket } from 'node:dgram'
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
/** `dataFiles`: files the plugin reads from the node's data folder (path under it → text), written before it loads */
interface Backend { settings: Settings, close?: () => Promise<void>, dataFiles?: Record<string, string> }

const plugin = (name: string, file: string): string => join(INSTALL_ROOT, 'plugins', name, file)
const IGNORE_UNAVAILABLE = (prefix: string): Settings => ({ [`${prefix}.unavailable.auth`]: 'ignore', [`${prefix}.unavailable.acl`]: 'ignore' })

/** An HTTP server answering 200 with `body` to every request. */
async function httpServer (body: string): Promise<{ base: string, close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume()
    req.once('end', () => res.end(body))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

/** An HTTP auth server answering 200 `ignore` to every request: the plugin asks, the node decides. */
async function ignoringHttpServer (): Promise<Backend> {
  const { base, close } = await httpServer('ignore')
  return {
    settings: { 'auth.http.auth_req': `${base}/auth`, 'auth.http.super_req': `${base}/superuser`, 'auth.http.acl_req': `${base}/acl`, 'auth.http.failure': 'ignore' },
    close
  }
}

/** A web hook endpoint answering 200 to every event; rules for the events the traffic makes. */
async function webHookEndpoint (): Promise<Backend> {
  const { base, close } = await httpServer('ok')
  const rule = (event: string): Settings => ({ [`web.hook.rule.${event}.1`]: JSON.stringify({ action: `on_${event.replace('.', '_')}` }) })
  return {
    settings: {
      'web.hook.api.url': `${base}/hook`,
      'web.hook.pool_size': 4,
      ...rule('client.connected'),
      ...rule('client.disconnected'),
      ...rule('message.publish'),
      ...rule('message.delivered')
    },
    close
  }
}

/** A UDP socket that takes StatsD datagrams and drops them. */
async function statsdServer (): Promise<Backend> {
  const socket = createSocket('udp4')
  socket.on('message', () => {})
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  return {
    settings: { 'statsd.host': '127.0.0.1', 'statsd.port': socket.address().port, 'statsd.flush_interval': '1s', 'statsd.tags': 'node:%n' },
    close: async () => { await new Promise<void>((resolve) => socket.close(() => resolve())) }
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
  // a script on the traffic's messages and connections: its VM (a WebAssembly instance) made and freed at every cycle
  broker_lua_hook: async () => ({
    settings: { 'lua.hook.timeout': '1s' },
    dataFiles: {
      'script/leak.lua': 'n, seen = 0, {} ' +
        'function on_message_publish(c, u, topic, payload, q, r) n = n + 1 return topic, payload, q, r end ' +
        'function on_client_connected(c) seen[c] = true end function on_client_disconnected(c) seen[c] = nil end ' +
        'function register_hook() return "on_message_publish", "on_client_connected", "on_client_disconnected" end'
    }
  }),
  broker_delayed_publish: async () => ({ settings: { 'delayed.max_delayed_messages': 1000 } }),
  // checks every plugin folder each second; no log file (nothing written into the install)
  broker_reloader: async () => ({ settings: { 'reloader.interval': '1s', 'reloader.logfile': '' } }),
  broker_auth_jwt: async () => ({ settings: { 'auth.jwt.secret': 'leak-test-secret' } }),
  broker_auth_http: ignoringHttpServer,
  broker_web_hook: webHookEndpoint,
  broker_management: async () => ({ settings: { 'management.listener.http': `127.0.0.1:${await freePort()}` } }),
  // its server and the sampling timer made and freed at every cycle (it needs no broker_management to load)
  broker_dashboard: async () => ({ settings: { 'dashboard.listener.http': '127.0.0.1:0', 'dashboard.sample_interval': '1s' } }),
  broker_stomp: async () => ({ settings: { 'stomp.listener': '127.0.0.1:0' } }),
  broker_lwm2m: async () => ({ settings: { 'lwm2m.port': '127.0.0.1:0' } }),
  // no ADVERTISE broadcast from a test
  broker_sn: async () => ({ settings: { 'mqtt.sn.port': '127.0.0.1:0', 'mqtt.sn.advertise_duration': 0 } }),
  broker_coap: async () => ({ settings: { 'coap.port': '127.0.0.1:0' } }),
  // every module on; the rule matches the traffic's topics and rewrites them to themselves, so routing is untouched while it runs
  broker_modules: async () => ({
    settings: {
      'module.subscription': 'on',
      'module.subscription.1.topic': 'modules/%c',
      'module.rewrite': 'on',
      'module.rewrite.rule.1': 'traffic/# ^traffic/(.+)$ traffic/$1'
    }
  }),
  // keeps its messages in the node's store: nothing to start
  broker_retainer: async () => ({ settings: {} }),
  broker_statsd: statsdServer,
  broker_recon: async () => ({ settings: {} }),
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
  /** the files to write into the node's data folder before the plugin loads (path under it → text) */
  dataFiles: (name: string) => Record<string, string>
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
    dataFiles: (name) => started.get(name)?.dataFiles ?? {},
    close
  }
}
