// QoS 1 load for the cluster's failure tests: each publisher sends its next
// message (`<p>:<i>` on `<topic>/<p>`) when the previous one is acknowledged;
// every acknowledged payload is recorded with the time of its PUBACK.
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'

export interface Qos1Load {
  /** acknowledged payloads, in the order of their PUBACKs */
  acked: string[]
  /** when each was acknowledged (ms) */
  ackTimes: number[]
  /** the publishers' clients (to close) */
  clients: MqttClient[]
  /** how many were acknowledged after `at` */
  ackedSince: (at: number) => number
  /** the longest time without a PUBACK, from the first PUBACK after `since` on (ms) */
  longestGap: (since?: number) => number
  /** ends the load once each publisher's message in flight is answered */
  stop: () => Promise<void>
}

export function qos1Load (url: string, topic: string, publishers: number, options: IClientOptions = {}): Qos1Load {
  const acked: string[] = []
  const ackTimes: number[] = []
  const clients: MqttClient[] = []
  let running = true
  const loops = Array.from({ length: publishers }, async (_, p) => {
    const client = mqtt.connect(url, { clientId: `${topic.replace(/\W/g, '-')}-pub-${p}`, reconnectPeriod: 1000, ...options })
    clients.push(client)
    await new Promise((resolve) => client.once('connect', resolve))
    for (let i = 0; running; i++) {
      const payload = `${p}:${i}`
      try {
        await client.publishAsync(`${topic}/${p}`, payload, { qos: 1 })
      } catch {
        // MQTT.js sends it again after a reconnect; a refused one was never acknowledged
        continue
      }
      acked.push(payload)
      ackTimes.push(Date.now())
    }
  })
  return {
    acked,
    ackTimes,
    clients,
    ackedSince: (at) => ackTimes.filter((time) => time > at).length,
    longestGap: (since = 0) => ackTimes.reduce((gap, at, i) => i === 0 || at < since ? gap : Math.max(gap, at - ackTimes[i - 1]), 0),
    stop: async () => {
      running = false
      await Promise.all(loops)
    }
  }
}
