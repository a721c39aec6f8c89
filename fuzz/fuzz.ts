// One fuzz session: the corpus replayed, then the MQTT campaign and the API
// campaign sharing the time. Used by `npm run fuzz` (run.ts) and by CI
// (test/46-fuzz.test.ts).
import { apiCampaign, replayApi, type ApiReport } from './api-campaign.js'
import { loadCorpus, type ApiEntry, type Entry, type MqttEntry } from './corpus.js'
import { mqttCampaign, replayMqtt, type Finding, type MqttReport } from './mqtt-campaign.js'

export interface FuzzOptions {
  seed: number
  /** the campaigns' time: MQTT two thirds, then the API one third */
  seconds: number
  rssLimitMiB: number
  log: (line: string) => void
}

export interface ReplayResult { file: string, entry: Entry, failure?: string }

export interface FuzzReport { replay: ReplayResult[], mqtt: MqttReport, api: ApiReport, findings: Array<Finding<Entry>> }

/** Replays every corpus entry; `failure` is set for the ones that still break the broker. */
export async function replayCorpus (rssLimitMiB: number): Promise<ReplayResult[]> {
  const all = loadCorpus()
  const mqtt = all.filter((e): e is { file: string, entry: MqttEntry } => e.entry.kind === 'mqtt')
  const api = all.filter((e): e is { file: string, entry: ApiEntry } => e.entry.kind === 'api')
  const mqttVerdicts = await replayMqtt(mqtt.map((e) => e.entry), rssLimitMiB)
  const apiResults = await replayApi(api.map((e) => e.entry), rssLimitMiB)
  return [
    ...mqtt.map((e, i) => { const v = mqttVerdicts[i]; return { ...e, failure: v.ok ? undefined : v.signature } }),
    ...api.map((e, i) => ({ ...e, failure: apiResults[i] }))
  ]
}

export async function fuzz (options: FuzzOptions): Promise<FuzzReport> {
  const replay = await replayCorpus(options.rssLimitMiB)
  for (const r of replay) options.log(`corpus ${r.file}: ${r.failure === undefined ? 'passes' : `FAILS (${r.failure})${r.entry.fixedBy === undefined ? '' : `, fixed by ${r.entry.fixedBy}`}`}`)
  const known = new Set(loadCorpus().map((e) => e.entry.signature))
  const start = Date.now()
  const common = { seed: options.seed, rssLimitMiB: options.rssLimitMiB, known, log: options.log }
  const mqtt = await mqttCampaign({ ...common, until: start + options.seconds * 1000 * 2 / 3, batchSize: 40, concurrency: 8 })
  // its own third, even when replaying a failed MQTT batch took longer
  const api = await apiCampaign({ ...common, until: Date.now() + options.seconds * 1000 / 3, batchSize: 60, concurrency: 4 })
  return { replay, mqtt, api, findings: [...mqtt.findings, ...api.findings] }
}

/** The summary `npm run fuzz` prints. */
export function summary (report: FuzzReport, written: string[]): string {
  const counts = (c: Record<string, number>): string => Object.entries(c).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${v}`).join(', ')
  const distinct = new Map<string, Finding<Entry>>()
  for (const f of report.findings) if (!distinct.has(f.entry.signature)) distinct.set(f.entry.signature, f)
  return [
    `corpus: ${report.replay.length} entries replayed, ${report.replay.filter((r) => r.failure !== undefined).length} still fail`,
    `mqtt: ${report.mqtt.cases} cases in ${report.mqtt.batches} batches (max RSS ${report.mqtt.maxRssMiB.toFixed(0)} MiB)`,
    `  by packet type: ${counts(report.mqtt.byPacket)}`,
    `  by transport: ${counts(report.mqtt.byTransport)}; by version: ${counts(report.mqtt.byVersion)}; by kind: ${counts(report.mqtt.byKind)}`,
    `api: ${report.api.requests} requests in ${report.api.batches} batches over ${Object.keys(report.api.byRoute).length} routes (${report.api.skipped} skipped as harness-breaking)`,
    `  by status: ${counts(report.api.byStatus)}`,
    `found: ${report.findings.length} failing cases, ${distinct.size} distinct (${[...distinct.values()].filter((f) => f.isNew).length} new)`,
    ...[...distinct.values()].map((f) => `  ${f.isNew ? 'NEW  ' : 'known'} ${f.entry.signature}`),
    `new corpus entries written: ${written.length === 0 ? 'none' : written.join(', ')}`
  ].join('\n')
}
