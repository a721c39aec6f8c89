// The MQTT front-door campaign: batches of cases (mqtt-cases.ts) written
// concurrently to one broker process, then the verdict (target.ts). A failed
// batch is replayed case by case on fresh processes to find the culprit,
// which becomes a corpus entry.
import fc from 'fast-check'
import { fromConnections, toConnections, type MqttEntry } from './corpus.js'
import { mqttCase, type Connection } from './mqtt-cases.js'
import { inPool } from './pool.js'
import { Target, type Verdict } from './target.js'

export interface CampaignOptions {
  seed: number
  /** stop starting batches after this time (epoch ms) */
  until: number
  batchSize: number
  concurrency: number
  rssLimitMiB: number
  /** signatures already known (the corpus's); a finding with one of them is counted, not new */
  known: Set<string>
  log: (line: string) => void
}

export interface Finding<E> { entry: E, isNew: boolean }

export interface MqttReport {
  cases: number
  batches: number
  byPacket: Record<string, number>
  byTransport: Record<string, number>
  byVersion: Record<string, number>
  byKind: Record<string, number>
  maxRssMiB: number
  findings: Array<Finding<MqttEntry>>
}

type Failed = Exclude<Verdict, { ok: true }>

/** One batch's seed: distinct across the runs' seeds, so `--seed 7` is not `--seed 1` shifted by six batches. */
export const batchSeed = (seed: number, batch: number): number => (seed * 100_003 + batch) % 2 ** 31

const bump = (counts: Record<string, number>, key: string | number): void => { counts[key] = (counts[key] ?? 0) + 1 }

function entryOf (connections: Connection[], verdict: Failed, seed: number): MqttEntry {
  return { kind: 'mqtt', what: verdict.what, signature: verdict.signature, found: new Date().toISOString().slice(0, 10), note: `seed ${seed}; ${verdict.detail.split('\n').slice(0, 12).join(' | ')}`.slice(0, 1500), connections: fromConnections(connections) }
}

/** Replays the batch one connection at a time, each on a broker that passed so far; the ones after which it fails are the culprits. */
async function triage (connections: Connection[], first: Failed, rssLimitMiB: number): Promise<Array<{ connections: Connection[], verdict: Failed }>> {
  // memory grows with the whole batch, not with one case of it
  if (first.what === 'rss') return [{ connections, verdict: first }]
  const culprits: Array<{ connections: Connection[], verdict: Failed }> = []
  let target = await Target.start({ rssLimitMiB })
  try {
    for (const connection of connections) {
      await target.send(connection)
      const verdict = await target.check()
      if (verdict.ok) continue
      culprits.push({ connections: [connection], verdict })
      await target.stop()
      target = await Target.start({ rssLimitMiB })
    }
  } finally {
    await target.stop()
  }
  // same signature, so a bug already known is not written again as a whole batch
  if (culprits.length === 0) culprits.push({ connections, verdict: { ...first, detail: `only with the whole batch (not one case alone); ${first.detail}` } })
  return culprits
}

export async function mqttCampaign (options: CampaignOptions): Promise<MqttReport> {
  const report: MqttReport = { cases: 0, batches: 0, byPacket: {}, byTransport: {}, byVersion: {}, byKind: {}, maxRssMiB: 0, findings: [] }
  let target = await Target.start({ rssLimitMiB: options.rssLimitMiB })
  try {
    for (let batch = 0; Date.now() < options.until; batch++) {
      const seed = batchSeed(options.seed, batch)
      const cases = fc.sample(mqttCase, { seed, numRuns: options.batchSize })
      await inPool(cases, options.concurrency, async (c) => await target.send(c.connection))
      for (const c of cases) {
        for (const name of new Set(c.names)) bump(report.byPacket, name)
        bump(report.byTransport, c.connection.transport)
        bump(report.byVersion, c.version === 5 ? 'v5' : 'v3.1.1')
        bump(report.byKind, c.kind)
      }
      report.cases += cases.length
      report.batches++
      const verdict = await target.check()
      if (verdict.ok) {
        report.maxRssMiB = Math.max(report.maxRssMiB, verdict.rssMiB)
        continue
      }
      options.log(`mqtt batch seed ${seed}: ${verdict.signature}; replaying its ${cases.length} cases one by one`)
      await target.stop()
      for (const culprit of await triage(cases.map((c) => c.connection), verdict, options.rssLimitMiB)) {
        const isNew = !options.known.has(culprit.verdict.signature)
        options.known.add(culprit.verdict.signature)
        report.findings.push({ entry: entryOf(culprit.connections, culprit.verdict, seed), isNew })
        options.log(`  ${isNew ? 'NEW' : 'known'}: ${culprit.verdict.signature}`)
      }
      target = await Target.start({ rssLimitMiB: options.rssLimitMiB })
    }
  } finally {
    await target.stop()
  }
  return report
}

/** Replays each entry on one broker (a fresh one after each failure); the verdict of each. */
export async function replayMqtt (entries: MqttEntry[], rssLimitMiB: number): Promise<Verdict[]> {
  const verdicts: Verdict[] = []
  let target = await Target.start({ rssLimitMiB })
  try {
    for (const entry of entries) {
      for (const connection of toConnections(entry)) await target.send(connection)
      const verdict = await target.check()
      verdicts.push(verdict)
      if (!verdict.ok) {
        await target.stop()
        target = await Target.start({ rssLimitMiB })
      }
    }
  } finally {
    await target.stop()
  }
  return verdicts
}

/** Splits a byte stream at the packets' fixed headers (the last one may be cut short). */
export function framePackets (stream: Buffer): Buffer[] {
  const out: Buffer[] = []
  let at = 0
  while (at < stream.length) {
    let length = 0
    let i = at + 1
    for (let shift = 0; i < stream.length && shift < 28; shift += 7) {
      length += (stream[i] & 0x7f) * 2 ** shift
      if ((stream[i++] & 0x80) === 0) break
    }
    const end = Math.min(stream.length, i + length)
    out.push(stream.subarray(at, end))
    at = end
  }
  return out
}

/**
 * Drops the packets of a one-connection culprit that the failure does not
 * need (the same signature without them), each tried on a fresh process; the
 * corpus keeps the short form.
 */
export async function minimize (connection: Connection, signature: string, rssLimitMiB: number): Promise<Connection> {
  let packets = framePackets(Buffer.concat(connection.chunks))
  for (let i = packets.length - 1; i >= 0 && packets.length > 1; i--) {
    const without = [...packets.slice(0, i), ...packets.slice(i + 1)]
    const target = await Target.start({ rssLimitMiB })
    try {
      await target.send({ transport: connection.transport, chunks: [Buffer.concat(without)] })
      const verdict = await target.check()
      if (!verdict.ok && verdict.signature === signature) packets = without
    } finally {
      await target.stop()
    }
  }
  return { transport: connection.transport, chunks: [Buffer.concat(packets)] }
}
