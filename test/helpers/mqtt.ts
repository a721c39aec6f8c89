// MQTT.js helpers: connect and wait, collect messages, wait for events.
import { once } from 'node:events'
import type { MqttClient } from 'mqtt'

export type { MqttClient }
export { connectMqtt as connect } from '../../lib/plugin-kit/harness.js'

export async function closeAll (...clients: Array<MqttClient | undefined>): Promise<void> {
  await Promise.all(clients.map(async (c) => { if (c) await c.endAsync(true) }))
}

export interface Received { topic: string, payload: string, retain: boolean, qos: number, properties?: Record<string, unknown> }

/** Resolves with the next `count` messages the client receives. */
export async function nextMessages (client: MqttClient, count: number, timeoutMs = 5000): Promise<Received[]> {
  const got: Received[] = []
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.removeListener('message', onMessage)
      reject(new Error(`timed out with ${got.length}/${count} messages: ${JSON.stringify(got)}`))
    }, timeoutMs)
    function onMessage (topic: string, payload: Buffer, packet: { retain: boolean, qos: number, properties?: Record<string, unknown> }): void {
      got.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos, properties: packet.properties })
      if (got.length === count) {
        clearTimeout(timer)
        client.removeListener('message', onMessage)
        resolve(got)
      }
    }
    client.on('message', onMessage)
  })
}

/** Resolves true if no message arrives within `ms`. */
export async function noMessageWithin (client: MqttClient, ms: number): Promise<boolean> {
  try {
    await nextMessages(client, 1, ms)
    return false
  } catch {
    return true
  }
}

/** Resolves with the arguments of the emitter's next `event` (MQTT.js clients included); the wait keeps the process alive. */
export async function waitEvent<T extends unknown[]> (emitter: object, event: string, timeoutMs = 5000): Promise<T> {
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(new Error(`timed out waiting for ${event}`)), timeoutMs)
  try {
    return await (once(emitter as NodeJS.EventEmitter, event, { signal: abort.signal }) as Promise<T>)
  } finally {
    clearTimeout(timer)
  }
}
