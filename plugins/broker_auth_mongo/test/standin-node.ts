// Test helpers: a node with broker_auth_mongo loaded, talking with the real
// `mongodb` driver to the wire-protocol STAND-IN (test/helpers/servers/
// mongo-standin.ts — not a real mongod), and MQTT.js connects that report
// the CONNACK code.
import { createHash, pbkdf2Sync } from 'node:crypto'
import bcrypt from 'bcryptjs'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { MongoStandin } from '../../../test/helpers/servers/mongo-standin.js'

export { MongoStandin }

/** Starts a node whose plugin talks to `standin`; `settings` override the plugin's, `nodeSettings` the node's. */
export async function startNode (standin: MongoStandin, settings: Record<string, string | number> = {}, nodeSettings: Record<string, string | number> = {}): Promise<TestBroker> {
  return await startBroker({ 'mqtt.allow_anonymous': 'false', 'mqtt.acl_nomatch': 'allow', ...nodeSettings }, ['tcp'], undefined, {
    plugins: { broker_auth_mongo: { 'auth.mongo.server': standin.host, 'auth.mongo.query_timeout': '2s', ...settings } }
  })
}

/** The CONNACK code an MQTT.js client gets (0: connected, then closed unless `keep`). */
export async function connack (broker: TestBroker, options: IClientOptions & { keep?: (client: MqttClient) => void } = {}): Promise<number> {
  const { keep, ...rest } = options
  const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port()}`, { reconnectPeriod: 0, connectTimeout: 10_000, ...rest })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', () => resolve(0))
      client.once('error', (err: Error & { code?: number }) => typeof err.code === 'number' ? resolve(err.code) : reject(err))
      client.once('close', () => reject(new Error('closed before CONNACK')))
    })
  } finally {
    if (keep !== undefined && client.connected) keep(client)
    else await client.endAsync(true)
  }
}

export const digest = (algorithm: 'md5' | 'sha1' | 'sha256' | 'sha512', text: string): string => createHash(algorithm).update(text, 'utf8').digest('hex')
export const pbkdf2Hex = (password: string, salt: string, iterations: number, dklen: number, digestName: string): string => pbkdf2Sync(password, salt, iterations, dklen, digestName).toString('hex')
export const bcryptHash = (password: string, salt: string): string => bcrypt.hashSync(password, salt)

/** Connects (MQTT.js, MQTT 3.1.1), subscribes to `filters` at QoS 1 and resolves with the SUBACK's granted codes. */
export async function granted (broker: TestBroker, username: string, password: string, filters: string[], clientId = `sub-${username}`): Promise<number[]> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port()}`, { reconnectPeriod: 0, connectTimeout: 10_000, clientId, username, password })
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve())
      client.once('error', reject)
    })
    // MQTT.js rejects a SUBACK holding a refusal; the packet is on the error
    return await new Promise<number[]>((resolve, reject) => {
      client.subscribe(filters, { qos: 1 }, (err, grants) => {
        const packet = (err as (Error & { packet?: { granted?: number[] } }) | null)?.packet
        if (packet?.granted !== undefined) resolve(packet.granted)
        else if (err) reject(err)
        else resolve((grants ?? []).map((g) => g.qos))
      })
    })
  } finally {
    await client.endAsync(true)
  }
}
