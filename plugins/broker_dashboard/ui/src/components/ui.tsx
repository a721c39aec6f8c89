// The dashboard's building blocks: an action button that shows its progress
// and the API's message when it fails, an error line, a table, a pager and
// a labelled field.
import type { ComponentChildren, InputHTMLAttributes, JSX } from 'preact'
import { useState } from 'preact/hooks'

export function ErrorLine ({ message }: { message: string | undefined }): JSX.Element | null {
  if (message === undefined || message === '') return null
  return <p class="error" role="alert">{message}</p>
}

interface ActionProps {
  label: string
  /** shown while the action runs */
  busy?: string
  run: () => Promise<unknown>
  /** asked before running */
  confirm?: string
  kind?: 'primary' | 'danger' | 'plain'
  disabled?: boolean
  title?: string
  /** called with the error's message instead of showing it beside the button */
  onError?: (message: string) => void
}

/** A button running an async action: disabled with a spinner while it runs, the API's message beside it when it fails. */
export function Action ({ label, busy, run, confirm, kind = 'plain', disabled, title, onError }: ActionProps): JSX.Element {
  const [running, setRunning] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const click = async (): Promise<void> => {
    if (confirm !== undefined && !window.confirm(confirm)) return
    setRunning(true)
    setError(undefined)
    try {
      await run()
    } catch (err) {
      const message = (err as Error).message
      if (onError !== undefined) onError(message)
      else setError(message)
    } finally {
      setRunning(false)
    }
  }
  return (
    <span class="action">
      <button type="button" class={kind} disabled={disabled === true || running} aria-busy={running} title={title} onClick={() => { void click() }}>
        {running && <span class="spinner" aria-hidden="true" />}
        {running ? (busy ?? label) : label}
      </button>
      {error !== undefined && <span class="error" role="alert">{error}</span>}
    </span>
  )
}

export interface Column<T> { title: string, render: (row: T) => ComponentChildren, class?: string }

export function Table<T> ({ columns, rows, empty, label, rowKey }: { columns: Array<Column<T>>, rows: T[] | undefined, empty: string, label: string, rowKey: (row: T) => string }): JSX.Element {
  return (
    <div class="table-wrap">
      <table aria-label={label}>
        <thead><tr>{columns.map((c) => <th scope="col" class={c.class}>{c.title}</th>)}</tr></thead>
        <tbody>
          {rows === undefined && <tr><td colSpan={columns.length} class="muted">Loading…</td></tr>}
          {rows?.length === 0 && <tr><td colSpan={columns.length} class="muted">{empty}</td></tr>}
          {rows?.map((row) => (
            <tr key={rowKey(row)}>{columns.map((c) => <td data-label={c.title} class={c.class}>{c.render(row)}</td>)}</tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export function Pager ({ page, limit, count, onPage }: { page: number, limit: number, count: number, onPage: (page: number) => void }): JSX.Element {
  const pages = Math.max(1, Math.ceil(count / limit))
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>‹ Previous</button>
      <span>Page {page} of {pages} · {count} in all</span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>Next ›</button>
    </nav>
  )
}

interface FieldProps {
  label: string
  value: string
  onInput: (value: string) => void
  type?: 'text' | 'search' | 'password' | 'number' | 'datetime-local' | 'date'
  placeholder?: string
  required?: boolean
  disabled?: boolean
  autocomplete?: string
  size?: number
}

/** An input with its label. */
export function Field ({ label, value, onInput, type = 'text', placeholder, required, disabled, autocomplete, size }: FieldProps): JSX.Element {
  // one attribute object: preact's input typing ties `type` to other attributes per literal
  const attributes = { type, value, placeholder, required, disabled, autocomplete, size } as InputHTMLAttributes<HTMLInputElement>
  return (
    <label class="field">
      <span>{label}</span>
      <input {...attributes} onInput={(e) => onInput((e.target as HTMLInputElement).value)} />
    </label>
  )
}

export function Select ({ label, value, options, onChange }: { label: string, value: string, options: Array<[string, string]>, onChange: (value: string) => void }): JSX.Element {
  return (
    <label class="field">
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {options.map(([v, text]) => <option value={v}>{text}</option>)}
      </select>
    </label>
  )
}

export function PageHead ({ title, children }: { title: string, children?: ComponentChildren }): JSX.Element {
  return (
    <header class="page-head">
      <h1>{title}</h1>
      <div class="page-tools">{children}</div>
    </header>
  )
}

/** A viewer's note where an administrator would see the change buttons. */
export function ViewerNote (): JSX.Element {
  return <p class="muted">You are signed in as a viewer: you can look at everything and change nothing.</p>
}
