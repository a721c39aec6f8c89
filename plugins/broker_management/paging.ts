// Paged listings (SPEC §2.19). v3: `_page` (from 1) and `_limit` →
// `{items, meta: {count, limit, page}}`. v2: `curr_page` (from 1) and
// `page_size` → `{current_page, page_size, total_num, total_page, objects}`.
// Both cap the page at `management.max_row_limit`.
import Joi from 'joi'

export interface Page<T> { items: T[], meta: { count: number, limit: number, page: number } }

export interface PageV2<T> { current_page: number, page_size: number, total_num: number, total_page: number, objects: T[] }

export const pagingQuery = {
  _page: Joi.number().integer().min(1).description('page number, from 1'),
  _limit: Joi.number().integer().min(1).description('rows per page (default management.max_row_limit)')
}

export const pagingQueryV2 = {
  curr_page: Joi.number().integer().min(1).description('page number, from 1'),
  page_size: Joi.number().integer().min(1).description('rows per page (default 20, at most management.max_row_limit)')
}

const count = Joi.number().integer().required()

/** The schema of a v3 page of rows of `row` (for the OpenAPI document). */
export const pageOf = (row: Joi.Schema): Joi.ObjectSchema => Joi.object({ items: Joi.array().items(row).required(), meta: Joi.object({ count, limit: count, page: count }).required() })

/** The schema of a v2 page of rows of `row`. */
export const pageOfV2 = (row: Joi.Schema): Joi.ObjectSchema => Joi.object({ current_page: count, page_size: count, total_num: count, total_page: count, objects: Joi.array().items(row).required() })

/** v2's default page size (EMQ X 2.x) */
export const V2_PAGE_SIZE = 20

function slice<T> (rows: T[], pageNo: number, limit: number): T[] {
  return rows.slice((pageNo - 1) * limit, pageNo * limit)
}

export function page<T> (rows: T[], query: { _page?: number, _limit?: number }, maxRowLimit: number): Page<T> {
  const pageNo = query._page ?? 1
  const limit = Math.min(query._limit ?? maxRowLimit, maxRowLimit)
  return { items: slice(rows, pageNo, limit), meta: { count: rows.length, limit, page: pageNo } }
}

export function pageV2<T> (rows: T[], query: { curr_page?: number, page_size?: number }, maxRowLimit: number): PageV2<T> {
  const pageNo = query.curr_page ?? 1
  const size = Math.min(query.page_size ?? V2_PAGE_SIZE, maxRowLimit)
  return { current_page: pageNo, page_size: size, total_num: rows.length, total_page: Math.ceil(rows.length / size), objects: slice(rows, pageNo, size) }
}
