// Banned client ids, user names and addresses: add (with `until`), delete.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3 } from '../api.js'
import { Action, ErrorLine, Field, PageHead, Pager, Select, Table, ViewerNote } from '../components/ui.js'
import { anyHolds, useListing } from '../listing.js'
import { useSession } from '../session.js'
import type { BannedRecord } from '../types.js'

const KINDS: Array<[string, string]> = [['client_id', 'Client id'], ['username', 'User name'], ['ip_address', 'IP address']]

/** `YYYY-MM-DDTHH:MM` in local time, as a datetime-local input takes it. */
function localInput (date: Date): string {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60000)
  return shifted.toISOString().slice(0, 16)
}

export function Banned (): JSX.Element {
  const { canChange } = useSession()
  const list = useListing<BannedRecord>('/banned/', (b, text) => anyHolds(text, b.who, b.reason))
  const [who, setWho] = useState('')
  const [as, setAs] = useState('client_id')
  const [reason, setReason] = useState('')
  const [until, setUntil] = useState(() => localInput(new Date(Date.now() + 3600_000)))
  const add = async (): Promise<void> => {
    const seconds = Math.floor(new Date(until).getTime() / 1000)
    await v3.post('/banned/', { who, as, reason, ...(Number.isFinite(seconds) ? { until: seconds } : {}) })
    setWho('')
    setReason('')
    await list.reload()
  }
  return (
    <section>
      <PageHead title="Banned">
        <Field label="Search" type="search" placeholder="who or reason" value={list.search} onInput={list.setSearch} />
      </PageHead>
      {canChange
        ? (
          <form class="card inline-form" aria-label="Ban" onSubmit={(e) => e.preventDefault()}>
            <Select label="Kind" value={as} options={KINDS} onChange={setAs} />
            <Field label="Who" value={who} onInput={setWho} required />
            <Field label="Reason" value={reason} onInput={setReason} />
            <Field label="Until" type="datetime-local" value={until} onInput={setUntil} />
            <Action label="Ban" busy="Banning…" kind="danger" disabled={who === ''} run={add} />
          </form>)
        : <ViewerNote />}
      <ErrorLine message={list.error} />
      <Table<BannedRecord> label="Banned entries" empty="Nobody is banned" rows={list.data?.items} rowKey={(b) => `${b.as}/${b.who}`}
        columns={[
          { title: 'Who', render: (b) => b.who },
          { title: 'Kind', render: (b) => KINDS.find(([k]) => k === b.as)?.[1] ?? b.as },
          { title: 'Reason', render: (b) => b.reason },
          { title: 'By', render: (b) => b.by },
          { title: 'Until', render: (b) => new Date(b.until * 1000).toLocaleString() },
          { title: 'Actions', render: (b) => canChange && <Action label="Delete" busy="Deleting…" run={async () => { await v3.del(`/banned/${enc(b.who)}?as=${enc(b.as)}`); await list.reload() }} /> }
        ]} />
      {list.data !== undefined && <Pager page={list.page} limit={list.data.meta.limit} count={list.data.meta.count} onPage={list.setPage} />}
    </section>
  )
}
