// Plugins of a node: start / stop, and their settings edited with the types
// the API gives; a refused value shows the API's validation message.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3 } from '../api.js'
import { Action, ErrorLine, PageHead, Table, ViewerNote } from '../components/ui.js'
import { useLoad, useScrolledTo } from '../hooks.js'
import { useSession } from '../session.js'
import type { PluginRecord, PluginSetting } from '../types.js'

export function Plugins (): JSX.Element {
  const { someNode: node, canChange } = useSession()
  const plugins = useLoad(async () => node === '' ? [] : await v3.get<PluginRecord[]>(`/nodes/${enc(node)}/plugins/`), [node])
  const [editing, setEditing] = useState<string | undefined>(undefined)
  const toggle = async (p: PluginRecord): Promise<void> => {
    await v3.put(`/nodes/${enc(node)}/plugins/${enc(p.name)}/${p.active ? 'unload' : 'load'}`)
    await plugins.reload()
  }
  return (
    <section>
      <PageHead title={`Plugins on ${node}`}><Action label="Refresh" busy="Refreshing…" run={plugins.reload} /></PageHead>
      {!canChange && <ViewerNote />}
      <ErrorLine message={plugins.error} />
      <Table<PluginRecord> label="Plugins" empty="No plugins" rows={plugins.data} rowKey={(p) => p.name}
        columns={[
          { title: 'Plugin', render: (p) => p.name },
          { title: 'Version', render: (p) => p.version },
          { title: 'Description', render: (p) => p.description },
          { title: 'State', render: (p) => <span class={p.active ? 'good' : 'muted'}>{p.active ? 'running' : 'stopped'}</span> },
          {
            title: 'Actions',
            class: 'nowrap',
            render: (p) => canChange && (
              <span class="buttons">
                <Action label={p.active ? 'Stop' : 'Start'} busy={p.active ? 'Stopping…' : 'Starting…'} kind={p.active ? 'danger' : 'primary'} run={async () => await toggle(p)}
                  confirm={p.active && (p.name === 'broker_dashboard' || p.name === 'broker_management') ? `Stopping ${p.name} closes its HTTP listener. Stop it?` : undefined} />
                <button type="button" aria-expanded={editing === p.name} onClick={() => setEditing(editing === p.name ? undefined : p.name)}>Settings</button>
              </span>
            )
          }
        ]} />
      {editing !== undefined && <PluginSettings node={node} plugin={editing} onSaved={plugins.reload} onClose={() => setEditing(undefined)} />}
    </section>
  )
}

/** The input for a setting, from the type the API gives (the plugin's schema); a key it gives none for is text. */
function inputFor (setting: PluginSetting): 'boolean' | 'number' | 'enum' | 'text' {
  switch (setting.datatype) {
    case 'boolean': return 'boolean'
    case 'integer': case 'number': return 'number'
    case 'enum': return setting.values !== undefined ? 'enum' : 'text'
    default: return 'text'
  }
}

function PluginSettings ({ node, plugin, onSaved, onClose }: { node: string, plugin: string, onSaved: () => Promise<void>, onClose: () => void }): JSX.Element {
  const path = `/nodes/${enc(node)}/plugin_configs/${enc(plugin)}`
  const settings = useLoad(async () => await v3.get<PluginSetting[]>(path), [path])
  const [changes, setChanges] = useState<Record<string, string>>({})
  const [error, setError] = useState<string | undefined>(undefined)
  const [saved, setSaved] = useState(false)
  const shown = useScrolledTo(plugin)
  const change = (key: string, value: string): void => { setChanges({ ...changes, [key]: value }); setSaved(false) }
  const save = async (): Promise<void> => {
    setError(undefined)
    setSaved(false)
    await v3.put(path, changes)
    setChanges({})
    setSaved(true)
    await settings.reload()
    await onSaved()
  }
  return (
    <section class="card details" aria-label={`Settings of ${plugin}`} ref={shown}>
      <header class="page-head"><h2>Settings of {plugin}</h2><button type="button" onClick={onClose}>Close</button></header>
      <ErrorLine message={settings.error} />
      {settings.data?.length === 0 && <p class="muted">This plugin has no settings.</p>}
      <form class="settings" onSubmit={(e) => e.preventDefault()}>
        <div class="settings-grid">
        {settings.data?.map((s) => {
          const value = changes[s.key] ?? s.value
          const kind = inputFor(s)
          const id = `setting-${s.key}`
          return (
            <div class="field" key={s.key}>
              <label for={id}>{s.key}{s.required ? ' *' : ''}</label>
              {kind === 'enum'
                ? <select id={id} value={value} onChange={(e) => change(s.key, (e.target as HTMLSelectElement).value)}>{[...new Set([value, ...(s.values ?? [])])].map((v) => <option key={v} value={v}>{v === '' ? '(empty)' : v}</option>)}</select>
                : kind === 'boolean'
                ? <select id={id} value={value} onChange={(e) => change(s.key, (e.target as HTMLSelectElement).value)}><option value="true">true</option><option value="false">false</option><option value="on">on</option><option value="off">off</option></select>
                : kind === 'number'
                  ? <input id={id} type="number" step={s.datatype === 'integer' ? 1 : 'any'} value={value} onInput={(e) => change(s.key, (e.target as HTMLInputElement).value)} />
                  : <input id={id} type="text" value={value} onInput={(e) => change(s.key, (e.target as HTMLInputElement).value)} />}
              {s.desc !== '' && <small class="muted">{s.desc}</small>}
            </div>
          )
        })}
        </div>
        <ErrorLine message={error} />
        {saved && <p class="good" role="status">Saved; the plugin was reloaded with the new settings if it was running.</p>}
        <Action label="Save settings" busy="Saving…" kind="primary" disabled={Object.keys(changes).length === 0} run={save} onError={setError} />
      </form>
    </section>
  )
}
