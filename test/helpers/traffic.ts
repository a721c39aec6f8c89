// Steady MQTT traffic against a node while a test does something else to it
// (test/66 loads and unloads plugins under it): two subscribers (MQTT 5 at
// QoS 1, MQTT 3.1.1 at QoS 0) on traffic/#, two publishers alternating QoS 0
// and QoS 1, and a client that connects, subscribes, publishes QoS 1 to
// itself, waits for the message and disconnects, over and over. Anything
// unexpected (a persistent client closed, a refused connect, a failed
// publish) is recorded in `problems`. `pause()` stops making traffic and
// waits for what is in flight, so handles can be counted on a quiet node.
import type { IClientOptions, MqttClient } from 'mqtt'
import { connect } from './mqtt.js'

export interface Traffic {
  /** messages the two subscribers received */
  readonly delivered: number
  /** connect-subscribe-publish-disconnect rounds completed */
  readonly churns: number
  readonly problems: string[]
  /** resolves once the subscribers have received more than `than` messages (the traffic flows) */
  flowing: (than: number, timeoutMs?: number) => Promise<void>
  pause: () => Promise<void>
  resume: () => void
  stop: () => Promise<void>
}

/** a shared, loaded box may be slow to answer; a CONNECT that never gets its CONNACK is the fault looked for */
const CONNECT_TIMEOUT_MS = 30_000
/** between two messages of one publisher */
const PACE_MS = 5

const USER: IClientOptions = { username: 'traffic', password: 'traffic-pw' }

export async function startTraffic (url: string): Promise<Traffic> {
  const problems: string[] = []
  let delivered = 0
  let churns = 0
  let running = false
  let stopping = false
  let loops: Array<Promise<void>> = []
  const waiters = new Set<() => void>()
  const persistent: MqttClient[] = []

  const watch = (client: MqttClient, name: string): MqttClient => {
    client.on('close', () => { if (!stopping) problems.push(`${name} closed`) })
    client.on('error', (err) => problems.push(`${name}: ${err.message}`))
    return client
  }
  const subscribers = [
    watch(await connect(url, { ...USER, clientId: 'traffic-sub-v5', protocolVersion: 5 }), 'traffic-sub-v5'),
    watch(await connect(url, { ...USER, clientId: 'traffic-sub-v4', protocolVersion: 4 }), 'traffic-sub-v4')
  ]
  await subscribers[0].subscribeAsync('traffic/#', { qos: 1 })
  await subscribers[1].subscribeAsync('traffic/#', { qos: 0 })
  for (const subscriber of subscribers) {
    subscriber.on('message', () => {
      delivered++
      for (const wake of waiters) wake()
    })
  }
  const publishers = [
    watch(await connect(url, { ...USER, clientId: 'traffic-pub-1', protocolVersion: 5 }), 'traffic-pub-1'),
    watch(await connect(url, { ...USER, clientId: 'traffic-pub-2', protocolVersion: 4 }), 'traffic-pub-2')
  ]
  persistent.push(...subscribers, ...publishers)

  const publishing = async (client: MqttClient, id: number): Promise<void> => {
    for (let n = 0; running; n++) {
      try {
        await client.publishAsync(`traffic/${id}/${n % 10}`, `message ${n}`, { qos: n % 2 === 0 ? 0 : 1 })
      } catch (err) {
        problems.push(`traffic-pub-${id}: ${(err as Error).message}`)
      }
      // paced, so the traffic does not take the whole event loop from what the test does meanwhile
      await new Promise((resolve) => setTimeout(resolve, PACE_MS))
    }
  }
  const churning = async (): Promise<void> => {
    for (let n = 0; running; n++) {
      const clientId = `traffic-churn-${n % 4}`
      try {
        const client = await connect(url, { ...USER, clientId, protocolVersion: n % 2 === 0 ? 5 : 4, connectTimeout: CONNECT_TIMEOUT_MS })
        try {
          await client.subscribeAsync(`churn/${clientId}`, { qos: 1 })
          let timer: NodeJS.Timeout | undefined
          const echoed = new Promise<void>((resolve, reject) => {
            timer = setTimeout(() => reject(new Error('its own message did not come back within 10 s')), 10_000)
            client.once('message', () => resolve())
          }).finally(() => clearTimeout(timer))
          await Promise.all([echoed, client.publishAsync(`churn/${clientId}`, 'echo', { qos: 1 })])
          churns++
        } finally {
          await client.endAsync()
        }
      } catch (err) {
        problems.push(`${clientId}: ${(err as Error).message}`)
      }
    }
  }
  const resume = (): void => {
    if (running) return
    running = true
    loops = [...publishers.map(async (client, i) => await publishing(client, i + 1)), churning()]
  }
  const pause = async (): Promise<void> => {
    running = false
    await Promise.all(loops)
  }
  resume()
  return {
    get delivered () { return delivered },
    get churns () { return churns },
    problems,
    flowing: async (than, timeoutMs = 30_000) => {
      if (delivered > than) return
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => { waiters.delete(wake); reject(new Error(`traffic stalled at ${delivered} messages for ${timeoutMs} ms`)) }, timeoutMs)
        const wake = (): void => {
          if (delivered <= than) return
          clearTimeout(timer)
          waiters.delete(wake)
          resolve()
        }
        waiters.add(wake)
      })
    },
    pause,
    resume,
    stop: async () => {
      await pause()
      stopping = true
      await Promise.all(persistent.map(async (client) => await client.endAsync()))
    }
  }
}
