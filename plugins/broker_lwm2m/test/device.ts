// The LwM2M device of the tests, written from the LwM2M 1.0 TS on the npm
// `coap` package: one UDP socket serving its objects (a coap Server:
// Read, Discover, Write, Write-Attributes, Execute, Create, Delete,
// Observe) and sending its Register / Update / De-register (a coap Agent
// on the same socket, as a device's registration comes from the port it
// serves on). Reads answer in plain text for one resource, TLV for an
// instance, LwM2M JSON under object 4, opaque for an Opaque resource, or
// the format the request's Accept asks for.
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import { Agent, Server, type IncomingMessage, type OutgoingMessage, type ObserveWriteStream } from 'coap'
import { encodeJson } from '../lwm2m-json.js'
import { decodeTlv, encodeTlv } from '../tlv.js'
import { encodeText } from '../text.js'
import { parseObjectXml, ObjectRegistry } from '../objects.js'
import { FORMAT, formatPath, parsePath, type Value } from '../values.js'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const XML_DIR = fileURLToPath(new URL('../../../etc/lwm2m_xml/', import.meta.url))

/** The object definitions, read here as a device has them built in. */
export function definitions (): ObjectRegistry {
  const registry = new ObjectRegistry()
  for (const name of readdirSync(XML_DIR)) for (const def of parseObjectXml(readFileSync(join(XML_DIR, name), 'utf8'))) registry.add(def)
  return registry
}

export interface Answer { code: string, payload: Buffer, location: string[] }

export interface Received { method: string, path: string, query: string[], payload: Buffer, format: unknown }

export class Lwm2mDevice {
  readonly socket: Socket
  readonly registry = definitions()
  /** resource (instance) path → value */
  readonly values = new Map<string, Value>()
  /** the requests the gateway sent, in order */
  readonly received: Received[] = []
  readonly observers = new Map<string, ObserveWriteStream>()
  #server: Server
  #agent: Agent
  location: string[] = []
  /** answers held back (a device that does not answer) */
  silent = false

  private constructor (readonly ep: string, readonly gatewayPort: number, socket: Socket) {
    this.socket = socket
    this.#server = new Server({ piggybackReplyMs: 20 })
    this.#server.listen(socket)
    this.#server.on('request', (req: IncomingMessage, res: OutgoingMessage) => this.#request(req, res))
    this.#agent = new Agent({ socket })
    const set = (path: string, value: Value): void => { this.values.set(path, value) }
    set('/1/0/0', 1)
    set('/1/0/1', 60)
    set('/1/0/7', 'U')
    set('/3/0/0', 'Open Mobile Alliance')
    set('/3/0/1', 'Lightweight M2M Client')
    set('/3/0/2', '345000123')
    set('/3/0/3', '1.0')
    set('/3/0/6/0', 1)
    set('/3/0/6/1', 5)
    set('/3/0/7/0', 3800)
    set('/3/0/7/1', 5000)
    set('/3/0/9', 100)
    set('/3/0/13', 1367491215)
    set('/3/0/14', '+02:00')
    set('/3/0/16', 'U')
    set('/4/0/0', 0)
    set('/4/0/2', -61)
    set('/4/0/4/0', '10.0.0.7')
    set('/6/0/0', 43.5723)
    set('/6/0/1', 153.2176)
    set('/6/0/4', Buffer.from([0x01, 0x02, 0xfe]).toString('base64'))
    set('/6/0/5', 1367491215)
  }

  static async start (ep: string, gatewayPort: number): Promise<Lwm2mDevice> {
    const socket = createSocket('udp4')
    socket.bind(0, '127.0.0.1')
    await once(socket, 'listening')
    return new Lwm2mDevice(ep, gatewayPort, socket)
  }

  get port (): number {
    return this.socket.address().port
  }

  /** One request to the gateway; resolves with its answer. */
  async send (method: 'POST' | 'DELETE' | 'GET', pathname: string, query?: string, payload?: Buffer): Promise<Answer> {
    const req = this.#agent.request({ hostname: '127.0.0.1', port: this.gatewayPort, method, pathname, ...(query === undefined ? {} : { query }), confirmable: true })
    if (payload !== undefined) req.setOption('Content-Format', 'application/link-format')
    const answer = new Promise<Answer>((resolve, reject) => {
      req.on('response', (res: IncomingMessage) => {
        const options = (res as unknown as { options?: Array<{ name: string, value: unknown }> }).options ?? []
        resolve({ code: String(res.code), payload: res.payload, location: options.filter((o) => o.name === 'Location-Path').map((o) => String(o.value)) })
      })
      req.on('error', reject)
      req.on('timeout', reject)
    })
    req.end(payload)
    return await answer
  }

  async register (options: { lt?: number, b?: string, objects?: string, extra?: string } = {}): Promise<Answer> {
    const query = [`ep=${this.ep}`, `lt=${options.lt ?? 60}`, 'lwm2m=1.0', `b=${options.b ?? 'U'}`, ...(options.extra === undefined ? [] : [options.extra])].join('&')
    const answer = await this.send('POST', '/rd', query, Buffer.from(options.objects ?? '</>;rt="oma.lwm2m",</1/0>,</3/0>,</4/0>,</6/0>'))
    if (answer.code === '2.01') this.location = answer.location
    return answer
  }

  async update (query?: string, payload?: Buffer): Promise<Answer> {
    return await this.send('POST', `/${this.location.join('/')}`, query, payload)
  }

  async deregister (): Promise<Answer> {
    return await this.send('DELETE', `/${this.location.join('/')}`)
  }

  /** Sends a notification of `path`'s current value to its observer. */
  notify (path: string): void {
    const observer = this.observers.get(path)
    if (observer === undefined) throw new Error(`nobody observes ${path}`)
    const { payload, format } = this.#read(parsePath(path)!, undefined)
    observer.setOption('Content-Format', format)
    observer.write(payload)
  }

  async close (): Promise<void> {
    for (const observer of this.observers.values()) observer.end()
    this.#agent.close()
    this.#server.close()
    await new Promise<void>((resolve) => this.socket.close(() => resolve()))
  }

  #request (req: IncomingMessage, res: OutgoingMessage): void {
    const options = (req as unknown as { options: Array<{ name: string, value: unknown }> }).options
    const strings = (name: string): string[] => options.filter((o) => o.name === name).map((o) => Buffer.isBuffer(o.value) ? o.value.toString() : String(o.value))
    const pathText = `/${strings('Uri-Path').join('/')}`
    const query = strings('Uri-Query')
    this.received.push({ method: req.method, path: pathText, query, payload: req.payload, format: req.headers['Content-Format'] })
    if (this.silent) return
    const path = parsePath(pathText)
    const done = (code: string, payload?: Buffer): void => {
      res.code = code
      res.end(payload)
    }
    if (path === undefined || !this.#exists(path)) {
      done(req.method === 'POST' && path?.length === 1 ? '2.01' : '4.04')
      return
    }
    const accept = req.headers.Accept
    switch (req.method) {
      case 'GET': {
        if (accept === 'application/link-format') {
          res.setOption('Content-Format', 'application/link-format')
          done('2.05', Buffer.from(this.#links(path)))
          return
        }
        const { payload, format } = this.#read(path, accept)
        res.setOption('Content-Format', format)
        const observe = req.headers.Observe
        if (observe === 0) {
          const stream = res as unknown as ObserveWriteStream
          this.observers.set(pathText, stream)
          stream.on('finish', () => { if (this.observers.get(pathText) === stream) this.observers.delete(pathText) })
          stream.write(payload)
          return
        }
        if (observe === 1) this.observers.get(pathText)?.end()
        done('2.05', payload)
        return
      }
      case 'PUT':
        if (req.payload.length === 0) {
          done('2.04')
          return
        }
        for (const entry of decodeTlv(req.payload, path, this.registry.typeOf)) this.values.set(entry.path, entry.value)
        done('2.04')
        return
      case 'POST':
        if (path.length === 3) {
          done(this.registry.get(path[0])?.resources.get(path[2])?.operations === 'E' ? '2.04' : '4.05')
          return
        }
        for (const entry of decodeTlv(req.payload, path, this.registry.typeOf)) this.values.set(entry.path, entry.value)
        done(path.length === 1 ? '2.01' : '2.04')
        return
      case 'DELETE':
        for (const key of [...this.values.keys()]) if (key === pathText || key.startsWith(`${pathText}/`)) this.values.delete(key)
        done('2.02')
        return
      default:
        done('4.05')
    }
  }

  #exists (path: number[]): boolean {
    const prefix = formatPath(path)
    if (path.length === 3 && this.registry.get(path[0])?.resources.get(path[2])?.operations === 'E') return true
    return [...this.values.keys()].some((key) => key === prefix || key.startsWith(`${prefix}/`))
  }

  #entries (path: number[]): Array<{ path: number[], value: Value }> {
    const prefix = formatPath(path)
    return [...this.values].filter(([key]) => key === prefix || key.startsWith(`${prefix}/`)).map(([key, value]) => ({ path: parsePath(key)!, value }))
  }

  #read (path: number[], accept: unknown): { payload: Buffer, format: string } {
    const entries = this.#entries(path)
    const typeOf = this.registry.typeOf
    const wanted = typeof accept === 'string' ? accept : path[0] === 4 ? 'application/vnd.oma.lwm2m+json' : path.length >= 3 && entries.length === 1 && formatPath(entries[0].path) === formatPath(path) ? (typeOf(path[0], path[2]) === 'Opaque' ? 'application/octet-stream' : 'text/plain') : 'application/vnd.oma.lwm2m+tlv'
    switch (wanted) {
      case 'text/plain': return { payload: encodeText(entries[0].value), format: wanted }
      case 'application/octet-stream': return { payload: Buffer.from(String(entries[0].value), 'base64'), format: wanted }
      case 'application/vnd.oma.lwm2m+json': return { payload: encodeJson(path, entries, typeOf), format: wanted }
      default: return { payload: encodeTlv(path.length === 1 ? [path[0], 0] : path, entries, typeOf), format: 'application/vnd.oma.lwm2m+tlv' }
    }
  }

  #links (path: number[]): string {
    const prefix = formatPath(path)
    const resources = new Set<string>()
    for (const key of this.values.keys()) if (key.startsWith(`${prefix}/`) || key === prefix) resources.add(key.split('/').slice(0, 4).join('/'))
    return [`<${prefix}>`, ...[...resources].sort().map((r) => `<${r}>`)].join(',')
  }
}

export { FORMAT }
