// The signed-in user's own password.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { request } from '../api.js'
import { Action, ErrorLine, Field, PageHead } from '../components/ui.js'
import { useSession } from '../session.js'

export function Account (): JSX.Element {
  const { me } = useSession()
  const [oldPassword, setOld] = useState('')
  const [newPassword, setNew] = useState('')
  const [again, setAgain] = useState('')
  const [error, setError] = useState<string | undefined>(undefined)
  const [done, setDone] = useState(false)
  const change = async (): Promise<void> => {
    setDone(false)
    setError(undefined)
    if (newPassword !== again) { setError('the two new passwords differ'); return }
    await request('PUT', '/api/me/password', { old_password: oldPassword, new_password: newPassword })
    setOld(''); setNew(''); setAgain('')
    setDone(true)
  }
  return (
    <section>
      <PageHead title={`Account of ${me.username}`} />
      <p>Role: <strong>{me.role}</strong></p>
      <form class="card stacked" aria-label="Change password" onSubmit={(e) => e.preventDefault()}>
        <h2>Change password</h2>
        <Field label="Current password" type="password" autocomplete="current-password" value={oldPassword} onInput={setOld} />
        <Field label="New password" type="password" autocomplete="new-password" value={newPassword} onInput={setNew} />
        <Field label="New password again" type="password" autocomplete="new-password" value={again} onInput={setAgain} />
        <ErrorLine message={error} />
        {done && <p class="good" role="status">Password changed.</p>}
        <Action label="Change password" busy="Changing…" kind="primary" disabled={oldPassword === '' || newPassword === ''} run={change} onError={setError} />
      </form>
    </section>
  )
}
