// Alarms: the present ones (polled) and the history.
import type { JSX } from 'preact'
import { alarmsByNode, useAlarms, type NodeAlarm } from '../alarms.js'
import { Action, ErrorLine, PageHead, Table } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'

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
  const { node } = useSession()
  // the nodes' history of cleared alarms (each keeps its newest 1000), newest first
  const history = useLoad(async () => (await alarmsByNode('/alarms/history/')).reverse(), [alarms.present.length])
  const mine = (a: NodeAlarm): boolean => node === '' || a.node === node
  return (
    <section>
      <PageHead title="Alarms"><Action label="Refresh" busy="Refreshing…" run={async () => { await alarms.reload(); await history.reload() }} /></PageHead>
      <ErrorLine message={alarms.error ?? history.error} />
      <h2>Present</h2>
      <Table<NodeAlarm> label="Present alarms" empty="No alarm is raised" rows={alarms.present.filter(mine)} rowKey={(a) => `${a.node}/${a.id}`} columns={columns(false)} />
      <h2>History</h2>
      <Table<NodeAlarm> label="Cleared alarms" empty="No alarm was cleared" rows={(history.data ?? []).filter(mine)} rowKey={(a) => `${a.node}/${a.id}/${a.desc.timestamp}`} columns={columns(true)} />
    </section>
  )
}
