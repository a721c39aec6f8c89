// Applications (the REST API's credentials): create (the secret is shown
// once), enable / disable, set an expiry, delete.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3 } from '../api.js'
import { Action, ErrorLine, Field, PageHead, Select, Table, ViewerNote } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'
import type { AppRecord } from '../types.js'

const ROLES: Array<[string, string]> = [['administrator', 'administrator'], ['viewer', 'viewer']]

function expiryText (expired: string | number): string {
  return typeof expired === 'number' ? new Date(expired * 1000).toLocaleString() : 'never'
}

export function Apps (): JSX.Element {
  const { canChange } = useSession()
  const apps = useLoad(async () => await v3.get<AppRecord[]>('/apps/'), [])
  const [id, setId] = useState('')
  const [name, setName] = useState('')
  const [role, setRole] = useState('administrator')
  const [created, setCreated] = useState<{ id: string, secret: string } | undefined>(undefined)
  const create = async (): Promise<void> => {
    const { secret } = await v3.post<{ secret: string }>('/apps/', { app_id: id, name: name === '' ? id : name, role })
    setCreated({ id, secret })
    setId('')
    setName('')
    await apps.reload()
  }
  const update = async (app: AppRecord, change: Partial<AppRecord>): Promise<void> => {
    await v3.put(`/apps/${enc(app.app_id)}`, change)
    await apps.reload()
  }
  return (
    <section>
      <PageHead title="Applications" />
      <p class="muted">An application's id and secret are the HTTP Basic credentials of the management REST API.</p>
      {canChange
        ? (
          <form class="card inline-form" aria-label="New application" onSubmit={(e) => e.preventDefault()}>
            <Field label="Application id" value={id} onInput={setId} required />
            <Field label="Name" value={name} onInput={setName} />
            <Select label="Role" value={role} options={ROLES} onChange={setRole} />
            <Action label="Create" busy="Creating…" kind="primary" disabled={id === ''} run={create} />
          </form>)
        : <ViewerNote />}
      {created !== undefined && (
        <div class="card notice" role="status">
          <p>Application <strong>{created.id}</strong> created. Its secret is shown this once: copy it now.</p>
          <p><label>Secret <input class="secret" readOnly value={created.secret} onFocus={(e) => (e.target as HTMLInputElement).select()} /></label>{' '}
            <button type="button" onClick={() => setCreated(undefined)}>I have copied it</button></p>
        </div>
      )}
      <ErrorLine message={apps.error} />
      <Table<AppRecord> label="Applications" empty="No applications" rows={apps.data} rowKey={(a) => a.app_id}
        columns={[
          { title: 'Id', render: (a) => a.app_id },
          { title: 'Name', render: (a) => a.name },
          { title: 'Role', render: (a) => a.role },
          { title: 'Status', render: (a) => <span class={a.status ? 'good' : 'muted'}>{a.status ? 'enabled' : 'disabled'}</span> },
          { title: 'Expires', render: (a) => expiryText(a.expired) },
          { title: 'Actions', render: (a) => canChange && <AppActions app={a} update={update} remove={async () => { await v3.del(`/apps/${enc(a.app_id)}`); await apps.reload() }} /> }
        ]} />
    </section>
  )
}

function AppActions ({ app, update, remove }: { app: AppRecord, update: (app: AppRecord, change: Partial<AppRecord>) => Promise<void>, remove: () => Promise<void> }): JSX.Element {
  const [expiry, setExpiry] = useState('')
  return (
    <span class="buttons">
      <Action label={app.status ? 'Disable' : 'Enable'} busy="Saving…" run={async () => await update(app, { status: !app.status })} />
      <label class="compact">Expire on <input type="date" value={expiry} onInput={(e) => setExpiry((e.target as HTMLInputElement).value)} /></label>
      <Action label="Set expiry" busy="Saving…" disabled={expiry === ''} run={async () => await update(app, { expired: Math.floor(new Date(expiry).getTime() / 1000) })} />
      {app.expired !== 'undefined' && <Action label="Never expire" busy="Saving…" run={async () => await update(app, { expired: 'undefined' })} />}
      <Action label="Delete" busy="Deleting…" kind="danger" confirm={`Delete the application ${app.app_id}?`} run={remove} />
    </span>
  )
}
