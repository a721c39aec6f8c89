// A node with broker_management on a free port, and a fetch-based client for it.
import { freePort, startBroker, type ListenerKind, type TestBroker } from '../../../test/helpers/broker.js'

export interface ApiNode {
  broker: TestBroker
  base: string
  mqttUrl: string
  /** a request with the default application's credentials unless `auth` is given (null: none) */
  call: (method: string, path: string, options?: { body?: unknown, raw?: string, auth?: string | null }) => Promise<{ status: number, body: unknown, headers: Headers }>
  stop: () => Promise<void>
}

export const DEFAULT_AUTH = 'admin:public'

/** `others`: more plugins to load after broker_management, with their settings. */
export async function startApiNode (settings: Record<string, string | number> = {}, plugin: Record<string, string | number> = {}, listeners: ListenerKind[] = ['tcp'], others: Record<string, Record<string, string | number>> = {}): Promise<ApiNode> {
  const port = await freePort()
  const broker = await startBroker(settings, listeners, undefined, {
    plugins: { broker_management: { 'management.listener.http': `127.0.0.1:${port}`, ...plugin }, ...others }
  })
  const base = `http://127.0.0.1:${port}/api/v3`
  return {
    broker,
    base,
    mqttUrl: `mqtt://127.0.0.1:${broker.port()}`,
    async call (method, path, { body, raw, auth = DEFAULT_AUTH } = {}) {
      const headers: Record<string, string> = {}
      if (auth !== null) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`
      let payload: string | undefined = raw
      if (body !== undefined) payload = JSON.stringify(body)
      if (payload !== undefined) headers['content-type'] = 'application/json'
      const res = await fetch(base + path, { method, headers, body: payload })
      const text = await res.text()
      return { status: res.status, body: parseJson(text), headers: res.headers }
    },
    stop: async () => await broker.stop()
  }
}

/** The JSON value of a body, or the text itself when it is not JSON. */
function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
