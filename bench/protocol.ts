// IPC messages between the runner (bench/run.ts) and its client workers
// (bench/worker.ts). Workers are forked with `serialization: 'advanced'`, so
// typed arrays cross the channel as they are.

/** What one worker does in a scenario; ids keep client ids and topics unique across workers. */
export type Role =
  /**
   * window: the publishers (all of this worker's together) stay at most this many
   * messages ahead of the subscriber, which may be in the other worker (its
   * progress then comes as `peer` messages); absent: no limit but TCP's.
   */
  /** stompPort: the publishers are STOMP 1.2 clients of that port (broker_stomp), sending SEND frames */
  /** snPort: the publishers are MQTT-SN 1.2 clients of that UDP port (broker_sn), sending PUBLISH at QoS 0 to a registered topic id */
  /** coapPort: they are CoAP clients of that UDP port (broker_coap), sending NON PUT requests */
  /** lwm2mPort: they are LwM2M devices of that UDP port (broker_lwm2m), sending notifications */
  /** qos: of the publishers and the subscription (0 unless 1); deliveriesPerMessage: the subscriber in the same worker gets every publisher's message this many times over (a mesh of nodes each with a subscriber counts its own deliveries), the window counts in messages */
  | { kind: 'fan-in', subscriber: boolean, publishers: number[], window?: number, stompPort?: number, snPort?: number, coapPort?: number, lwm2mPort?: number, qos?: 0 | 1, deliveriesPerMessage?: number }
  /**
   * awaitPeer: the other worker's subscribers report progress, and the publisher paces on them too.
   * v5Aliases: the subscribers are MQTT 5 clients with a Topic Alias Maximum and a Maximum Packet Size.
   */
  | { kind: 'fan-out', publisher: boolean, awaitPeer: boolean, subscribers: number, firstId: number, v5Aliases?: boolean }
  /** One persistent-session client; on `go` it sends one SUBSCRIBE with `filters` filters and times the SUBACK. */
  | { kind: 'subscribe-many', filters: number }
  | { kind: 'qos1-pairs', pairs: number[] }
  /** idle: protocolVersion 4 (default) or 5; clean false: persistent sessions; localAddresses: source IPs used in turn (127.0.0.x), so that 100k connections do not run out of ephemeral ports */
  | { kind: 'idle', connections: number, firstId: number, keepalive: number, protocolVersion?: 4 | 5, clean?: boolean, localAddresses?: string[] }
  /**
   * latency: with `probe`, a subscriber on bench/lat/probe and a publisher sending QoS 0 there at `rate` msg/s, each
   * message timed from its write to its delivery; `background` more publishers at `backgroundRate` msg/s each on
   * bench/bg/<n>, delivered to one subscriber on bench/bg/#.
   */
  | { kind: 'latency', probe: boolean, rate: number, background: number, backgroundRate: number }

export type ToWorker =
  | { type: 'setup', port: number, role: Role }
  /** Start the load; count only between warmupMs and warmupMs + measureMs (both 0 for idle). */
  | { type: 'go', warmupMs: number, measureMs: number }
  /** fan-out: the least count received by any subscriber of the other worker; fan-in: what its subscriber received. */
  | { type: 'peer', received: number }
  | { type: 'close' }

export interface WorkerResult {
  /** Messages sent by this worker's publishers inside the measured window. */
  sent: number
  /** Messages (deliveries) received by this worker's subscribers inside the measured window. */
  received: number
  /** fan-in at QoS 1: PUBACKs its publishers received inside the measured window. */
  acked?: number
  /** Length of the measured window as this worker saw it. */
  elapsedMs: number
  /** qos1-pairs: publish → delivery latency of each completed round trip, ms; latency: of each probe message; idle: CONNECT written → CONNACK read of each connection. */
  latenciesMs?: Float64Array
  /** latency: the probe's latencies during the warm-up (a fresh server's first seconds) */
  coldLatenciesMs?: Float64Array
  /** idle: connections that got a CONNACK, and those that did not. */
  connected?: number
  failed?: number
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'progress', received: number }
  | { type: 'result', result: WorkerResult }
  | { type: 'error', message: string }
