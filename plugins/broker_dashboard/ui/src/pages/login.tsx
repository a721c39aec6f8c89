// Sign in with an administrator user (the users of /api/v3/users).
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { request, type Me } from '../api.js'
import { ErrorLine } from '../components/ui.js'

export function Login ({ onSignedIn }: { onSignedIn: (me: Me) => void }): JSX.Element {
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      onSignedIn(await request<Me>('POST', '/api/login', { username, password }))
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="login">
      <form class="card" onSubmit={(e) => { void submit(e) }}>
        <h1>Broker dashboard</h1>
        <label class="field"><span>User name</span>
          <input name="username" autocomplete="username" required value={username} onInput={(e) => setUsername((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field"><span>Password</span>
          <input name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorLine message={error} />
        <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{busy && <span class="spinner" aria-hidden="true" />}{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  )
}
