// Administrator users: add, change tags (a `viewer` tag makes a viewer), delete.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3 } from '../api.js'
import { Action, ErrorLine, Field, PageHead, Table, ViewerNote } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'
import type { UserRecord } from '../types.js'

export function Users (): JSX.Element {
  const { canChange, me } = useSession()
  const users = useLoad(async () => await v3.get<UserRecord[]>('/users/'), [])
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [tags, setTags] = useState('administrator')
  const add = async (): Promise<void> => {
    await v3.post('/users/', { username, password, tags })
    setUsername('')
    setPassword('')
    await users.reload()
  }
  return (
    <section>
      <PageHead title="Administrators" />
      <p class="muted">The users who sign in here (and to API v2). Tags holding <code>viewer</code> make a user who can look but not change.</p>
      {canChange
        ? (
          <form class="card inline-form" aria-label="New user" onSubmit={(e) => e.preventDefault()}>
            <Field label="User name" value={username} onInput={setUsername} autocomplete="off" required />
            <Field label="Password" type="password" value={password} onInput={setPassword} autocomplete="new-password" required />
            <Field label="Tags" value={tags} onInput={setTags} />
            <Action label="Add user" busy="Adding…" kind="primary" disabled={username === '' || password === ''} run={add} />
          </form>)
        : <ViewerNote />}
      <ErrorLine message={users.error} />
      <Table<UserRecord> label="Users" empty="No users" rows={users.data} rowKey={(u) => u.username}
        columns={[
          { title: 'User', render: (u) => u.username + (u.username === me.username ? ' (you)' : '') },
          { title: 'Tags', render: (u) => u.tags },
          { title: 'Actions', render: (u) => canChange && <UserActions user={u} reload={users.reload} /> }
        ]} />
    </section>
  )
}

function UserActions ({ user, reload }: { user: UserRecord, reload: () => Promise<void> }): JSX.Element {
  const [tags, setTags] = useState(user.tags)
  return (
    <span class="buttons">
      <label class="compact">Tags <input value={tags} onInput={(e) => setTags((e.target as HTMLInputElement).value)} /></label>
      <Action label="Save tags" busy="Saving…" disabled={tags === user.tags} run={async () => { await v3.put(`/users/${enc(user.username)}`, { tags }); await reload() }} />
      <Action label="Delete" busy="Deleting…" kind="danger" confirm={`Delete the user ${user.username}?`} run={async () => { await v3.del(`/users/${enc(user.username)}`); await reload() }} />
    </span>
  )
}
