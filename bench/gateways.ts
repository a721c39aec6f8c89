// The gateways section (`gateways`): the same fan-in load as the cluster
// section (10 publishers → 1 MQTT subscriber on bench/in/#, 16-byte
// payloads, at most WINDOW messages ahead of the subscriber) on one broker
// node with the gateway plugins loaded, once with MQTT publishers (QoS 0
// PUBLISH) and once per gateway with its clients as the publishers (STOMP:
// SEND frames, which broker_stomp publishes at QoS 1 on its in-process link;
// MQTT-SN: PUBLISH datagrams at QoS 0 to a registered topic id, which
// broker_sn publishes at QoS 0 on its link; LwM2M: 10 devices registered
// with broker_lwm2m, observed by it (auto_observe), sending NON notifications
// of a TLV resource, each of which the gateway decodes and publishes as EMQ
// X's JSON at QoS 1 on the device's notify topic, here bench/in/<ep>/n;
// CoAP: NON PUT requests, which broker_coap publishes at QoS 0).
// Each run gets a fresh node and two fresh workers. See bench/README.md.
import { createSocket } from 'node:dgram'
import { Worker } from './pool.js'
import type { Role } from './protocol.js'
import { range, receivedPerSecond, timedOn } from './scenarios.js'
import { freePort, Server } from './servers.js'

export const GATEWAYS_SECTION = 'gateways'

/** As in the cluster section: the publishers stay at most this many messages ahead of the subscriber. */
const WINDOW = 10_000
/**
 * The LwM2M devices' window: every notification goes through the coap Agent and a QoS 1 publish,
 * and UDP has no flow control: 10 000 datagrams ahead overflow the gateway socket's receive buffer
 * and the run measures the stall resets; this many fit in it.
 */
const UDP_WINDOW = 500
const SETTLE_MS = 500

export const GATEWAY_RUNS = [
  { key: 'mqtt', title: 'MQTT publishers (PUBLISH, QoS 0)' },
  { key: 'stomp', title: 'STOMP publishers (SEND, broker_stomp)' },
  { key: 'sn', title: 'MQTT-SN publishers (PUBLISH QoS 0 over UDP, broker_sn)' },
  { key: 'coap', title: 'CoAP publishers (NON PUT, broker_coap)' },
  { key: 'lwm2m', title: 'LwM2M devices (notifications, broker_lwm2m)' }
] as const
export type GatewayRun = typeof GATEWAY_RUNS[number]['key']

export interface GatewayResults {
  /** msg/s received by the subscriber; null when that run failed */
  'msg/s': Record<GatewayRun, number | null>
  /** msg/s through the gateway / msg/s of the same load over MQTT */
  ratio: { 'stomp/mqtt': number | null, 'sn/mqtt': number | null, 'coap/mqtt': number | null, 'lwm2m/mqtt': number | null }
}

/** A UDP port free now (bound to port 0, then released). */
async function freeUdpPort (): Promise<number> {
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  const { port } = socket.address()
  await new Promise<void>((resolve) => socket.close(() => resolve()))
  return port
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

async function measure (key: GatewayRun, seconds: number): Promise<number> {
  const stompPort = await freePort()
  const snPort = await freeUdpPort()
  const coapPort = await freeUdpPort()
  const lwm2mPort = await freeUdpPort()
  const node = await Server.start('broker', {
    label: `broker with the gateway plugins (${key})`,
    plugins: {
      broker_stomp: { 'stomp.listener': `127.0.0.1:${stompPort}`, 'stomp.listener.max_connections': '64' },
      broker_sn: { 'mqtt.sn.port': `127.0.0.1:${snPort}`, 'mqtt.sn.advertise_duration': '0' },
      broker_coap: { 'coap.port': `127.0.0.1:${coapPort}` },
      broker_lwm2m: { 'lwm2m.port': `127.0.0.1:${lwm2mPort}`, 'lwm2m.auto_observe': 'on', 'lwm2m.mountpoint': 'bench/in/%e/', 'lwm2m.topics.notify': 'n' }
    }
  })
  const workers = [new Worker(0), new Worker(1)]
  workers[0].onProgress = (received) => workers[1].send({ type: 'peer', received })
  const roles: Role[] = [
    { kind: 'fan-in', subscriber: true, publishers: [], window: WINDOW },
    { kind: 'fan-in', subscriber: false, publishers: range(0, 10), window: key === 'lwm2m' ? UDP_WINDOW : WINDOW, ...(key === 'stomp' ? { stompPort } : key === 'sn' ? { snPort } : key === 'coap' ? { coapPort } : key === 'lwm2m' ? { lwm2mPort } : {}) }
  ]
  try {
    const results = await Promise.race([timedOn(workers, [node.port, node.port], roles, seconds, SETTLE_MS), node.died])
    const rate = receivedPerSecond(results)
    if (rate === 0) throw new Error('the subscriber received no message')
    return rate
  } catch (err) {
    // Clients notice a dead server before the runner sees it exit: blame the server, not them.
    await sleep(200)
    throw node.deathError ?? err
  } finally {
    await Promise.all(workers.map(async (w) => await w.close()))
    await node.stop()
  }
}

/** Runs each in order; progress on stderr, failures into `errors`. */
export async function runGatewaysSection (seconds: number, errors: string[]): Promise<GatewayResults> {
  const results: GatewayResults = { 'msg/s': { mqtt: null, stomp: null, sn: null, coap: null, lwm2m: null }, ratio: { 'stomp/mqtt': null, 'sn/mqtt': null, 'coap/mqtt': null, 'lwm2m/mqtt': null } }
  for (const { key, title } of GATEWAY_RUNS) {
    process.stderr.write(`${GATEWAYS_SECTION} ${title} ... `)
    try {
      results['msg/s'][key] = await measure(key, seconds)
      process.stderr.write(`${results['msg/s'][key]!.toFixed(0)} msg/s\n`)
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      process.stderr.write(`failed: ${message}\n`)
      errors.push(`${GATEWAYS_SECTION} ${title}: ${message}`)
    }
  }
  const { mqtt, stomp, sn, coap, lwm2m } = results['msg/s']
  const ratio = (gateway: number | null): number | null => mqtt === null || gateway === null || mqtt === 0 ? null : gateway / mqtt
  results.ratio['stomp/mqtt'] = ratio(stomp)
  results.ratio['sn/mqtt'] = ratio(sn)
  results.ratio['coap/mqtt'] = ratio(coap)
  results.ratio['lwm2m/mqtt'] = ratio(lwm2m)
  return results
}
