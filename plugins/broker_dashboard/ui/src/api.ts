// The dashboard's one way to the server: same-origin JSON requests carrying
// the session cookie, with the CSRF token on every change. A refusal becomes
// an ApiError holding the server's own message, which the pages show as is.

export class ApiError extends Error {
  constructor (readonly status: number, message: string, readonly code?: number) {
    super(message)
  }
}

export interface Me { username: string, role: 'administrator' | 'viewer' | string, csrf_token: string }

interface ApiState {
  csrf: string
  /** called when the server answers 401: the session has ended */
  onSignedOut: () => void
}

const state: ApiState = { csrf: '', onSignedOut: () => {} }

export function setCsrfToken (token: string): void { state.csrf = token }
export function onSignedOut (handler: () => void): void { state.onSignedOut = handler }

function messageOf (status: number, body: unknown, text: string): string {
  if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message
  }
  return text !== '' ? text : `HTTP ${status}`
}

/** A request to the dashboard server; `path` from the site's root (`/api/v3/nodes/`). */
export async function request<T = unknown> (method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (method !== 'GET') headers['x-csrf-token'] = state.csrf
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' })
  } catch (err) {
    throw new ApiError(0, `the server cannot be reached (${(err as Error).message})`)
  }
  const text = await res.text()
  let parsed: unknown = text
  try { parsed = text === '' ? undefined : JSON.parse(text) } catch { /* a text answer */ }
  if (!res.ok) {
    const code = typeof parsed === 'object' && parsed !== null ? (parsed as { code?: number }).code : undefined
    if (res.status === 401 && !path.startsWith('/api/login') && !path.startsWith('/api/me/password')) state.onSignedOut()
    throw new ApiError(res.status, messageOf(res.status, parsed, text), code)
  }
  return parsed as T
}

/** The management API v3 (SPEC §4.2), under /api/v3. */
export const v3 = {
  get: async <T = unknown>(path: string): Promise<T> => await request<T>('GET', `/api/v3${path}`),
  post: async <T = unknown>(path: string, body?: unknown): Promise<T> => await request<T>('POST', `/api/v3${path}`, body),
  put: async <T = unknown>(path: string, body?: unknown): Promise<T> => await request<T>('PUT', `/api/v3${path}`, body),
  del: async <T = unknown>(path: string): Promise<T> => await request<T>('DELETE', `/api/v3${path}`)
}

/** A paged v3 listing (SPEC §2.19). */
export interface Page<T> { items: T[], meta: { count: number, limit: number, page: number } }

/** One node's entry of a cluster-wide listing, or the entry of a node that did not answer. */
export type ByNode<K extends string, T> = Array<({ node: string } & Record<K, T>) | { node: string, error: string, message: string }>

export const enc = encodeURIComponent
