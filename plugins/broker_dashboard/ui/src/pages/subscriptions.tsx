// Subscriptions and topics (routes), each searchable and paged.
import type { JSX } from 'preact'
import { ListingFrame } from '../components/listing-frame.js'
import { Table } from '../components/ui.js'
import { anyHolds, useListing } from '../listing.js'
import { scoped, useSession } from '../session.js'
import type { RouteRecord, SubscriptionRecord } from '../types.js'

export function Subscriptions (): JSX.Element {
  const session = useSession()
  const list = useListing<SubscriptionRecord>(scoped(session, 'subscriptions'), (s, text) => anyHolds(text, s.client_id, s.topic))
  return (
    <section>
      <ListingFrame title="Subscriptions" placeholder="client id or topic" list={list}>
        <Table<SubscriptionRecord> label="Subscriptions" empty="No subscriptions" rows={list.data?.items} rowKey={(s) => `${s.node}/${s.client_id}/${s.topic}`}
          columns={[
            { title: 'Client id', render: (s) => s.error !== undefined ? <span class="bad">{s.node}: {s.message}</span> : s.client_id },
            { title: 'Topic', render: (s) => s.topic },
            { title: 'QoS', render: (s) => s.qos },
            { title: 'Node', render: (s) => s.node }
          ]} />
      </ListingFrame>
    </section>
  )
}

export function Topics (): JSX.Element {
  const list = useListing<RouteRecord>('/routes/', (r, text) => anyHolds(text, r.topic, r.node))
  return (
    <section>
      <ListingFrame title="Topics and routes" placeholder="topic" list={list}>
        <Table<RouteRecord> label="Routes" empty="No routes" rows={list.data?.items} rowKey={(r) => `${r.node}/${r.topic}`}
          columns={[
            { title: 'Topic', render: (r) => r.error !== undefined ? <span class="bad">{r.node}: {r.message}</span> : r.topic },
            { title: 'Node', render: (r) => r.node }
          ]} />
      </ListingFrame>
    </section>
  )
}
