// A listing with search and paging. Without a search the API pages it
// (`_page`, `_limit`); the API has no search, so with one the whole listing
// (up to management.max_row_limit rows) is read once and filtered and paged here.
import { useState } from 'preact/hooks'
import { v3, type Page } from './api.js'
import { useLoad, type Loaded } from './hooks.js'

export const PAGE_SIZE = 20

export interface Listing<T> extends Loaded<Page<T>> {
  search: string
  setSearch: (text: string) => void
  page: number
  setPage: (page: number) => void
}

/** `path`: the v3 listing (`/connections/`); `matches`: whether a row answers the search text (lower case). */
export function useListing<T> (path: string, matches: (row: T, text: string) => boolean): Listing<T> {
  const [search, setSearchText] = useState('')
  const [page, setPage] = useState(1)
  const text = search.trim().toLowerCase()
  const loaded = useLoad(async () => {
    if (text === '') return await v3.get<Page<T>>(`${path}?_page=${page}&_limit=${PAGE_SIZE}`)
    const all = await v3.get<Page<T>>(path)
    const found = all.items.filter((row) => matches(row, text))
    return { items: found.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE), meta: { count: found.length, limit: PAGE_SIZE, page } }
  }, [path, text, page])
  const setSearch = (value: string): void => { setSearchText(value); setPage(1) }
  return { ...loaded, search, setSearch, page, setPage }
}

/** Whether any of the fields holds the (lower-case) text. */
export function anyHolds (text: string, ...fields: Array<string | number | undefined>): boolean {
  return fields.some((f) => f !== undefined && String(f).toLowerCase().includes(text))
}
