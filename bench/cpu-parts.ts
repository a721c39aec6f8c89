// Reads V8 CPU profiles (`node --cpu-prof`, or `BENCH_CPU_PROF=<dir> npm run bench`) and charges their
// samples to the parts of a broker: the engine (Aedes and its router), serialization (mqtt-packet's
// writer), parsing, persistence, plugin hooks, metrics, ACL, the node's stream and socket layers, timers,
// GC. A frame of V8 or Node's C++ (no script URL) is charged to the nearest caller that has one.
// Only the load is counted: the measured window the bench runner wrote beside the profile
// (`<name>.window.json`), else from the first to the last sample that runs the serializer.
// Usage: node dist/bench/cpu-parts.js <profile.cpuprofile>... [--messages N,N,...]
import { existsSync, readFileSync } from 'node:fs'
import { basename } from 'node:path'

interface ProfileNode { id: number, callFrame: { functionName: string, url: string }, children?: number[] }
interface CpuProfile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number }
/** process.hrtime ns, the monotonic clock of the profile's µs timestamps */
interface Window { fromNs: string, toNs: string }

export const CPU_PARTS = ['engine', 'serialization', 'parsing', 'persistence', 'plugin hooks', 'metrics', 'ACL',
  'broker glue', 'listeners', 'socket I/O', 'timers, ticks, promises', 'node other', 'gc', 'program', 'other'] as const
export type CpuPart = typeof CPU_PARTS[number]

const RULES: Array<[RegExp, CpuPart]> = [
  [/\/mqtt-packet\/(writeToStream|generate|numbers)\.js$/, 'serialization'],
  [/\/(mqtt-packet|bl)\//, 'parsing'],
  [/\/(aedes-persistence[^/]*|level|classic-level|abstract-level|level-transcoder|module-error|maybe-combine-errors)\/|\/lib\/engine\/(store|store-index|session-queue|retained|text-store|subscription-writes|backend|session-timers)\.js$/, 'persistence'],
  [/\/(aedes|aedes-unpatched|mqemitter|qlobber|fastparallel|fastfall|fastseries|reusify|aedes-packet|hyperid|retimer|uuid-parse)\//, 'engine'],
  [/\/dist\/lib\/(hooks|plugins|plugin-kit)\//, 'plugin hooks'],
  [/\/dist\/lib\/(metrics|sys|trace)\//, 'metrics'],
  [/\/dist\/lib\/access\//, 'ACL'],
  [/\/dist\/lib\/listeners\//, 'listeners'],
  [/\/dist\/lib\//, 'broker glue'],
  [/^node:(net|internal\/(streams|stream_base_commons|net|buffer)|stream|buffer)/, 'socket I/O'],
  [/^node:internal\/(timers|process\/task_queues|process\/promises)|^node:timers/, 'timers, ticks, promises'],
  [/^node:/, 'node other']
]

function partOf (frame: ProfileNode['callFrame'], parent: CpuPart | null): CpuPart {
  if (frame.functionName === '(garbage collector)') return 'gc'
  if (frame.functionName === '(program)') return 'program'
  if (frame.url === '') return parent ?? 'other'
  for (const [pattern, part] of RULES) if (pattern.test(frame.url)) return part
  return 'other'
}

export interface CpuParts { busyMs: number, windowMs: number, ms: Record<CpuPart, number> }

export function cpuParts (profile: CpuProfile, window?: Window): CpuParts {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const part = new Map<number, CpuPart>()
  const serializes = new Map<number, boolean>()
  const idle = new Set<number>()
  const walk = (node: ProfileNode, parent: CpuPart | null, inSerializer: boolean): void => {
    const p = partOf(node.callFrame, parent)
    const s = inSerializer || p === 'serialization'
    part.set(node.id, p)
    serializes.set(node.id, s)
    if (node.callFrame.functionName === '(idle)') idle.add(node.id)
    for (const child of node.children ?? []) walk(byId.get(child) as ProfileNode, p === 'gc' || p === 'program' ? null : p, s)
  }
  walk(profile.nodes[0], null, false)
  const times: number[] = []
  let t = profile.startTime
  for (const delta of profile.timeDeltas) times.push(t += delta)
  let first = -1
  let last = -1
  const inWindow = window === undefined
    ? (id: number) => serializes.get(id) === true
    : (_id: number, i: number) => times[i] >= Number(BigInt(window.fromNs) / 1000n) && times[i] <= Number(BigInt(window.toNs) / 1000n)
  profile.samples.forEach((id, i) => {
    if (inWindow(id, i)) { if (first < 0) first = i; last = i }
  })
  const ms = Object.fromEntries(CPU_PARTS.map((p) => [p, 0])) as Record<CpuPart, number>
  let busyMs = 0
  for (let i = Math.max(first, 0) + 1; i <= last; i++) {
    const id = profile.samples[i]
    const dt = (times[i] - times[i - 1]) / 1000
    if (idle.has(id) || byId.get(id)?.callFrame.functionName === '(root)') continue
    ms[part.get(id) as CpuPart] += dt
    busyMs += dt
  }
  return { busyMs, windowMs: first < 0 ? 0 : (times[last] - times[first]) / 1000, ms }
}

function main (): void {
  const args = process.argv.slice(2)
  const at = args.indexOf('--messages')
  const messages = at < 0 ? [] : args.splice(at, 2)[1].split(',').map(Number)
  if (args.length === 0) {
    process.stderr.write('usage: cpu-parts <profile.cpuprofile>... [--messages N,N,...]\n')
    process.exit(2)
  }
  const results = args.map((file) => {
    const windowFile = file.replace(/\.cpuprofile$/, '.window.json')
    const window = existsSync(windowFile) ? JSON.parse(readFileSync(windowFile, 'utf8')) as Window : undefined
    return cpuParts(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, window)
  })
  const unit = messages.length === args.length ? 'us/msg' : 'ms'
  const cell = (value: number, i: number): string => unit === 'ms' ? value.toFixed(0) : (value * 1000 / messages[i]).toFixed(2)
  const rows = [['part', ...args.map((f) => basename(f, '.cpuprofile'))]]
  for (const p of CPU_PARTS) rows.push([p, ...results.map((r, i) => `${cell(r.ms[p], i)} (${(100 * r.ms[p] / r.busyMs).toFixed(1)}%)`)])
  rows.push(['busy', ...results.map((r, i) => cell(r.busyMs, i))])
  rows.push(['window ms', ...results.map((r) => r.windowMs.toFixed(0))])
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)))
  process.stdout.write(`CPU by part (${unit}, % of busy)\n`)
  for (const r of rows) process.stdout.write(r.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join('   ') + '\n')
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(basename(process.argv[1]))) main()
