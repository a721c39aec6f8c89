// A soak worker, forked by bench/soak.ts: holds either the subscribers or the
// publishers of the soak (client n subscribes to, or publishes on, `soak/<n>`),
// all MQTT 3.1.1 QoS 1, keepalive 60. Publishers share one pacing timer that
// sends `rate` messages a second over all of them, each payload the message's
// sequence number on its topic; subscribers check the numbers (a gap is a lost
// message, a repeat a duplicate). Counts go to the runner every second.
import { RawClient } from './client.js'
import { inLanes, KeepaliveWheel } from './lanes.js'

export interface SoakRole { kind: 'publishers' | 'subscribers', first: number, count: number, rate: number }
export type ToSoakWorker = { type: 'setup', port: number, role: SoakRole } | { type: 'go' } | { type: 'stop' } | { type: 'close' }
export interface SoakCounts { sent: number, acked: number, received: number, duplicates: number, gaps: number, lostConnections: number }
export type FromSoakWorker = { type: 'ready' } | { type: 'counts', counts: SoakCounts } | { type: 'error', message: string }

const KEEPALIVE_S = 60
const CONNECTS_IN_FLIGHT = 100
const TICK_MS = 10
/** A late timer sends at most this much of the rate at once: the rate asked is not met rather than made up in bursts. */
const MAX_CATCH_UP_S = 0.5

const counts: SoakCounts = { sent: 0, acked: 0, received: 0, duplicates: 0, gaps: 0, lostConnections: 0 }
const clients: RawClient[] = []
let pacing: NodeJS.Timeout | null = null

const post = (msg: FromSoakWorker): void => { process.send?.(msg) }

async function connectAll (port: number, role: SoakRole): Promise<void> {
  const lastSeq = new Uint32Array(role.count)
  const keepalives = new KeepaliveWheel(KEEPALIVE_S)
  await inLanes(role.count, CONNECTS_IN_FLIGHT, async (i) => {
    const n = role.first + i
    if (role.kind === 'subscribers') {
      const client: RawClient = await RawClient.connect({
        port,
        clientId: `soak-sub-${n}`,
        keepalive: KEEPALIVE_S,
        onLost: () => { counts.lostConnections++ },
        onPacket: (p) => {
          if (p.cmd !== 'publish') return
          if (p.messageId !== undefined) client.send({ cmd: 'puback', messageId: p.messageId })
          const seq = (p.payload as Buffer).readUInt32BE(0)
          if (seq <= lastSeq[i]) {
            counts.duplicates++
            return
          }
          counts.gaps += seq - lastSeq[i] - 1
          lastSeq[i] = seq
          counts.received++
        }
      })
      clients[i] = client
      keepalives.add(client)
      await client.subscribe(`soak/${n}`, 1)
    } else {
      clients[i] = await RawClient.connect({
        port,
        clientId: `soak-pub-${n}`,
        keepalive: KEEPALIVE_S,
        onLost: () => { counts.lostConnections++ },
        onPacket: (p) => { if (p.cmd === 'puback') counts.acked++ }
      })
      keepalives.add(clients[i])
    }
  })
}

function startPublishing (role: SoakRole): void {
  const seq = new Uint32Array(role.count)
  let cursor = 0
  let owed = 0
  let last = performance.now()
  pacing = setInterval(() => {
    const now = performance.now()
    owed = Math.min(owed + role.rate * (now - last) / 1000, role.rate * MAX_CATCH_UP_S)
    last = now
    for (; owed >= 1; owed--) {
      const i = cursor
      cursor = (cursor + 1) % role.count
      const payload = Buffer.alloc(16)
      payload.writeUInt32BE(++seq[i], 0)
      clients[i].send({ cmd: 'publish', topic: `soak/${role.first + i}`, payload, qos: 1, messageId: (seq[i] % 65535) + 1, dup: false, retain: false })
      counts.sent++
    }
  }, TICK_MS)
}

process.on('message', (msg: ToSoakWorker) => {
  switch (msg.type) {
    case 'setup':
      connectAll(msg.port, msg.role).then(() => {
        setInterval(() => post({ type: 'counts', counts }), 1000).unref()
        post({ type: 'ready' })
        if (msg.role.kind === 'publishers') process.on('message', (m: ToSoakWorker) => { if (m.type === 'go') startPublishing(msg.role) })
      }, (err: Error) => post({ type: 'error', message: err.message }))
      break
    case 'stop':
      if (pacing !== null) clearInterval(pacing)
      pacing = null
      post({ type: 'counts', counts })
      break
    case 'close':
      for (const c of clients) c.close()
      process.exit(0)
  }
})
process.on('disconnect', () => process.exit(0))
