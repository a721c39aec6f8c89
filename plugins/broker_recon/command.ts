// `broker_ctl recon …`: EMQ X's emqx_recon commands with their Node.js
// counterparts (README.md maps each), plus what Node.js shows that Erlang
// had no need for (event loop, GC, heap snapshot). Text for a person,
// `--json` the facts the API route shows.
import { CtlError, keyValues, output, specTime, usageError, type ClientLoadFacts, type CtlCommand, type CtlOutput, type UsageLine } from '../../lib/plugin-kit/index.js'
import { TOP_ATTRIBUTES, topAttribute } from './figures.js'
import { SnapshotRefused } from './heap-snapshot.js'
import { nodeStatsRefusal, type NodeStatsSample } from './node-stats.js'
import type { Recon } from './recon.js'
import { MAX_TOP, type ReconConfig } from './settings.js'

export const USAGE: readonly UsageLine[] = Object.freeze([
  ['recon memory', 'Memory of the process: heap, external and array buffers, rss, heap limit (recon_alloc:memory)'],
  ['recon allocated', 'The V8 heap spaces: size, used, available, physical (recon_alloc allocated types)'],
  ['recon bin_leak [<N>]', 'Binary memory outside the heap, and the N clients holding the most message bytes (recon:bin_leak)'],
  ['recon node_stats [<N> [<Ms>]]', 'N samples Ms apart (default 10 1000): connections, memory, bytes, messages, GC, CPU, event loop (recon:node_stats_print)'],
  ['recon remote_load <Plugin>', 'No Node.js counterpart (code is not sent between nodes): run plugins reload <Plugin> on each node'],
  ['recon proc_count <Attr> [<N>]', `The N clients with the most <Attr>: ${TOP_ATTRIBUTES.join(' | ')} (recon:proc_count, recon:inet_count)`],
  ['recon port_types', 'Active handles by type: sockets, servers, timers, … (recon:port_types)'],
  ['recon event_loop', 'Event-loop delay histogram and utilization since the plugin loaded (scheduler usage)'],
  ['recon gc', 'Garbage collections by kind: counts and pauses since the plugin loaded'],
  ['recon heapsnapshot <File>', 'Write a V8 heap snapshot to <File> inside the data directory (file 0600)']
] as const)

const REMOTE_LOAD = 'recon remote_load has no Node.js counterpart: a node runs the code of its own install and takes none from another node. ' +
  'To run new plugin code, install it on each node and run `broker_ctl plugins reload <Plugin>` there.'

function count (text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < 1 || n > MAX_TOP) throw usageError(`the number of clients must be 1 to ${MAX_TOP}`)
  return n
}

function whole (text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  if (!/^\d+$/.test(text)) throw usageError(`${text} is not a whole number`)
  return Number(text)
}

export function clientLine (c: ClientLoadFacts): string {
  return `Client(${c.client_id}, mqueue_len=${c.mqueue_len}, inflight_len=${c.inflight_len}, awaiting_rel_len=${c.awaiting_rel_len}, heap_size=${c.heap_size}, buffered=${c.buffered}, recv_oct=${c.recv_oct}, send_oct=${c.send_oct})`
}

const clients = (list: ClientLoadFacts[]): string => list.length === 0 ? '(no client has any)' : list.map(clientLine).join('\n')
const fields = (record: object): string => Object.entries(record).map(([k, v]) => `${k}=${String(v)}`).join(', ')
const time = (ms: number): string => specTime(ms)

function sampleLine (s: NodeStatsSample): string {
  const { at, ...rest } = s
  return `${time(at)} ${fields(rest)}`
}

type Run = (args: string[]) => CtlOutput | Promise<CtlOutput>

export function reconCommand (recon: Recon, config: Readonly<ReconConfig>): CtlCommand {
  const top = (): number => config['recon.top']
  const table: Record<string, { arity: [number, number], run: Run }> = {
    memory: { arity: [0, 0], run: () => { const data = recon.memory(); return output(keyValues(data), data) } },
    allocated: {
      arity: [0, 0],
      run: () => {
        const data = recon.allocated()
        return output(keyValues(Object.fromEntries(data.map(({ space, ...rest }) => [space, fields(rest)]))), data)
      }
    },
    bin_leak: {
      arity: [0, 1],
      run: ([n]) => {
        const data = recon.binLeak(count(n, top()))
        return output(`${keyValues({ external: data.external, array_buffers: data.array_buffers })}\nclients holding the most message bytes:\n${clients(data.clients)}`, data)
      }
    },
    node_stats: {
      arity: [0, 2],
      run: async ([n, ms]) => {
        const samples = whole(n, 10)
        const interval = whole(ms, 1000)
        const refusal = nodeStatsRefusal(samples, interval)
        if (refusal !== undefined) throw usageError(refusal)
        const data = await recon.nodeStats(samples, interval)
        return output(data.map(sampleLine).join('\n'), data)
      }
    },
    remote_load: { arity: [0, 1], run: () => { throw new CtlError(REMOTE_LOAD) } },
    proc_count: {
      arity: [1, 2],
      run: ([attr, n]) => {
        const by = topAttribute(attr)
        if (by === undefined) throw usageError(`${attr} is not one of ${TOP_ATTRIBUTES.join(', ')}`)
        const data = recon.procCount(by, count(n, top()))
        return output(clients(data), data)
      }
    },
    port_types: {
      arity: [0, 0],
      run: () => {
        const data = recon.portTypes()
        return output(keyValues(Object.fromEntries(data.map((p) => [p.type, p.count]))), data)
      }
    },
    event_loop: {
      arity: [0, 0],
      run: () => {
        const data = recon.eventLoop()
        return output(keyValues({ since: time(data.since), utilization: data.utilization, ...data.delay }), data)
      }
    },
    gc: {
      arity: [0, 0],
      run: () => {
        const data = recon.gc()
        return output(keyValues({ since: time(data.since), total: fields(data.total), ...Object.fromEntries(Object.entries(data.by_kind).map(([kind, t]) => [kind, fields(t)])) }), data)
      }
    },
    heapsnapshot: {
      arity: [1, 1],
      run: async ([file]) => {
        try {
          const data = await recon.heapSnapshot(file)
          return output(`heap snapshot written to ${data.file} (${data.size} bytes in ${data.ms} ms)`, data)
        } catch (err) {
          if (err instanceof SnapshotRefused) throw new CtlError(err.message)
          throw err
        }
      }
    }
  }
  return {
    name: 'recon',
    usage: USAGE,
    run: async (args) => {
      const [sub = '', ...rest] = args
      const entry = Object.hasOwn(table, sub) ? table[sub] : undefined
      if (entry === undefined || rest.length < entry.arity[0] || rest.length > entry.arity[1]) throw usageError(`bad arguments: ${args.join(' ') || '(none)'}`)
      return await entry.run(rest)
    }
  }
}
