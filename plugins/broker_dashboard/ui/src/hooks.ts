// Small hooks the pages share: a loaded value with its error and a reload,
// polling, and the page's route from the location hash.
import type { RefObject } from 'preact'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'

export interface Loaded<T> {
  data: T | undefined
  error: string | undefined
  loading: boolean
  reload: () => Promise<void>
}

/** Runs `load` now and whenever `deps` change; `reload` runs it again (keeping the data shown meanwhile). */
export function useLoad<T> (load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [loading, setLoading] = useState(true)
  const generation = useRef(0)
  const reload = useCallback(async () => {
    const mine = ++generation.current
    setLoading(true)
    try {
      const value = await load()
      if (mine !== generation.current) return
      setData(value)
      setError(undefined)
    } catch (err) {
      if (mine !== generation.current) return
      setError((err as Error).message)
    } finally {
      if (mine === generation.current) setLoading(false)
    }
  }, deps)
  useEffect(() => { void reload() }, [reload])
  return { data, error, loading, reload }
}

/**
 * Calls `tick` every `ms` while the component is shown and the tab visible, skipping a beat while the last
 * tick's promise is pending: a reload discards the answer of the one before it, so an API slower than `ms`
 * would otherwise never show a new value.
 */
export function usePoll (tick: () => Promise<unknown>, ms: number): void {
  const latest = useRef(tick)
  latest.current = tick
  useEffect(() => {
    let pending = false
    const timer = setInterval(() => {
      if (pending || document.visibilityState === 'hidden') return
      pending = true
      void latest.current().finally(() => { pending = false })
    }, ms)
    return () => clearInterval(timer)
  }, [ms])
}

/** The route: the location hash without `#`, `/` when none. */
export function useRoute (): string {
  const read = (): string => decodeURIComponent(location.hash.replace(/^#/, '')) || '/'
  const [route, setRoute] = useState(read)
  useEffect(() => {
    const changed = (): void => setRoute(read())
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return route
}

/** A panel opened below a list: scrolled into view (and focused, for the keyboard) when `what` changes. */
export function useScrolledTo (what: string): RefObject<HTMLElement | null> {
  const ref = useRef<HTMLElement>(null)
  useEffect(() => {
    const el = ref.current
    if (el === null) return
    el.tabIndex = -1
    el.scrollIntoView({ block: 'start' })
    el.focus({ preventScroll: true })
  }, [what])
  return ref
}
