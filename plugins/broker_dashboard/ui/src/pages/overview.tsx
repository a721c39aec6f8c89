// The nodes (status, uptime, version, memory, CPU load, connections) and
// live charts of the last hour, sampled by the dashboard plugin.
import type { JSX } from 'preact'
import { request, v3 } from '../api.js'
import { Chart } from '../components/chart.js'
import { ErrorLine, PageHead, Table } from '../components/ui.js'
import { useLoad, usePoll } from '../hooks.js'
import { useSession } from '../session.js'
import type { NodeRecord, Samples } from '../types.js'

const POLL_MS = 5000

export function Overview (): JSX.Element {
  const session = useSession()
  const nodes = useLoad(async () => await v3.get<NodeRecord[]>('/nodes/'), [])
  const chartNode = session.someNode
  const samples = useLoad(async () => chartNode === '' ? undefined : await request<Samples>('GET', `/api/dashboard/samples?node=${encodeURIComponent(chartNode)}`), [chartNode])
  usePoll(async () => await Promise.all([nodes.reload(), samples.reload()]), POLL_MS)

  const shown = nodes.data?.filter((n) => session.node === '' || n.node === session.node)
  const rows = samples.data?.samples ?? []
  const ts = rows.map((s) => s.ts > 1e11 ? s.ts / 1000 : s.ts)
  return (
    <section>
      <PageHead title="Overview" />
      <ErrorLine message={nodes.error} />
      <Table<NodeRecord>
        label="Nodes" empty="No nodes" rows={shown} rowKey={(n) => n.node}
        columns={[
          { title: 'Node', render: (n) => n.node },
          { title: 'Status', render: (n) => n.error !== undefined ? <span class="bad">{n.error}: {n.message}</span> : <span class={n.node_status === 'Running' ? 'good' : 'bad'}>{n.node_status}</span> },
          { title: 'Uptime', render: (n) => n.uptime },
          { title: 'Version', render: (n) => n.version },
          { title: 'Memory', render: (n) => n.memory_used === undefined ? '' : `${n.memory_used} / ${n.memory_total}` },
          { title: 'CPU load (1/5/15 min)', render: (n) => n.load1 === undefined ? '' : `${n.load1} / ${n.load5} / ${n.load15}` },
          { title: 'Connections', render: (n) => n.connections }
        ]}
      />
      <h2>Last hour on {chartNode}</h2>
      <ErrorLine message={samples.error} />
      {samples.data !== undefined && rows.length === 0 && <p class="muted">No samples yet: the first comes within {samples.data.interval_s} s.</p>}
      <div class="charts">
        <Chart title="Messages per second" ts={ts} series={[
          { label: 'received', values: rows.map((s) => s.received_per_s), color: '#1565c0' },
          { label: 'sent', values: rows.map((s) => s.sent_per_s), color: '#2e7d32' }
        ]} />
        <Chart title="Connections" ts={ts} series={[{ label: 'connections', values: rows.map((s) => s.connections), color: '#6a1b9a' }]} />
        <Chart title="Subscriptions" ts={ts} series={[{ label: 'subscriptions', values: rows.map((s) => s.subscriptions), color: '#ef6c00' }]} />
      </div>
    </section>
  )
}
