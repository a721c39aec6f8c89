// broker_lwm2m: the LwM2M 1.0 gateway over CoAP/UDP (EMQ X 3.x emqx_lwm2m).
// Devices register on its UDP port (`lwm2m.port`, 5783 by default so it runs
// beside broker_coap's 5683); each registered endpoint is a client of the
// broker (client id = endpoint name, proto_name LwM2M) subscribed to its
// command topic. Commands published there as EMQ X's JSON become CoAP
// requests to the device; its answers, notifications and registrations are
// published on the response, notify, register and update topics. The CoAP
// stack is the npm `coap` package (transport.ts); device.ts is one
// registration; README.md says what maps to what.
import { createSocket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import type { IncomingMessage, OutgoingMessage } from 'coap'
import { definePlugin, listenOn, plainAddress, type PluginContext } from '../../lib/plugin-kit/index.js'
import { Device, PROTOCOL, type CloseReason, type Lwm2mCounters } from './device.js'
import { loadObjects } from './objects.js'
import { parseRegister, parseUpdate, queryOf, RegistrationError } from './registration.js'
import { checkConfig, schema, type Lwm2mConfig } from './settings.js'
import { openTransport } from './transport.js'

const VERSION = '0.1.0'
/** bytes of answers the CoAP server keeps to resend for duplicate requests (RFC 7252 §4.5) */
const RESPONSE_CACHE_BYTES = 4 * 1024 * 1024

interface Registrations {
  byEndpoint: Map<string, Device>
  byLocation: Map<string, Device>
  byPeer: Map<string, Device>
  closed: number
  kicked: number
}

const peerKey = (address: string, port: number): string => `${address}|${port}`

export default definePlugin<Lwm2mConfig>({
  name: 'broker_lwm2m',
  version: VERSION,
  description: 'LwM2M 1.0 gateway over CoAP/UDP: device management commands and notifications as MQTT messages',
  schema,

  async check (config, root) {
    checkConfig(config)
    await loadObjects(root, config['lwm2m.xml_dir'])
  },

  async load (ctx) {
    checkConfig(ctx.config)
    const registry = await loadObjects(ctx.root, ctx.config['lwm2m.xml_dir'])
    ctx.logger.info({ objects: registry.size }, 'LwM2M object definitions loaded')
    const counters: Lwm2mCounters = {
      malformed: ctx.metrics.counter('lwm2m/datagrams/malformed', 'LwM2M datagrams dropped: not CoAP'),
      tooLarge: ctx.metrics.counter('lwm2m/datagrams/too_large', 'LwM2M datagrams dropped: over the size limit'),
      registered: ctx.metrics.counter('lwm2m/registrations', 'LwM2M Register requests accepted'),
      expired: ctx.metrics.counter('lwm2m/registrations/expired', 'LwM2M registrations ended by their lifetime'),
      commands: ctx.metrics.counter('lwm2m/commands/sent', 'LwM2M requests sent to devices'),
      refused: ctx.metrics.counter('lwm2m/commands/refused', 'LwM2M commands refused by the gateway (not valid, too many waiting)'),
      notifications: ctx.metrics.counter('lwm2m/notifications', 'LwM2M notifications received'),
      denied: ctx.metrics.counter('lwm2m/messages/refused', 'LwM2M uplink messages the broker refused (ACL)'),
      dropped: ctx.metrics.counter('lwm2m/messages/dropped', 'LwM2M uplink messages dropped: over 1024 of one device awaiting the broker')
    }
    const regs: Registrations = { byEndpoint: new Map(), byLocation: new Map(), byPeer: new Map(), closed: 0, kicked: 0 }

    const address = listenOn(ctx.config['lwm2m.port'])
    const socket = ctx.sockets.add(createSocket({ type: isIPv6(address.host) ? 'udp6' : 'udp4' }))
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(address.port, address.host, () => {
        socket.off('error', reject)
        resolve()
      })
    })
    socket.on('error', (err) => ctx.logger.warn({ err }, 'LwM2M socket error'))
    address.port = socket.address().port

    const transport = openTransport(socket, {
      dropped: (reason) => (reason === 'malformed' ? counters.malformed : counters.tooLarge).inc(),
      bytes: (host, port, received, sent) => regs.byPeer.get(peerKey(plainAddress(host), port))?.countBytes(received, sent)
    }, { piggybackReplyMs: 50, cacheSize: RESPONSE_CACHE_BYTES })

    const deps = {
      ctx,
      agent: transport.agent,
      registry,
      counters,
      closed: (device: Device, reason: CloseReason) => {
        if (regs.byEndpoint.get(device.ep) === device) regs.byEndpoint.delete(device.ep)
        regs.byLocation.delete(device.location)
        const peer = peerKey(device.address, device.port)
        if (regs.byPeer.get(peer) === device) regs.byPeer.delete(peer)
        regs.closed++
        if (reason === 'kicked') regs.kicked++
      }
    }
    ctx.onUnload(() => {
      for (const device of [...regs.byEndpoint.values()]) device.close('link_closed')
      transport.close()
    })

    transport.server.on('request', (req: IncomingMessage, res: OutgoingMessage) => {
      handle(ctx, deps, regs, req, res).catch((err: Error) => {
        ctx.logger.error({ err }, 'LwM2M request handling failed')
        reply(res, '5.00', 'internal error')
      })
    })

    ctx.logger.info({ address: `${address.host}:${address.port}` }, 'LwM2M listener started')
    ctx.listeners.add(() => ({
      protocol: PROTOCOL,
      listen_on: `${address.host}:${address.port}`,
      acceptors: 1,
      max_conns: ctx.config['lwm2m.max_connections'],
      current_conns: regs.byEndpoint.size,
      shutdown_count: regs.closed === 0 ? [] : { closed: regs.closed, kicked: regs.kicked }
    }))
  }
})

function reply (res: OutgoingMessage, code: string, diagnostic?: string): void {
  res.code = code
  res.end(diagnostic === undefined ? undefined : Buffer.from(diagnostic))
}

function optionStrings (req: IncomingMessage, name: string): string[] {
  const options = (req as unknown as { options?: Array<{ name: string | number, value: unknown }> }).options ?? []
  return options.filter((o) => o.name === name).map((o) => Buffer.isBuffer(o.value) ? o.value.toString('utf8') : String(o.value))
}

/** A device's request to the Registration interface: Register, Update, De-register. */
async function handle (ctx: PluginContext<Lwm2mConfig>, deps: ConstructorParameters<typeof Device>[0], regs: Registrations, req: IncomingMessage, res: OutgoingMessage): Promise<void> {
  const path = optionStrings(req, 'Uri-Path')
  const method = req.method
  if (path[0] !== 'rd' || path.length > 2) {
    reply(res, '4.04', 'the registration interface is /rd')
    return
  }
  const address = plainAddress(req.rsinfo.address)
  const port = req.rsinfo.port
  const payload = Buffer.isBuffer(req.payload) ? req.payload : Buffer.alloc(0)
  const query = queryOf(optionStrings(req, 'Uri-Query'))
  const lifetimeRefusal = (lt: number | undefined): string | undefined => {
    if (lt === undefined) return undefined
    const min = ctx.config['lwm2m.lifetime_min']
    const max = ctx.config['lwm2m.lifetime_max']
    return lt * 1000 < min || lt * 1000 > max ? `lifetime ${lt} s is outside ${min / 1000}-${max / 1000} s` : undefined
  }

  /** A Register or Update as parsed, or why it is refused with 4.00 (malformed, or a lifetime out of bounds). */
  function checked<T extends { lt?: number }> (parse: () => T): T | string {
    let parsed: T
    try {
      parsed = parse()
    } catch (err) {
      if (!(err instanceof RegistrationError)) throw err
      return err.message
    }
    return lifetimeRefusal(parsed.lt) ?? parsed
  }

  if (path.length === 1) {
    if (method !== 'POST') {
      reply(res, '4.05', 'Register is POST /rd')
      return
    }
    const registration = checked(() => parseRegister(query, payload))
    if (typeof registration === 'string') {
      reply(res, '4.00', registration)
      return
    }
    const existing = regs.byEndpoint.get(registration.ep)
    if (existing === undefined && regs.byEndpoint.size >= ctx.config['lwm2m.max_connections']) {
      reply(res, '5.03', 'too many registered clients')
      return
    }
    // a second Register of an endpoint replaces the first (the device restarted)
    existing?.close('replaced')
    const device = new Device(deps, registration, address, port)
    regs.byEndpoint.set(device.ep, device)
    regs.byLocation.set(device.location, device)
    regs.byPeer.set(peerKey(address, port), device)
    let failure
    try {
      failure = await device.connect()
    } catch (err) {
      device.close('refused')
      throw err
    }
    if (failure !== undefined) {
      device.close('refused')
      reply(res, failure.code, failure.reason)
      return
    }
    deps.counters.registered.inc()
    res.code = '2.01'
    res.setOption('Location-Path', [Buffer.from('rd'), Buffer.from(device.location)])
    res.end()
    device.announce('register')
    if (ctx.config['lwm2m.auto_observe']) device.autoObserve()
    return
  }

  const device = regs.byLocation.get(path[1])
  if (device === undefined || !device.open) {
    reply(res, '4.04', 'no such registration')
    return
  }
  if (method === 'DELETE') {
    device.close('deregistered')
    reply(res, '2.02')
    return
  }
  if (method !== 'POST') {
    reply(res, '4.05', 'Update is POST /rd/<location>, De-register DELETE')
    return
  }
  const update = checked(() => parseUpdate(query, payload))
  if (typeof update === 'string') {
    reply(res, '4.00', update)
    return
  }
  const before = peerKey(device.address, device.port)
  if (regs.byPeer.get(before) === device) regs.byPeer.delete(before)
  regs.byPeer.set(peerKey(address, port), device)
  reply(res, '2.04')
  device.update(update, address, port)
  device.announce('update')
}
