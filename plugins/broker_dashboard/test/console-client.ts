// A browser's view of the console for the tests: plain HTTP (fetch) that
// keeps the session cookie the login sets and sends the CSRF token it got.
export interface Answer { status: number, body: unknown, headers: Headers, text: string }

export class ConsoleClient {
  cookie: string | undefined
  csrf: string | undefined

  constructor (readonly base: string) {}

  /** `csrf`, `cookie`: instead of the session's; null: none */
  async call (method: string, path: string, body?: unknown, { csrf = this.csrf, cookie = this.cookie }: { csrf?: string | null, cookie?: string | null } = {}): Promise<Answer> {
    const headers: Record<string, string> = {}
    if (cookie !== undefined && cookie !== null) headers.cookie = cookie
    if (csrf !== undefined && csrf !== null) headers['x-csrf-token'] = csrf
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: the text itself
    }
    return { status: res.status, body: parsed, headers: res.headers, text }
  }

  /** logs in and keeps the cookie and CSRF token */
  async login (username: string, password: string): Promise<Answer> {
    const answer = await this.call('POST', '/api/login', { username, password })
    const setCookie = answer.headers.get('set-cookie')
    if (answer.status === 200 && setCookie !== null) {
      this.cookie = setCookie.split(';')[0]
      this.csrf = (answer.body as { csrf_token: string }).csrf_token
    }
    return answer
  }
}
