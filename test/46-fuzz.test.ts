// CI's fuzz (issue 14, "Fuzzing that stays"): against a real broker process,
// every corpus entry (fuzz/corpus/) is replayed, then a seeded, bounded
// campaign (~100 s) writes generated and mutated MQTT packets (all 15 types,
// v3.1.1 and v5, over TCP and WebSocket) and management API requests (every
// row of the v3 and v2 route tables). After every batch the process must be
// alive, answer a fresh client and stay under the memory bound; no API answer
// may be an undocumented 500. `npm run fuzz -- --minutes N` runs longer.
import t from 'tap'
import { PACKET_NAMES } from '../fuzz/mqtt-packets.js'
import { fuzz, summary } from '../fuzz/fuzz.js'

const SEED = 46
const SECONDS = 100

// the campaign's time plus the corpus replay and the process starts, on a loaded box
t.setTimeout(330_000)

const report = await fuzz({ seed: SEED, seconds: SECONDS, rssLimitMiB: 512, log: (line) => t.comment(line) })
t.comment(summary(report, []))

t.test('every corpus entry is replayed, and the broker survives each', async (t) => {
  t.ok(report.replay.length > 0, 'the corpus is not empty')
  for (const r of report.replay) {
    const fixedBy = r.entry.fixedBy === undefined ? '' : ` (fixed by ${r.entry.fixedBy})`
    t.equal(r.failure, undefined, `${r.file}: ${r.entry.signature}${fixedBy}`)
  }
})

t.test('the seeded MQTT campaign covers every packet type, both versions and both transports', async (t) => {
  t.ok(report.mqtt.cases >= 400, `${report.mqtt.cases} cases ran`)
  t.same(Object.keys(report.mqtt.byPacket).sort(), [...PACKET_NAMES].sort(), 'every packet type (and the reserved one) was sent')
  t.same(Object.keys(report.mqtt.byTransport).sort(), ['tcp', 'ws'])
  t.same(Object.keys(report.mqtt.byVersion).sort(), ['v3.1.1', 'v5'])
  t.ok(report.mqtt.maxRssMiB > 0 && report.mqtt.maxRssMiB < 512, `resident memory stayed bounded (max ${report.mqtt.maxRssMiB.toFixed(0)} MiB)`)
})

t.test('the seeded API campaign reaches the route tables', async (t) => {
  t.ok(report.api.requests >= 100, `${report.api.requests} requests sent`)
  t.ok(Object.keys(report.api.byRoute).length >= 60, `${Object.keys(report.api.byRoute).length} routes reached`)
})

t.test('the campaign found no crash, hang, memory blow-up or undocumented 500', async (t) => {
  const distinct = [...new Set(report.findings.map((f) => f.entry.signature))]
  t.same(distinct, [], 'findings (run `npm run fuzz -- --seed 46` to write them to the corpus)')
})
