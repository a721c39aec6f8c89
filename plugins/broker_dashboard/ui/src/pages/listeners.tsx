// The listeners of every node (MQTT, WebSocket, the HTTP APIs).
import type { JSX } from 'preact'
import type { ByNode } from '../api.js'
import { v3 } from '../api.js'
import { Action, ErrorLine, PageHead, Table } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'
import type { ListenerRecord } from '../types.js'

type Row = ListenerRecord & { node: string }

export function Listeners (): JSX.Element {
  const { node } = useSession()
  const listing = useLoad(async () => flatten(await v3.get<ByNode<'listeners', ListenerRecord[]>>('/listeners/')), [])
  const rows = listing.data?.filter((l) => node === '' || l.node === node)
  return (
    <section>
      <PageHead title="Listeners"><Action label="Refresh" busy="Refreshing…" run={listing.reload} /></PageHead>
      <ErrorLine message={listing.error} />
      <Table<Row> label="Listeners" empty="No listeners" rows={rows} rowKey={(l) => `${l.node}/${l.protocol}/${l.listen_on}`}
        columns={[
          { title: 'Node', render: (l) => l.node },
          { title: 'Protocol', render: (l) => l.protocol },
          { title: 'Listen on', render: (l) => l.listen_on },
          { title: 'Connections', render: (l) => `${l.current_conns} / ${l.max_conns}` },
          { title: 'Acceptors', render: (l) => l.acceptors },
          { title: 'Refused / kicked', render: (l) => Array.isArray(l.shutdown_count) ? '0 / 0' : `${l.shutdown_count.closed} / ${l.shutdown_count.kicked}` }
        ]} />
    </section>
  )
}

/** Every node's listeners in one list; a node that did not answer becomes one row saying so. */
export function flatten (byNode: ByNode<'listeners', ListenerRecord[]>): Row[] {
  return byNode.flatMap((entry) => 'listeners' in entry
    ? entry.listeners.map((l) => ({ ...l, node: entry.node }))
    : [{ node: entry.node, protocol: `(${String((entry as { error: string }).error)})`, listen_on: String((entry as { message: string }).message), acceptors: 0, max_conns: 0, current_conns: 0, shutdown_count: [] as [] }])
}
