// What a real MQTT.js client gets from a node whose auth plugin asks a
// database: the CONNACK code, the SUBACK codes, the PUBACK code (MQTT 5).
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'

/** Connects and disconnects; resolves with the CONNACK code (0, or the 3.x return code / MQTT 5 reason code). */
export async function connackCode (port: number, options: IClientOptions = {}): Promise<number> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 20000, ...options })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', () => resolve(0))
      client.once('error', (err: Error & { code?: unknown }) => {
        if (typeof err.code === 'number') resolve(err.code)
        else reject(err)
      })
      client.once('close', () => setImmediate(() => reject(new Error('closed before CONNACK'))))
    })
  } finally {
    await client.endAsync(true)
  }
}

/** SUBACK codes for these filters, in order (QoS 1 asked, one SUBSCRIBE). */
export async function granted (client: MqttClient, filters: string[]): Promise<number[]> {
  const map = Object.fromEntries(filters.map((topic) => [topic, { qos: 1 as const }]))
  return await new Promise((resolve, reject) => {
    client.subscribe(map, (err, grants) => {
      // MQTT.js turns a SUBACK holding a failure code into an error that carries the packet
      const packet = (err as { packet?: { granted?: number[] } } | null)?.packet
      if (packet?.granted !== undefined) resolve(packet.granted)
      else if (err) reject(err)
      else resolve(filters.map((topic) => grants?.find((g) => g.topic === topic)?.qos ?? -1))
    })
  })
}

/** The PUBACK reason code of a QoS 1 publish by an MQTT 5 client (0 when accepted). */
export async function pubackCode (client: MqttClient, topic: string): Promise<number> {
  try {
    await client.publishAsync(topic, 'x', { qos: 1 })
    return 0
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'number') return code
    throw err
  }
}

export interface ConnectKind { username: string, password: string, expected: number }

/** `count` MQTT 5 CONNECTs at once, cycling through `kinds`; resolves with the ones whose CONNACK was not the expected one. */
export async function concurrentConnects (port: number, kinds: ConnectKind[], count = 200): Promise<{ wrong: string[], allowed: number }> {
  const attempts = Array.from({ length: count }, (_, i) => ({ ...kinds[i % kinds.length], clientId: `pool-${i}` }))
  const codes = await Promise.all(attempts.map(async ({ username, password, clientId }) =>
    await connackCode(port, { protocolVersion: 5, clientId, username, password })))
  const wrong = attempts.map((a, i) => codes[i] === a.expected ? '' : `${a.clientId}: ${codes[i]}`).filter((w) => w !== '')
  return { wrong, allowed: codes.filter((c) => c === 0).length }
}
