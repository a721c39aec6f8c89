// `npm run fuzz -- [--minutes N] [--seed S] [--rss-mb M] [--no-write]`: replays
// the corpus, fuzzes the MQTT front door and the management API of a real
// broker process for N minutes (default 2), writes each new finding to
// fuzz/corpus/ (an MQTT one without the packets it does not need) and prints
// a summary. Exit code 1 when something new was found.
import { parseArgs } from 'node:util'
import { fromConnections, toConnections, writeEntry } from './corpus.js'
import { fuzz, summary } from './fuzz.js'
import { minimize } from './mqtt-campaign.js'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '2' },
    seed: { type: 'string' },
    'rss-mb': { type: 'string', default: '512' },
    'no-write': { type: 'boolean', default: false }
  }
})
const minutes = Number(values.minutes)
const seed = values.seed === undefined ? Date.now() % 1_000_000_000 : Number(values.seed)
const rssLimitMiB = Number(values['rss-mb'])
for (const [name, n] of [['--minutes', minutes], ['--seed', seed], ['--rss-mb', rssLimitMiB]] as const) {
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}: expected a number, got ${String(n)}`)
}

console.log(`fuzzing for ${minutes} min, seed ${seed}`)
const report = await fuzz({ seed, seconds: minutes * 60, rssLimitMiB, log: (line) => console.log(line) })
// one entry per new bug: the first case that showed it
const fresh = [...new Map(report.findings.filter((f) => f.isNew).map((f) => [f.entry.signature, f.entry])).values()]
const written: string[] = []
for (const entry of values['no-write'] ? [] : fresh) {
  if (entry.kind === 'mqtt' && entry.connections.length === 1 && entry.what !== 'rss') {
    console.log(`minimizing ${entry.signature}`)
    entry.connections = fromConnections([await minimize(toConnections(entry)[0], entry.signature, rssLimitMiB)])
  }
  written.push(writeEntry(entry))
}
console.log('\n' + summary(report, written))
process.exitCode = fresh.length > 0 ? 1 : 0
