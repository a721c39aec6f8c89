// Client worker, forked by the runner: runs the raw clients of one role of a
// scenario and reports counts and latencies over IPC (see protocol.ts).
import { publishBatch, publishFrameId, pubackBatch, qos1Batches, RawClient, type ClientOptions } from './client.js'
import type { FromWorker, Role, ToWorker, WorkerResult } from './protocol.js'
import { SnPublisher } from './sn-client.js'
import { Lwm2mPublisher } from './lwm2m-client.js'
import { sendBatch, StompPublisher } from './stomp-client.js'
import { CoapPublisher, putBatch } from './coap-client.js'
import { inLanes, KeepaliveWheel } from './lanes.js'

const PAYLOAD = Buffer.alloc(16, 0x61)
/** Publishes per socket.write; writing each 30-byte packet alone would cost the client a syscall per message. */
const FAN_IN_BATCH = 50
/** fan-in with a window: how often the subscriber reports its count, and publishers waiting on the window retry. */
const FAN_IN_PROGRESS_MS = 5
/** fan-in with a window: no delivery for this long while the window is full counts the outstanding messages as lost. */
const FAN_IN_STALL_MS = 500
const FAN_OUT_BURST = 50
/** fan-out: most messages the publisher may be ahead of the slowest subscriber. */
const FAN_OUT_WINDOW = 500
/** fan-out with v5Aliases: what the MQTT 5 subscribers announce in CONNECT. */
const V5_ALIAS_PROPERTIES = { topicAliasMaximum: 10, maximumPacketSize: 65536 }
/** subscribe-many: the SUBACK may take this long. */
const SUBSCRIBE_MANY_TIMEOUT_MS = 600_000
/** Most socket writes in one event-loop turn, so timers and IPC still run. */
const WRITES_PER_TURN = 32
const MAX_LATENCY_SAMPLES = 2_000_000
/** idle: connects in flight per worker; more would overflow the server's accept backlog. */
const IDLE_CONCURRENCY = 100

interface Counts { sent: number, received: number, acked?: number }

interface Load {
  run: (warmupMs: number, measureMs: number) => Promise<WorkerResult>
  peer?: (received: number) => void
}

const clients: Array<RawClient | StompPublisher | SnPublisher | CoapPublisher | Lwm2mPublisher> = []
let load: Load | null = null
/** the idle connections' PINGREQs, one wheel per idle load */
const keepalives: KeepaliveWheel[] = []
let failed = false

function post (msg: FromWorker): void {
  process.send?.(msg)
}

function fail (err: unknown): void {
  if (failed) return
  failed = true
  const message = err instanceof Error ? err.message : String(err)
  process.send?.({ type: 'error', message } satisfies FromWorker, () => process.exit(1))
}

function closeAll (): void {
  for (const w of keepalives.splice(0)) w.stop()
  for (const c of clients) c.close()
  clients.length = 0
}

async function connect (port: number, clientId: string, extra: Partial<ClientOptions> = {}): Promise<RawClient> {
  const client = await RawClient.connect({ port, clientId, onLost: fail, ...extra })
  clients.push(client)
  return client
}

async function connectStomp (port: number): Promise<StompPublisher> {
  // the gateway's default user (broker_stomp's stomp.default_user)
  const client = await StompPublisher.connect(port, 'guest', 'guest', fail)
  clients.push(client)
  return client
}

async function connectCoap (port: number, clientId: string, topic: string): Promise<CoapPublisher> {
  const client = await CoapPublisher.connect(port, clientId, topic, PAYLOAD)
  clients.push(client)
  return client
}

/** Snapshots the counters at the warm-up mark and at the end, then calls stop(). */
async function measure (counts: Counts, warmupMs: number, measureMs: number, stop: () => void, onMark?: () => void): Promise<WorkerResult> {
  return await new Promise((resolve) => {
    let s0 = 0
    let r0 = 0
    let a0 = 0
    let t0 = performance.now()
    setTimeout(() => {
      s0 = counts.sent
      r0 = counts.received
      a0 = counts.acked ?? 0
      t0 = performance.now()
      onMark?.()
    }, warmupMs)
    setTimeout(() => {
      stop()
      resolve({ sent: counts.sent - s0, received: counts.received - r0, ...(counts.acked === undefined ? {} : { acked: counts.acked - a0 }), elapsedMs: performance.now() - t0 })
    }, warmupMs + measureMs)
  })
}

async function fanIn (port: number, role: Extract<Role, { kind: 'fan-in' }>): Promise<Load> {
  const counts: Counts & { acked: number } = { sent: 0, received: 0, acked: 0 }
  const qos = role.qos ?? 0
  if (role.subscriber) {
    // at QoS 1 the PUBACKs of one read go back in one write
    const acks: number[] = []
    let sub: RawClient | null = null
    sub = await connect(port, `bench-fi-sub-${process.pid}`, {
      onPublishFrame: (frame) => {
        counts.received++
        const id = publishFrameId(frame)
        if (id !== undefined) acks.push(id)
      },
      onChunk: () => {
        if (acks.length > 0) sub?.write(pubackBatch(acks.splice(0)))
      }
    })
    await sub.subscribe('bench/in/#', qos)
  }
  const onPuback = (p: { cmd: string }): void => { if (p.cmd === 'puback') counts.acked++ }
  const { stompPort, snPort, coapPort, lwm2mPort } = role
  const pubs = await Promise.all(role.publishers.map(async (n) => {
    if (stompPort !== undefined) return { client: await connectStomp(stompPort), batch: sendBatch(`bench/in/${n}`, PAYLOAD, FAN_IN_BATCH) }
    if (snPort !== undefined) {
      const client = await SnPublisher.connect(snPort, `bench-sn-pub-${n}-${process.pid}`, `bench/in/${n}`, fail)
      clients.push(client)
      return { client, batch: client.batch(PAYLOAD, FAN_IN_BATCH) }
    }
    if (coapPort !== undefined) {
      const id = `bench-fi-pub-${n}-${process.pid}`
      return { client: await connectCoap(coapPort, id, `bench/in/${n}`), batch: putBatch(id, `bench/in/${n}`, PAYLOAD, FAN_IN_BATCH) }
    }
    if (lwm2mPort !== undefined) {
      // a device whose notifications (FAN_IN_BATCH a write) the gateway publishes (its mountpoint under bench/in/)
      const client = await Lwm2mPublisher.connect(lwm2mPort, `bench-ep-${n}-${process.pid}`, FAN_IN_BATCH, fail)
      clients.push(client)
      return { client, batch: Buffer.alloc(0) }
    }
    if (qos === 1) return { client: await connect(port, `bench-fi-pub-${n}-${process.pid}`, { onPacket: onPuback }), batch: qos1Batches(`bench/in/${n}`, PAYLOAD, FAN_IN_BATCH) }
    return { client: await connect(port, `bench-fi-pub-${n}-${process.pid}`), batch: publishBatch(`bench/in/${n}`, PAYLOAD, FAN_IN_BATCH) }
  }))
  const window = role.window ?? Infinity
  let peerReceived = 0
  /** Messages given up on: QoS 0 may be dropped, and the window must not wait for them forever. */
  let lost = 0
  let lastProgressAt = performance.now()
  const perMessage = role.deliveriesPerMessage ?? 1
  const received = (): number => role.subscriber ? counts.received / perMessage : peerReceived
  // QoS 1: a message is outstanding until it is both delivered and acknowledged, and none is given up on (else a
  // backlog left at the warm-up mark is acknowledged inside the measured window: acked/s above sent/s)
  const outstanding = (): number => qos === 1 ? Math.max(counts.sent - received(), counts.sent - counts.acked) : counts.sent - lost - received()
  const open = (): boolean => {
    if (outstanding() < window) return true
    if (qos === 1) return false
    if (performance.now() - lastProgressAt > FAN_IN_STALL_MS) {
      lost = counts.sent - received()
      lastProgressAt = performance.now()
      return true
    }
    return false
  }
  const waiting: Array<() => void> = []
  const wake = (): void => {
    for (const resume of waiting.splice(0)) resume()
  }
  let running = false
  const pump = (client: RawClient | StompPublisher | SnPublisher | CoapPublisher | Lwm2mPublisher, next: Buffer | (() => Buffer)): void => {
    for (let i = 0; i < WRITES_PER_TURN && running; i++) {
      if (!open()) {
        waiting.push(() => pump(client, next))
        return
      }
      counts.sent += FAN_IN_BATCH
      if (!client.write(typeof next === 'function' ? next() : next)) {
        // net, dgram or a UDP publisher's own: each an EventEmitter that says 'drain'
        const socket: NodeJS.EventEmitter = client.socket
        socket.once('drain', () => pump(client, next))
        return
      }
    }
    if (running) setImmediate(() => pump(client, next))
  }
  return {
    peer: (n) => {
      if (n !== peerReceived) lastProgressAt = performance.now()
      peerReceived = n
      wake()
    },
    run: async (warmupMs, measureMs) => {
      running = true
      const timers: NodeJS.Timeout[] = []
      if (role.window !== undefined) {
        // The subscriber reports to the other worker's publishers; publishers waiting on the window retry.
        if (role.subscriber && pubs.length === 0) timers.push(setInterval(() => post({ type: 'progress', received: counts.received }), FAN_IN_PROGRESS_MS))
        let seen = counts.received
        timers.push(setInterval(() => {
          if (counts.received !== seen) lastProgressAt = performance.now()
          seen = counts.received
          wake()
        }, FAN_IN_PROGRESS_MS))
      }
      for (const p of pubs) pump(p.client, p.batch)
      return await measure(counts, warmupMs, measureMs, () => {
        running = false
        for (const t of timers) clearInterval(t)
        wake()
      })
    }
  }
}

async function fanOut (port: number, role: Extract<Role, { kind: 'fan-out' }>): Promise<Load> {
  const counts: Counts = { sent: 0, received: 0 }
  const received = new Array<number>(role.subscribers).fill(0)
  let running = false
  let peerReceived = role.awaitPeer ? 0 : Infinity
  let pumpQueued = false
  let publish: { client: RawClient, burst: Buffer } | null = null
  const schedulePump = (): void => {
    if (!pumpQueued && running && publish !== null) {
      pumpQueued = true
      setImmediate(pump)
    }
  }
  await Promise.all(received.map(async (_, i) => {
    const sub = await connect(port, `bench-fo-sub-${role.firstId + i}-${process.pid}`, {
      ...(role.v5Aliases === true ? { protocolVersion: 5, properties: V5_ALIAS_PROPERTIES } : {}),
      onPublishFrame: () => { received[i]++; counts.received++ },
      onChunk: schedulePump
    })
    await sub.subscribe('bench/out', 0)
  }))
  const minReceived = (): number => Math.min(peerReceived, ...received)
  if (role.publisher) {
    publish = { client: await connect(port, `bench-fo-pub-${process.pid}`), burst: publishBatch('bench/out', PAYLOAD, FAN_OUT_BURST) }
  }
  let waitingDrain = false
  function pump (): void {
    pumpQueued = false
    if (publish === null || waitingDrain) return
    for (let i = 0; i < WRITES_PER_TURN && running && counts.sent - minReceived() < FAN_OUT_WINDOW; i++) {
      counts.sent += FAN_OUT_BURST
      if (!publish.client.write(publish.burst)) {
        waitingDrain = true
        publish.client.socket.once('drain', () => { waitingDrain = false; schedulePump() })
        return
      }
    }
  }
  return {
    peer: (n) => { peerReceived = n; schedulePump() },
    run: async (warmupMs, measureMs) => {
      running = true
      // Subscribers without the publisher report their slowest member so the publisher can pace on it.
      const progress = publish === null ? setInterval(() => post({ type: 'progress', received: Math.min(...received) }), 20) : null
      // In case no subscriber data and no peer report arrive to wake the publisher.
      const nudge = setInterval(schedulePump, 5)
      schedulePump()
      return await measure(counts, warmupMs, measureMs, () => {
        running = false
        clearInterval(nudge)
        if (progress !== null) clearInterval(progress)
      })
    }
  }
}

async function qos1Pairs (port: number, role: Extract<Role, { kind: 'qos1-pairs' }>): Promise<Load> {
  const counts: Counts = { sent: 0, received: 0 }
  const latencies: number[] = []
  let running = false
  let recording = false
  const pairs = await Promise.all(role.pairs.map(async (n) => {
    const topic = `bench/pair/${n}`
    const payload = Buffer.alloc(16)
    // One message in flight per pair: the round trip ends when both the PUBACK and the delivery are in.
    const s = { seq: 0, messageId: 0, t0: 0, latency: 0, acked: true, delivered: true }
    let sub: RawClient | null = null
    let pub: RawClient | null = null
    const next = (): void => {
      s.seq++
      s.messageId = (s.seq % 65535) + 1
      s.acked = false
      s.delivered = false
      payload.writeUInt32BE(s.seq >>> 0, 0)
      counts.sent++
      s.t0 = performance.now()
      pub?.send({ cmd: 'publish', topic, payload, qos: 1, messageId: s.messageId, dup: false, retain: false })
    }
    const settle = (): void => {
      if (!s.acked || !s.delivered) return
      counts.received++
      if (recording && latencies.length < MAX_LATENCY_SAMPLES) latencies.push(s.latency)
      if (running) next()
    }
    sub = await connect(port, `bench-q1-sub-${n}-${process.pid}`, {
      onPacket: (p) => {
        if (p.cmd !== 'publish') return
        if (p.messageId !== undefined) sub?.send({ cmd: 'puback', messageId: p.messageId })
        if (!s.delivered && Buffer.isBuffer(p.payload) && p.payload.readUInt32BE(0) === s.seq >>> 0) {
          s.delivered = true
          s.latency = performance.now() - s.t0
          settle()
        }
      }
    })
    await sub.subscribe(topic, 1)
    pub = await connect(port, `bench-q1-pub-${n}-${process.pid}`, {
      onPacket: (p) => {
        if (p.cmd === 'puback' && !s.acked && p.messageId === s.messageId) {
          s.acked = true
          settle()
        }
      }
    })
    return next
  }))
  return {
    run: async (warmupMs, measureMs) => {
      running = true
      for (const next of pairs) next()
      const result = await measure(counts, warmupMs, measureMs, () => { running = false; recording = false }, () => { recording = true })
      return { ...result, latenciesMs: Float64Array.from(latencies) }
    }
  }
}

async function subscribeMany (port: number, role: Extract<Role, { kind: 'subscribe-many' }>): Promise<Load> {
  const client = await connect(port, `bench-sm-${process.pid}`, { clean: false })
  const filters = Array.from({ length: role.filters }, (_, i) => `bench/device/${i}/+/state`)
  return {
    run: async () => {
      const t0 = performance.now()
      await client.subscribeAll(filters, 1, SUBSCRIBE_MANY_TIMEOUT_MS)
      return { sent: 0, received: role.filters, elapsedMs: performance.now() - t0 }
    }
  }
}

function idle (port: number, role: Extract<Role, { kind: 'idle' }>): Load {
  return {
    run: async () => {
      const t0 = performance.now()
      let connected = 0
      let refused = 0
      const latencies = new Float64Array(role.connections)
      // PINGREQs from each connect on, so that the server keeps the first connections however long connecting and measuring take
      const wheel = new KeepaliveWheel(role.keepalive)
      keepalives.push(wheel)
      await inLanes(role.connections, IDLE_CONCURRENCY, async (index) => {
        const id = role.firstId + index
        try {
          const localAddress = role.localAddresses?.[id % role.localAddresses.length]
          const started = performance.now()
          wheel.add(await connect(port, `bench-idle-${id}-${process.pid}`, { keepalive: role.keepalive, protocolVersion: role.protocolVersion, clean: role.clean, localAddress }))
          latencies[connected++] = performance.now() - started
        } catch {
          refused++
        }
      })
      return { sent: 0, received: 0, elapsedMs: performance.now() - t0, connected, failed: refused, latenciesMs: latencies.slice(0, connected).sort() }
    }
  }
}

/** Background publishers each send one message per this many ms slices of their period (spreads them over time). */
const LATENCY_SLICE_MS = 5
/** latency: a probe behind by more than this many messages (the client starved) skips them rather than bursting. */
const LATENCY_MAX_BEHIND = 20

async function latency (port: number, role: Extract<Role, { kind: 'latency' }>): Promise<Load> {
  const counts: Counts = { sent: 0, received: 0 }
  const latencies: number[] = []
  /** the probe's latencies during the warm-up */
  const cold: number[] = []
  let recording = false
  let running = false
  const payload = Buffer.alloc(16)
  const probeSub = role.probe
    ? await connect(port, `bench-lat-sub-${process.pid}`, {
      // the payload (the frame's last 16 bytes) starts with the send time
      onPublishFrame: (frame) => {
        counts.received++
        const latency = performance.now() - frame.readDoubleLE(frame.length - 16)
        if (recording) {
          if (latencies.length < MAX_LATENCY_SAMPLES) latencies.push(latency)
        } else if (running && cold.length < MAX_LATENCY_SAMPLES) cold.push(latency)
      }
    })
    : null
  await probeSub?.subscribe('bench/lat/probe', 0)
  const probe = role.probe ? await connect(port, `bench-lat-pub-${process.pid}`) : null
  if (role.background > 0) {
    const sink = await connect(port, `bench-bg-sub-${process.pid}`, { onPublishFrame: () => {} })
    await sink.subscribe('bench/bg/#', 0)
  }
  const background = await Promise.all(range(role.background).map(async (n) => await connect(port, `bench-bg-pub-${n}-${process.pid}`)))
  const publish = (client: RawClient, topic: string): void => {
    payload.writeDoubleLE(performance.now(), 0)
    client.send({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false })
  }
  return {
    run: async (warmupMs, measureMs) => {
      running = true
      const t0 = performance.now()
      const tick = (): void => {
        if (!running || probe === null) return
        const due = Math.floor((performance.now() - t0) * role.rate / 1000)
        if (due - counts.sent > LATENCY_MAX_BEHIND) counts.sent = due - 1
        for (; counts.sent < due; counts.sent++) publish(probe, 'bench/lat/probe')
        setTimeout(tick, 1)
      }
      tick()
      // each background publisher sends once per period, a share of them every slice
      const slices = Math.max(1, Math.round(1000 / role.backgroundRate / LATENCY_SLICE_MS))
      let slice = 0
      const timer = role.background > 0
        ? setInterval(() => {
          for (let n = slice++ % slices; n < background.length; n += slices) publish(background[n], `bench/bg/${n}`)
        }, LATENCY_SLICE_MS)
        : undefined
      const result = await measure(counts, warmupMs, measureMs, () => { running = false; recording = false; clearInterval(timer) }, () => { recording = true })
      return { ...result, latenciesMs: Float64Array.from(latencies).sort(), coldLatenciesMs: Float64Array.from(cold).sort() }
    }
  }
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i)

async function setup (port: number, role: Role): Promise<Load> {
  switch (role.kind) {
    case 'fan-in': return await fanIn(port, role)
    case 'fan-out': return await fanOut(port, role)
    case 'qos1-pairs': return await qos1Pairs(port, role)
    case 'idle': return idle(port, role)
    case 'subscribe-many': return await subscribeMany(port, role)
    case 'latency': return await latency(port, role)
  }
}

async function handle (msg: ToWorker): Promise<void> {
  switch (msg.type) {
    case 'setup':
      load = await setup(msg.port, msg.role)
      post({ type: 'ready' })
      break
    case 'go': {
      if (load === null) throw new Error('go before setup')
      const result = await load.run(msg.warmupMs, msg.measureMs)
      post({ type: 'result', result })
      break
    }
    case 'peer':
      load?.peer?.(msg.received)
      break
    case 'close':
      closeAll()
      process.exit(0)
  }
}

process.on('message', (msg: ToWorker) => { handle(msg).catch(fail) })
// The runner is gone (ended or crashed): never outlive it.
process.on('disconnect', () => {
  closeAll()
  process.exit(0)
})
