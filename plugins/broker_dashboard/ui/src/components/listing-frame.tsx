// The frame of a searchable, paged listing page (Clients, Subscriptions,
// Topics): the title with the search and a refresh, the API's error, the
// page's table (children), and the pager.
import type { ComponentChildren, JSX } from 'preact'
import type { Listing } from '../listing.js'
import { Action, ErrorLine, Field, PageHead, Pager } from './ui.js'

export function ListingFrame<T> ({ title, placeholder, list, children }: { title: string, placeholder: string, list: Listing<T>, children: ComponentChildren }): JSX.Element {
  return (
    <>
      <PageHead title={title}>
        <Field label="Search" type="search" placeholder={placeholder} value={list.search} onInput={list.setSearch} />
        <Action label="Refresh" busy="Refreshing…" run={list.reload} />
      </PageHead>
      <ErrorLine message={list.error} />
      {children}
      {list.data !== undefined && <Pager page={list.page} limit={list.data.meta.limit} count={list.data.meta.count} onPage={list.setPage} />}
    </>
  )
}
