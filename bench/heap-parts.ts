// Reads a V8 heap snapshot (.heapsnapshot, as v8.writeHeapSnapshot writes it)
// and sums the bytes of its objects by the part of an MQTT connection that
// owns them: the engine's client object, the packet parser, the socket,
// timers, and so on. An object of a class the table below names is that
// part's; any other object (arrays, closures, strings, plain objects) is
// charged to the nearest owner that is classified, following the first strong
// reference that holds it. Snapshots of hundreds of megabytes are read as a
// Buffer and the number arrays scanned in place (one JSON string that size
// would pass V8's string limit).
import { readFileSync } from 'node:fs'

/** The parts of the table, in the order they are printed. */
export const PARTS = [
  'engine client object',
  'parser + buffer list',
  'stream wrappers',
  'timers (keepalive)',
  'session / subscriptions',
  'metrics, ACL cache, conn info',
  'socket (JS side)',
  'other'
] as const
export type Part = typeof PARTS[number]

/** Classes (constructor names, or closure names) that belong to a part wherever they are held. */
const CLASS_PARTS: Record<string, Part> = {
  Client: 'engine client object',
  OutboundWindow: 'engine client object',
  QoSPacket: 'engine client object',
  nextBatch: 'engine client object',
  deliverQoS0: 'engine client object',
  deliverQoS: 'engine client object',
  enqueue: 'engine client object',
  dequeue: 'engine client object',
  Parser: 'parser + buffer list',
  BufferListStream: 'parser + buffer list',
  Duplexify: 'stream wrappers',
  Pumpify: 'stream wrappers',
  DestroyableTransform: 'stream wrappers',
  Transform: 'stream wrappers',
  PassThrough: 'stream wrappers',
  Timeout: 'timers (keepalive)',
  Retimer: 'timers (keepalive)',
  TimersList: 'timers (keepalive)',
  Socket: 'socket (JS side)',
  TCP: 'socket (JS side)',
  ReadableState: 'socket (JS side)',
  WritableState: 'socket (JS side)',
  TLSSocket: 'socket (JS side)',
  TLSWrap: 'socket (JS side)'
}

/** Class-name prefixes of the broker's own per-client state. */
const PREFIX_PARTS: Array<[RegExp, Part]> = [
  [/^(Session|ClientSession|StoredSession|Subscription)/, 'session / subscriptions'],
  [/^(Metric|Counter|Gauge|Acl|ConnInfo|Connection(Info|Record)|Peer)/, 'metrics, ACL cache, conn info']
]

interface Snapshot {
  nodeFieldCount: number
  edgeFieldCount: number
  nodes: Float64Array
  edges: Float64Array
  strings: string[]
  nodeTypes: string[]
  edgeTypes: string[]
}

/** Finds `"<key>":[` in the buffer after `from` and parses the number array that follows. */
function numberArray (buf: Buffer, key: string, from = 0): { values: Float64Array, end: number } {
  const start = buf.indexOf(`"${key}":[`, from)
  if (start < 0) throw new Error(`heap snapshot: no ${key} array`)
  let i = start + key.length + 4
  const out: number[] = []
  let value = 0
  let inNumber = false
  for (; i < buf.length; i++) {
    const c = buf[i]
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48)
      inNumber = true
    } else {
      if (inNumber) out.push(value)
      value = 0
      inNumber = false
      if (c === 93) break // ]
    }
  }
  return { values: Float64Array.from(out), end: i }
}

export function readSnapshot (path: string): Snapshot {
  const buf = readFileSync(path)
  const metaEnd = buf.indexOf('"nodes":[')
  const head = buf.subarray(0, metaEnd).toString('utf8').replace(/,\s*$/, '') + '}'
  const meta = (JSON.parse(head) as { snapshot: { meta: { node_fields: string[], edge_fields: string[], node_types: [string[]], edge_types: [string[]] } } }).snapshot.meta
  const nodes = numberArray(buf, 'nodes', metaEnd)
  const edges = numberArray(buf, 'edges', nodes.end)
  const stringsAt = buf.indexOf('"strings":[', edges.end)
  const stringsEnd = buf.lastIndexOf(']')
  const strings = JSON.parse(buf.subarray(stringsAt + 10, stringsEnd + 1).toString('utf8')) as string[]
  return {
    nodeFieldCount: meta.node_fields.length,
    edgeFieldCount: meta.edge_fields.length,
    nodes: nodes.values,
    edges: edges.values,
    strings,
    nodeTypes: meta.node_types[0],
    edgeTypes: meta.edge_types[0]
  }
}

export interface PartBytes {
  parts: Record<Part, number>
  /** Bytes by `part | type:name`, for seeing what a part is made of and refining the table. */
  byName: Map<string, number>
  total: number
}

/** Sums self sizes of every live object into its part (see the file's comment). */
export function partBytes (snap: Snapshot): PartBytes {
  const { nodes, edges, strings, nodeFieldCount: nf, edgeFieldCount: ef } = snap
  const count = nodes.length / nf
  const weak = snap.edgeTypes.indexOf('weak')
  const shortcut = snap.edgeTypes.indexOf('shortcut')
  const objectType = snap.nodeTypes.indexOf('object')
  const closureType = snap.nodeTypes.indexOf('closure')
  const nativeType = snap.nodeTypes.indexOf('native')
  const syntheticType = snap.nodeTypes.indexOf('synthetic')
  // node_fields: type, name, id, self_size, edge_count, ...
  const owner = new Int32Array(count).fill(-1)
  let edgeAt = 0
  for (let n = 0; n < count; n++) {
    const edgeCount = nodes[n * nf + 4]
    const fromSynthetic = nodes[n * nf] === syntheticType
    for (let e = 0; e < edgeCount; e++, edgeAt += ef) {
      const type = edges[edgeAt]
      if (type === weak || type === shortcut) continue
      const to = edges[edgeAt + 2] / nf
      if (owner[to] < 0 && !fromSynthetic) owner[to] = n
    }
  }
  const direct = new Int8Array(count).fill(-1)
  for (let n = 0; n < count; n++) {
    const type = nodes[n * nf]
    if (type !== objectType && type !== closureType && type !== nativeType) continue
    const name = strings[nodes[n * nf + 1]]
    let part: Part | undefined = CLASS_PARTS[name]
    if (part === undefined) part = PREFIX_PARTS.find(([re]) => re.test(name))?.[1]
    if (part !== undefined) direct[n] = PARTS.indexOf(part)
  }
  const resolved = new Int8Array(count).fill(-2) // -2 not yet, -1 other
  const resolve = (n: number): number => {
    const chain: number[] = []
    let at = n
    let result = -1
    for (let depth = 0; at >= 0 && depth < 12; depth++) {
      if (resolved[at] !== -2) { result = resolved[at]; break }
      if (direct[at] >= 0) { result = direct[at]; break }
      chain.push(at)
      at = owner[at]
    }
    for (const c of chain) resolved[c] = result
    return result
  }
  const parts = Object.fromEntries(PARTS.map((p) => [p, 0])) as Record<Part, number>
  const byName = new Map<string, number>()
  let total = 0
  for (let n = 0; n < count; n++) {
    const size = nodes[n * nf + 3]
    if (size === 0) continue
    total += size
    const part = PARTS.at(resolve(n)) ?? 'other'
    parts[part] += size
    const key = `${part} | ${snap.nodeTypes[nodes[n * nf]]}:${strings[nodes[n * nf + 1]].slice(0, 60)}`
    byName.set(key, (byName.get(key) ?? 0) + size)
  }
  return { parts, byName, total }
}
