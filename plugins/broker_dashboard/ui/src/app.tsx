// The shell: sign-in, then the navigation (with the alarms badge), the node
// chooser, sign-out, and the page the location hash names.
import type { JSX } from 'preact'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { onSignedOut, request, setCsrfToken, v3, type Me } from './api.js'
import { AlarmsContext, useAlarmWatch } from './alarms.js'
import { useLoad, useRoute } from './hooks.js'
import { SessionContext, type Session } from './session.js'
import type { NodeRecord } from './types.js'
import { Account } from './pages/account.js'
import { Alarms } from './pages/alarms.js'
import { Apps } from './pages/apps.js'
import { Banned } from './pages/banned.js'
import { Clients } from './pages/clients.js'
import { Listeners } from './pages/listeners.js'
import { Login } from './pages/login.js'
import { Overview } from './pages/overview.js'
import { Plugins } from './pages/plugins.js'
import { Settings } from './pages/settings.js'
import { Subscriptions, Topics } from './pages/subscriptions.js'
import { Users } from './pages/users.js'
import { WebSocketClient } from './pages/websocket.js'

interface PageEntry { path: string, title: string, page: () => JSX.Element }

export const PAGES: PageEntry[] = [
  { path: '/', title: 'Overview', page: Overview },
  { path: '/clients', title: 'Clients', page: Clients },
  { path: '/subscriptions', title: 'Subscriptions', page: Subscriptions },
  { path: '/topics', title: 'Topics', page: Topics },
  { path: '/plugins', title: 'Plugins', page: Plugins },
  { path: '/listeners', title: 'Listeners', page: Listeners },
  { path: '/alarms', title: 'Alarms', page: Alarms },
  { path: '/banned', title: 'Banned', page: Banned },
  { path: '/apps', title: 'Applications', page: Apps },
  { path: '/users', title: 'Administrators', page: Users },
  { path: '/settings', title: 'Settings', page: Settings },
  { path: '/websocket', title: 'WebSocket client', page: WebSocketClient },
  { path: '/account', title: 'Account', page: Account }
]

export function App (): JSX.Element {
  const [me, setMe] = useState<Me | null | undefined>(undefined)
  useEffect(() => {
    onSignedOut(() => setMe(null))
    request<Me>('GET', '/api/me').then((found) => { setCsrfToken(found.csrf_token); setMe(found) }, () => setMe(null))
  }, [])
  if (me === undefined) return <p class="muted loading">Loading…</p>
  if (me === null) return <Login onSignedIn={(found) => { setCsrfToken(found.csrf_token); setMe(found) }} />
  return <Console me={me} signedOut={() => { setCsrfToken(''); setMe(null) }} />
}

function Console ({ me, signedOut }: { me: Me, signedOut: () => void }): JSX.Element {
  const route = useRoute()
  const [node, setNode] = useState('')
  const [menuOpen, setMenuOpen] = useState(false)
  const nodes = useLoad(async () => (await v3.get<NodeRecord[]>('/nodes/')).map((n) => n.node), [])
  const alarms = useAlarmWatch()
  const names = nodes.data ?? []
  const session: Session = useMemo(() => ({
    me,
    canChange: me.role !== 'viewer',
    node,
    nodes: names,
    someNode: node !== '' ? node : (names[0] ?? ''),
    signOut: async () => { await request('POST', '/api/logout').catch(() => undefined); signedOut() }
  }), [me, node, names.join('|')])
  const current = PAGES.find((p) => p.path === route) ?? PAGES[0]
  useEffect(() => { document.title = `${current.title} · Broker dashboard`; setMenuOpen(false) }, [current])
  const Page = current.page
  return (
    <SessionContext.Provider value={session}>
      <AlarmsContext.Provider value={alarms}>
        <a class="skip" href="#main">Skip to the page</a>
        <header class="top">
          <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>Menu</button>
          <strong class="brand">Broker dashboard</strong>
          <label class="node-select">
            <span>Node</span>
            <select value={node} onChange={(e) => setNode((e.target as HTMLSelectElement).value)}>
              <option value="">All nodes</option>
              {names.map((n) => <option value={n}>{n}</option>)}
            </select>
          </label>
          <a href="#/alarms" class={`badge ${alarms.present.length > 0 ? 'alarm' : ''}`} aria-label={`${alarms.present.length} alarms`} data-testid="alarm-badge">
            Alarms <span class="count">{alarms.present.length}</span>
          </a>
          <a href="#/account" class="who">{me.username}{me.role === 'viewer' ? ' (viewer)' : ''}</a>
          <button type="button" onClick={() => { void session.signOut() }}>Sign out</button>
        </header>
        <div class="body">
          <nav id="nav" class={menuOpen ? 'open' : ''} aria-label="Pages">
            <ul>
              {PAGES.map((p) => (
                <li key={p.path}>
                  <a href={`#${p.path}`} aria-current={p === current ? 'page' : undefined}>
                    {p.title}{p.path === '/alarms' && alarms.present.length > 0 ? ` (${alarms.present.length})` : ''}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <main id="main" tabIndex={-1}><Page key={`${current.path}|${node}`} /></main>
        </div>
      </AlarmsContext.Provider>
    </SessionContext.Provider>
  )
}
