// Alarms: the present ones (polled) and the history.
import type { JSX } from 'preact'
import { request } from '../api.js'
import { useAlarms, type NodeAlarm } from '../alarms.js'
import { Action, ErrorLine, PageHead, Table } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'
import type { AlarmRecord } from '../types.js'

const columns = (cleared: boolean): Array<{ title: string, render: (a: NodeAlarm) => string }> => [
  { title: 'Severity', render: (a) => a.desc.severity },
  { title: 'Alarm', render: (a) => a.desc.title },
  { title: 'Summary', render: (a) => a.desc.summary },
  { title: 'Node', render: (a) => a.node },
  { title: 'Raised at', render: (a) => a.desc.timestamp },
  ...(cleared ? [{ title: 'Cleared at', render: (a: NodeAlarm) => a.desc.clear_at ?? '' }] : [])
]

export function Alarms (): JSX.Element {
  const alarms = useAlarms()
  const { node, someNode } = useSession()
  // the server's history of cleared alarms, where the dashboard serves one
  const history = useLoad(async () => {
    try {
      const rows = await request<AlarmRecord[]>('GET', `/api/dashboard/alarms/history?node=${encodeURIComponent(someNode)}`)
      return rows.map((a) => ({ ...a, node: someNode }))
    } catch {
      return undefined
    }
  }, [someNode])
  const mine = (a: NodeAlarm): boolean => node === '' || a.node === node
  const cleared = [...(history.data ?? []), ...alarms.cleared.filter((a) => !(history.data ?? []).some((h) => h.id === a.id && h.desc.timestamp === a.desc.timestamp))]
  return (
    <section>
      <PageHead title="Alarms"><Action label="Refresh" busy="Refreshing…" run={async () => { await alarms.reload(); await history.reload() }} /></PageHead>
      <ErrorLine message={alarms.error} />
      <h2>Present</h2>
      <Table<NodeAlarm> label="Present alarms" empty="No alarm is raised" rows={alarms.present.filter(mine)} rowKey={(a) => `${a.node}/${a.id}`} columns={columns(false)} />
      <h2>History</h2>
      <p class="muted">{history.data === undefined ? 'Alarms cleared while this page was open.' : 'Alarms cleared on the node.'}</p>
      <Table<NodeAlarm> label="Cleared alarms" empty="No alarm was cleared" rows={cleared.filter(mine)} rowKey={(a) => `${a.node}/${a.id}/${a.desc.timestamp}`} columns={columns(true)} />
    </section>
  )
}
