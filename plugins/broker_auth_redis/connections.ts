// The plugin's connections to Redis: `auth.redis.pool` ioredis clients (one
// TCP connection each) used in turn, to one server or to the master a
// Sentinel names. Commands are never queued while a connection is down
// (they fail at once and the guard answers for the plugin); ioredis
// reconnects by itself, every 100 ms at first, then at most every second.
import { Redis, type RedisOptions } from 'ioredis'
import type { Logger, ServerAddress } from '../../lib/plugin-kit/index.js'
import type { AuthRedisConfig } from './settings.js'

const retry = (times: number): number => Math.min(times * 100, 1000)

function optionsOf (config: AuthRedisConfig): RedisOptions {
  const common: RedisOptions = {
    db: config['auth.redis.database'],
    password: config['auth.redis.password'],
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: config['auth.redis.query_timeout'],
    retryStrategy: retry,
    lazyConnect: false
  }
  if (config['auth.redis.type'] === 'single') {
    const [server] = config['auth.redis.server']
    return { ...common, host: server.host, port: server.port }
  }
  return {
    ...common,
    sentinels: config['auth.redis.server'].map(({ host, port }: ServerAddress) => ({ host, port })),
    name: config['auth.redis.sentinel'],
    sentinelRetryStrategy: retry,
    // a Sentinel itself is asked without the master's password
    sentinelPassword: undefined
  }
}

export class RedisConnections {
  readonly #clients: Redis[]
  #next = 0

  constructor (config: AuthRedisConfig, logger: Logger) {
    const options = optionsOf(config)
    this.#clients = Array.from({ length: config['auth.redis.pool'] }, () => {
      const client = new Redis(options)
      // the guard reports outages once; a listener keeps ioredis from printing each error
      client.on('error', (err: Error) => logger.debug({ error: err.message }, 'Redis connection error'))
      return client
    })
  }

  /** Resolves once every connection is ready or has failed once, or after `ms`. */
  async settled (ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<void>((resolve) => { timer = setTimeout(resolve, ms) })
    const each = this.#clients.map(async (client) => {
      if (client.status === 'ready') return
      await new Promise<void>((resolve) => {
        client.once('ready', resolve)
        client.once('error', () => resolve())
        client.once('end', resolve)
      })
    })
    await Promise.race([Promise.all(each), deadline])
    clearTimeout(timer)
  }

  /** Sends one command on the next ready connection (any connection when none is ready: it fails at once). */
  async call (name: string, args: string[]): Promise<unknown> {
    const n = this.#clients.length
    let client = this.#clients[this.#next % n]
    for (let i = 0; i < n; i++) {
      const candidate = this.#clients[(this.#next + i) % n]
      if (candidate.status === 'ready') {
        client = candidate
        break
      }
    }
    this.#next = (this.#next + 1) % n
    return await client.call(name, ...args)
  }

  close (): void {
    for (const client of this.#clients) client.disconnect()
  }
}
