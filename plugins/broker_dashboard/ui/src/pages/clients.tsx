// Connected clients: search by client id, user name or address, paging,
// details (session, subscriptions, inflight and queue lengths), kick, clean
// the ACL cache.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3, type Page } from '../api.js'
import { ListingFrame } from '../components/listing-frame.js'
import { Action, ErrorLine, Field, Table } from '../components/ui.js'
import { useLoad, useScrolledTo } from '../hooks.js'
import { anyHolds, useListing } from '../listing.js'
import { scoped, useSession } from '../session.js'
import type { ConnectionRecord, SessionRecord, SubscriptionRecord } from '../types.js'

export function Clients (): JSX.Element {
  const session = useSession()
  const list = useListing<ConnectionRecord>(scoped(session, 'connections'), (c, text) => anyHolds(text, c.client_id, c.username, c.ipaddress, `${c.ipaddress}:${c.port}`))
  const [open, setOpen] = useState<string | undefined>(undefined)
  return (
    <section>
      <ListingFrame title="Clients" placeholder="client id, user name or address" list={list}>
        <Table<ConnectionRecord>
          label="Clients" empty={list.search === '' ? 'No client is connected' : 'No client matches the search'} rows={list.data?.items}
          rowKey={(c) => `${c.node}/${c.client_id ?? c.error}`}
          columns={[
            { title: 'Client id', render: (c) => c.error !== undefined ? <span class="bad">{c.node}: {c.message}</span> : <button type="button" class="link" aria-expanded={open === c.client_id} onClick={() => setOpen(open === c.client_id ? undefined : c.client_id)}>{c.client_id}</button> },
            { title: 'User name', render: (c) => c.username },
            { title: 'Address', render: (c) => c.ipaddress === undefined ? '' : `${c.ipaddress}:${c.port}` },
            { title: 'Node', render: (c) => c.node },
            { title: 'Protocol', render: (c) => c.proto_name === undefined ? '' : `${c.proto_name} ${c.proto_ver}` },
            { title: 'Connected at', render: (c) => c.connected_at },
            {
              title: 'Actions',
              render: (c) => c.error !== undefined || !session.canChange
                ? null
                : <Action label="Kick" busy="Kicking…" kind="danger" confirm={`Disconnect ${c.client_id}?`} run={async () => { await v3.del(`/connections/${enc(c.client_id)}`); if (open === c.client_id) setOpen(undefined); await list.reload() }} />
            }
          ]}
        />
      </ListingFrame>
      {open !== undefined && <ClientDetails clientId={open} onClose={() => setOpen(undefined)} />}
    </section>
  )
}

function ClientDetails ({ clientId, onClose }: { clientId: string, onClose: () => void }): JSX.Element {
  const { canChange } = useSession()
  const sessions = useLoad(async () => await v3.get<Page<SessionRecord> | SessionRecord[]>(`/sessions/${enc(clientId)}`), [clientId])
  const subs = useLoad(async () => await v3.get<Page<SubscriptionRecord> | SubscriptionRecord[]>(`/subscriptions/${enc(clientId)}`), [clientId])
  const [topic, setTopic] = useState('')
  const [cleaned, setCleaned] = useState('')
  const s = rowsOf(sessions.data)[0]
  const shown = useScrolledTo(clientId)
  return (
    <section class="card details" aria-label={`Client ${clientId}`} ref={shown}>
      <header class="page-head"><h2>Client {clientId}</h2><button type="button" onClick={onClose}>Close</button></header>
      <ErrorLine message={sessions.error} />
      {s !== undefined && (
        <dl class="facts">
          <dt>Node</dt><dd>{s.node}</dd>
          <dt>Clean start</dt><dd>{String(s.clean_start)}</dd>
          <dt>Session expiry</dt><dd>{s.expiry_interval} s</dd>
          <dt>Created at</dt><dd>{s.created_at}</dd>
          <dt>Subscriptions</dt><dd>{s.subscriptions_count}</dd>
          <dt>Inflight</dt><dd>{s.inflight_len} / {s.max_inflight}</dd>
          <dt>Queue</dt><dd>{s.mqueue_len} / {s.max_mqueue} ({s.mqueue_dropped} dropped)</dd>
          <dt>Awaiting PUBREL</dt><dd>{s.awaiting_rel_len}</dd>
          <dt>Delivered / queued</dt><dd>{s.deliver_msg} / {s.enqueue_msg}</dd>
          <dt>Memory (estimate)</dt><dd>{s.heap_size} bytes</dd>
        </dl>
      )}
      <h3>Subscriptions</h3>
      <ErrorLine message={subs.error} />
      <Table<SubscriptionRecord> label={`Subscriptions of ${clientId}`} empty="No subscriptions" rows={subs.data === undefined ? undefined : rowsOf(subs.data)} rowKey={(r) => r.topic}
        columns={[{ title: 'Topic', render: (r) => r.topic }, { title: 'QoS', render: (r) => r.qos }]} />
      {canChange && (
        <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
          <Field label="Topic to clean from the ACL cache" value={topic} onInput={setTopic} />
          <Action label="Clean ACL cache" busy="Cleaning…" disabled={topic === ''} run={async () => { await v3.del(`/connections/${enc(clientId)}/acl/${enc(topic)}`); setCleaned(topic) }} />
          {cleaned !== '' && <span class="good" role="status">Cleaned {cleaned}</span>}
        </form>
      )}
    </section>
  )
}

/** A lookup answers a list or a page, depending on the operation: its rows. */
export function rowsOf<T> (answer: Page<T> | T[] | undefined): T[] {
  if (answer === undefined) return []
  return Array.isArray(answer) ? answer : answer.items
}
