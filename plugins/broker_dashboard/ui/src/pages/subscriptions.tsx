// Subscriptions and topics (routes), each searchable and paged.
import type { JSX } from 'preact'
import { Action, ErrorLine, Field, PageHead, Pager, Table } from '../components/ui.js'
import { anyHolds, useListing } from '../listing.js'
import { scoped, useSession } from '../session.js'
import type { RouteRecord, SubscriptionRecord } from '../types.js'

export function Subscriptions (): JSX.Element {
  const session = useSession()
  const list = useListing<SubscriptionRecord>(scoped(session, 'subscriptions'), (s, text) => anyHolds(text, s.client_id, s.topic))
  return (
    <section>
      <PageHead title="Subscriptions">
        <Field label="Search" type="search" placeholder="client id or topic" value={list.search} onInput={list.setSearch} />
        <Action label="Refresh" busy="Refreshing…" run={list.reload} />
      </PageHead>
      <ErrorLine message={list.error} />
      <Table<SubscriptionRecord> label="Subscriptions" empty="No subscriptions" rows={list.data?.items} rowKey={(s) => `${s.node}/${s.client_id}/${s.topic}`}
        columns={[
          { title: 'Client id', render: (s) => s.error !== undefined ? <span class="bad">{s.node}: {s.message}</span> : s.client_id },
          { title: 'Topic', render: (s) => s.topic },
          { title: 'QoS', render: (s) => s.qos },
          { title: 'Node', render: (s) => s.node }
        ]} />
      {list.data !== undefined && <Pager page={list.page} limit={list.data.meta.limit} count={list.data.meta.count} onPage={list.setPage} />}
    </section>
  )
}

export function Topics (): JSX.Element {
  const list = useListing<RouteRecord>('/routes/', (r, text) => anyHolds(text, r.topic, r.node))
  return (
    <section>
      <PageHead title="Topics and routes">
        <Field label="Search" type="search" placeholder="topic" value={list.search} onInput={list.setSearch} />
        <Action label="Refresh" busy="Refreshing…" run={list.reload} />
      </PageHead>
      <ErrorLine message={list.error} />
      <Table<RouteRecord> label="Routes" empty="No routes" rows={list.data?.items} rowKey={(r) => `${r.node}/${r.topic}`}
        columns={[
          { title: 'Topic', render: (r) => r.error !== undefined ? <span class="bad">{r.node}: {r.message}</span> : r.topic },
          { title: 'Node', render: (r) => r.node }
        ]} />
      {list.data !== undefined && <Pager page={list.page} limit={list.data.meta.limit} count={list.data.meta.count} onPage={list.setPage} />}
    </section>
  )
}
