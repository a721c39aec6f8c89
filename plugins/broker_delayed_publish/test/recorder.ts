// Test helpers: a subscriber that records every message with its arrival
// time, and the reason code of an MQTT 5 PUBACK/PUBREC.
import type { IClientPublishOptions, MqttClient } from 'mqtt'

export interface Arrival { topic: string, payload: string, retain: boolean, qos: number, properties?: Record<string, unknown>, at: number }

export interface Recorder {
  arrivals: Arrival[]
  /** resolves with the arrivals on `topic` once there are `count` of them; rejects after `timeoutMs` */
  on: (topic: string, count?: number, timeoutMs?: number) => Promise<Arrival[]>
  /** the arrivals on `topic` so far */
  seen: (topic: string) => Arrival[]
}

export function record (client: MqttClient): Recorder {
  const arrivals: Arrival[] = []
  const waiters = new Set<() => void>()
  client.on('message', (topic, payload, packet) => {
    arrivals.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos, properties: packet.properties as Record<string, unknown> | undefined, at: Date.now() })
    for (const wake of [...waiters]) wake()
  })
  const seen = (topic: string): Arrival[] => arrivals.filter((a) => a.topic === topic)
  return {
    arrivals,
    seen,
    on: async (topic, count = 1, timeoutMs = 20_000) => await new Promise((resolve, reject) => {
      const check = (): void => {
        if (seen(topic).length < count) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve(seen(topic))
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`${seen(topic).length}/${count} messages on ${topic} within ${timeoutMs} ms; got ${JSON.stringify(arrivals.map((a) => a.topic))}`))
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  }
}

/** The reason code of the PUBACK (QoS 1) or PUBREC (QoS 2) an MQTT 5 client gets; 0 for a 3.x client's plain acknowledgement. */
export async function ackCode (client: MqttClient, topic: string, payload = 'x', options: IClientPublishOptions = { qos: 1 }): Promise<number> {
  return await new Promise((resolve, reject) => {
    client.publish(topic, payload, options, (err, packet) => {
      // MQTT.js fails a publish acknowledged with 0x80 and up, with an error carrying the code
      const failure = err as (Error & { code?: number }) | null | undefined
      if (failure != null && failure.code === undefined) return reject(failure)
      resolve(failure?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode ?? 0)
    })
  })
}
