// The node's live settings and when a change applies: `live` at once,
// `restart` at the next start (stored for it), `fixed` not at run time.
import type { JSX } from 'preact'
import { useState } from 'preact/hooks'
import { enc, v3 } from '../api.js'
import { Action, ErrorLine, Field, PageHead, Table } from '../components/ui.js'
import { useLoad } from '../hooks.js'
import { useSession } from '../session.js'
import type { ConfigRecord } from '../types.js'

const APPLIES: Record<string, string> = { live: 'now', restart: 'at the next start', fixed: 'not changeable at run time' }

export function Settings (): JSX.Element {
  const { someNode: node, node: chosen, canChange } = useSession()
  const configs = useLoad(async () => node === '' ? [] : await v3.get<ConfigRecord[]>(`/nodes/${enc(node)}/configs/`), [node])
  const [search, setSearch] = useState('')
  const text = search.trim().toLowerCase()
  const rows = configs.data?.filter((c) => text === '' || c.key.toLowerCase().includes(text) || c.value.toLowerCase().includes(text))
  return (
    <section>
      <PageHead title={`Settings of ${node}`}>
        <Field label="Search" type="search" placeholder="key or value" value={search} onInput={setSearch} />
      </PageHead>
      <p class="muted">A change {chosen === '' ? 'is made on every node' : `is made on ${chosen} only`}. “Applies” tells when it takes effect.</p>
      <ErrorLine message={configs.error} />
      <Table<ConfigRecord> label="Settings" empty="No settings" rows={rows} rowKey={(c) => c.key}
        columns={[
          { title: 'Key', render: (c) => <code>{c.key}</code> },
          { title: 'Value', render: (c) => canChange && c.kind !== 'fixed' ? <SettingEditor config={c} node={chosen} reload={configs.reload} /> : <code>{c.value}</code> },
          { title: 'Type', render: (c) => c.datatpye },
          { title: 'Applies', render: (c) => <span class={`kind-${c.kind}`}>{APPLIES[c.kind] ?? c.kind}</span> }
        ]} />
    </section>
  )
}

function SettingEditor ({ config, node, reload }: { config: ConfigRecord, node: string, reload: () => Promise<void> }): JSX.Element {
  const [value, setValue] = useState(config.value)
  const path = node === '' ? `/configs/${enc(config.app)}` : `/nodes/${enc(node)}/configs/${enc(config.app)}`
  return (
    <span class="setting-editor">
      <input aria-label={config.key} value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
      <Action label={config.kind === 'restart' ? 'Save for restart' : 'Apply'} busy="Saving…" disabled={value === config.value}
        run={async () => { await v3.put(path, { key: config.key, value, next_start: config.kind === 'restart' }); await reload() }} />
    </span>
  )
}
