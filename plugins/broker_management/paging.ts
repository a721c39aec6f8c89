// v3 paged listings (SPEC §2.19): `_page` (from 1) and `_limit` → `{items, meta: {count, limit, page}}`.
import Joi from 'joi'

export interface Page<T> { items: T[], meta: { count: number, limit: number, page: number } }

export const pagingQuery = {
  _page: Joi.number().integer().min(1).description('page number, from 1'),
  _limit: Joi.number().integer().min(1).description('rows per page (default management.max_row_limit)')
}

export function page<T> (rows: T[], query: { _page?: number, _limit?: number }, maxRowLimit: number): Page<T> {
  const pageNo = query._page ?? 1
  const limit = Math.min(query._limit ?? maxRowLimit, maxRowLimit)
  return { items: rows.slice((pageNo - 1) * limit, pageNo * limit), meta: { count: rows.length, limit, page: pageNo } }
}
