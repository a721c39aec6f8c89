// The plugin contract (v2): what a plugin module exports and what it is given.
// A plugin is a folder plugins/broker_<name>/ whose index.ts default-exports
// `definePlugin({...})`. Its settings live in etc/plugins/broker_<name>.conf
// (`key = value`, validated by `schema`). `load(ctx)` registers everything it
// opens through `ctx`; the host releases all of it, newest first, when the
// plugin unloads (or when its load fails), even when one release throws.
import type { Server as NetServer, Socket as NetSocket } from 'node:net'
import type { Socket as UdpSocket } from 'node:dgram'
import type { Duplex } from 'node:stream'
import type Joi from 'joi'
import type { HookHandlers, HookName, PublishProperties } from '../hooks/types.js'
import type { Logger } from '../log.js'
import type { CtlCommand } from '../ctl/command.js'
import type { BrokerActions as OperationActions, CodeReplaced, ListenerRecord, NodeOperations, NodeQueries as OperationQueries, PluginRecord } from '../service/operations.js'
import { datatypeMeta, type Described } from './setting-types.js'

/** Durable key → string storage of one plugin, kept in the node's store. */
export interface PluginStore {
  get: (key: string) => Promise<string | undefined>
  put: (key: string, value: string) => Promise<void>
  del: (key: string) => Promise<void>
  /** in key order */
  entries: () => AsyncIterable<[string, string]>
  /**
   * In one step: when `key` holds `expected` (undefined: absent), sets it to
   * `value` (undefined: deletes it) and answers true; otherwise changes
   * nothing and answers false. Atomic across the nodes of a cluster, so two
   * nodes racing for one record cannot both take it.
   */
  swap: (key: string, expected: string | undefined, value: string | undefined) => Promise<boolean>
  /** how many keys it holds: one call in a cluster (Redis HLEN), a key count on one node (LevelDB); the node's stores have it */
  size?: () => Promise<number>
}

export interface PublishRequest {
  topic: string
  payload: string | Buffer
  qos?: 0 | 1 | 2
  retain?: boolean
  /** MQTT 5 properties the message carries to its subscribers (the message expires `messageExpiryInterval` seconds from now) */
  properties?: PublishProperties
}

/** An alarm a plugin raises (SPEC §2.18; shown by the API and `$SYS/brokers/<node>/alarms/…`). */
export interface PluginAlarm {
  /** unique per node; the host clears a plugin's alarms when it unloads */
  id: string
  severity: 'notice' | 'warning' | 'error' | 'critical'
  title: string
  summary: string
}

/** What a plugin may read of the node (lib/service/operations.ts: the facts, not SPEC's presentation); nothing here changes it. */
export type NodeQueries = OperationQueries & {
  /** calls `onChange` with the new value each time the node setting changes at run time; stops when the plugin unloads */
  watch: (key: string, onChange: (value: unknown) => void) => void
}

/** What a plugin may do to the broker's traffic. */
export type BrokerActions = Omit<OperationActions, 'publish'> & {
  /** publish as the node (no client, no ACL check) */
  publish: (message: PublishRequest) => Promise<void>
}

/** A route the management API serves under /api/v3 for a plugin (e.g. `GET /nodes/{node}/recon`). */
export interface PluginRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** hapi-style, under /api/v3: `/delayed/{id}`; with `{node}` the named node of the cluster answers (the management API forwards it) */
  path: string
  /** 'read' routes are open to the viewer role too; default 'write' for anything but GET */
  access?: 'read' | 'write'
  /** one line saying what the route does, for the OpenAPI document (GET /api/v3/openapi.json) */
  summary?: string
  /** joi schemas of the query and the JSON body: a request they refuse is answered 400 (code 107 missing, 108 wrong) before the handler; the handler gets the converted values. The OpenAPI document describes them */
  validate?: { query?: Joi.ObjectSchema, payload?: Joi.Schema }
  /** joi schema of the 200 answer's body, for the OpenAPI document */
  response?: Joi.Schema
  /** answers the body (JSON) of a 200; throw a RouteError for a SPEC §7 failure */
  handler: (request: PluginRouteRequest) => unknown
}

export interface PluginRouteRequest {
  params: Record<string, string>
  query: Record<string, string>
  payload: unknown
}

/** A route failure: `code` is a SPEC §7 code (undefined: none, as the API's own 404s), `status` the HTTP status (default 400). */
export class RouteError extends Error {
  constructor (readonly code: number | undefined, message: string, readonly status = 400) {
    super(message)
    this.name = 'RouteError'
  }
}

/** A plugin route found for a request, with its path parameters. */
export interface PluginRouteMatch { owner: string, route: PluginRoute, params: Record<string, string> }

/** The management API's operations: plugins, settings, banned entries, drain, the cluster; and the routes plugins add. */
export interface Administration {
  readonly node: NodeOperations
  readonly pluginRoutes: {
    match: (method: string, path: string) => PluginRouteMatch | undefined
    /** every route with the plugin that added it (`route`: what it declared, for the OpenAPI document) */
    list: () => Array<{ owner: string, method: string, path: string, route: PluginRoute }>
  }
  /** what a loaded plugin offers through `ctx.provide` (e.g. broker_management's API for the dashboard), read at each call; undefined while it is not loaded */
  provided: <T extends object>(plugin: string) => T | undefined
}

/**
 * The plugins' code, replaced at run time (broker_reloader): narrower than
 * `administration`, it reads the plugin list and swaps one plugin's code.
 */
export interface PluginCode {
  /** the plugins found on this node, with their version and whether each runs */
  plugins: () => Promise<PluginRecord[]>
  /** the folder this node imports the plugin's code from: its built JS (dist/plugins/<name>/), or its sources when the node runs from TypeScript */
  folder: (name: string) => string
  /**
   * Imports the plugin's code afresh and swaps its running load for one of
   * the new code, on `node` (default this node); a failure leaves the old
   * code running and says why. Refusals are the node's operations' errors
   * (`kind`: `not_found`, `failed`, `badrpc`).
   */
  reload: (name: string, node?: string) => Promise<CodeReplaced>
}

/**
 * A retained message as the node hands it to the plugin that keeps the
 * clients' retained messages, and as that plugin gives it back on SUBSCRIBE.
 */
export interface RetainedMessage {
  /** a topic name (no wildcard); never a `$SYS/` one: the node keeps its own */
  topic: string
  /** empty in `store`: the topic's retained message is removed */
  payload: Buffer
  qos: 0 | 1 | 2
  /** the PUBLISH's MQTT 5 properties kept with it: payloadFormatIndicator, contentType, responseTopic, correlationData, userProperties */
  properties?: Record<string, unknown>
  /** ms since the epoch after which it is not delivered: the publisher's Message Expiry Interval on `store`, the keeper's choice on `match` */
  expiresAt?: number
}

/** What a plugin granted `retained` offers to keep the clients' retained messages (broker_retainer). */
export interface RetainedStore {
  /**
   * A PUBLISH with the retain flag (an empty payload clears the topic): true
   * when kept (or cleared), false when refused (a limit). The publisher's
   * acknowledgement waits for a promise; one that rejects is logged and the
   * message stays delivered but not retained.
   */
  store: (message: RetainedMessage) => boolean | Promise<boolean>
  /**
   * The messages a SUBSCRIBE gets for these filters: each as many times as
   * filters match it; a filter starting with `+` or `#` matches no `$` topic
   * [MQTT-4.7.2-1]. Runs once per SUBSCRIBE that has such filters.
   */
  match: (filters: readonly string[]) => Iterable<RetainedMessage> | AsyncIterable<RetainedMessage>
  /** how many it keeps now (the `retained/count` statistics); read often: no work */
  count: () => number
}

/** The `retained` capability: the slot the node's retained messages go through. */
export interface RetainedSlot {
  /** the node's state is shared with other nodes (a cluster): `ctx.store` is the cluster's, and other nodes write retained messages to it */
  readonly shared: boolean
  /**
   * Makes `store` keep the clients' retained messages until the plugin
   * unloads (a node has one keeper; a second is refused). Without a keeper the
   * retain flag is ignored: messages are delivered, nothing is stored or sent
   * on SUBSCRIBE. Retained messages an older install kept in the engine's own
   * store are handed to `store` first (then removed there).
   */
  provide: (store: RetainedStore) => Promise<void>
}

/** What a capability grants; a plugin names the capabilities it needs in its manifest. */
export interface Capabilities {
  administration: Administration
  plugin_code: PluginCode
  retained: RetainedSlot
}
export type CapabilityName = keyof Capabilities

/** The cluster the node is part of; on a node alone, a cluster of itself. */
export interface ClusterView {
  /** the live nodes' names, asked of the cluster now (this node always among them) */
  nodes: () => Promise<string[]>
  /** `run(node)` on this node when another node leaves the cluster (stopped, or silent for three heartbeats); stops at unload */
  onNodeLeft: (run: (node: string) => void) => void
}

/** A counter of one load, shown with the node's metrics (SPEC §2.11 keys first) while the plugin is loaded. */
export interface PluginCounter {
  /** adds `by` (default 1; a negative or non-finite value is ignored) */
  inc: (by?: number) => void
  value: () => number
}

/**
 * What a protocol gateway tells the node about one client's transport: the
 * real peer's, recorded for the connection as a listener records a socket's
 * (hooks' ClientInfo, the connections listing, bans by address, `$SYS`).
 */
export interface GatewayConnection {
  /** the gateway listener's protocol, e.g. `stomp:tcp` (hooks see it as `ClientInfo.protocol`) */
  protocol: string
  /** the gateway listener's id, e.g. `stomp:tcp:default` */
  listener: string
  /** default `external` */
  zone?: string
  /** the peer's address and port */
  ipAddress: string
  port: number
  /** TLS client certificate subject; default `nossl` */
  peercert?: string
  /** the listings' `proto_name`: `STOMP`, `MQTT-SN`, `CoAP`, `LwM2M` */
  protoName: string
  /** the listings' `proto_ver`, e.g. `1.2` */
  protoVer: number | string
}

/** An in-process MQTT connection to the engine, opened by a gateway for one of its clients. */
export interface GatewayLink {
  /** the gateway's end of the MQTT byte stream (the kit's GatewayClient speaks MQTT 5 over it) */
  readonly stream: Duplex
  /** adds bytes of the client's real transport to the node's `bytes/received` and `bytes/sent` */
  countBytes: (received: number, sent: number) => void
}

/** A timer the host clears when the plugin unloads. */
export interface PluginTimer { cancel: () => void }

/** Something the host closes when the plugin unloads: a net/http/tls server, a UDP socket. */
export type PluginServer = NetServer | UdpSocket
/** A connection the host destroys when the plugin unloads, unless it closed before. */
export type PluginSocket = NetSocket | UdpSocket

export interface PluginContext<C> {
  readonly name: string
  /** the plugin's settings, validated and converted by its schema; live settings change in place */
  readonly config: C
  readonly logger: Logger
  /** the install root, for resolving relative file paths in settings */
  readonly root: string
  readonly store: PluginStore
  readonly hooks: {
    /** Higher priority runs first; equal priorities run in data/loaded_plugins order. */
    add: <H extends HookName>(hook: H, handler: HookHandlers[H], priority?: number) => void
  }
  readonly routes: {
    /** served by broker_management while both are loaded */
    add: (route: PluginRoute) => void
  }
  readonly commands: {
    /** a `broker_ctl` command (e.g. `users`) */
    add: (command: CtlCommand) => void
  }
  readonly listeners: {
    /** a listener the plugin serves, listed with the node's (SPEC §2.10); `report` is read at each listing */
    add: (report: () => ListenerRecord) => void
  }
  readonly gateway: {
    /**
     * Opens an in-process MQTT connection to the engine for a client of a
     * protocol gateway: the engine handles it like a listener's socket (auth
     * chain, ACL, bans, listings, metrics, `$SYS` presence, kicks), recorded
     * with `connection`'s transport facts. Destroyed when the plugin unloads,
     * unless closed before. Use it through the kit's `GatewayClient`.
     */
    connect: (connection: GatewayConnection) => GatewayLink
  }
  readonly metrics: {
    /**
     * A counter listed with the node's metrics (`GET /api/v3/nodes/:node/metrics`, Prometheus as
     * `broker_<key, / and . as _>_total`) until the plugin unloads. `key`: `[a-z0-9_/.]+`, e.g.
     * `messages/delayed`; throws for a SPEC metric key or one another loaded plugin counts.
     */
    counter: (key: string, help: string) => PluginCounter
  }
  readonly alarms: {
    /** false when it is raised already */
    raise: (alarm: PluginAlarm) => boolean
    /** false when it was not raised */
    clear: (id: string) => boolean
  }
  readonly timers: {
    setTimeout: (run: () => void, ms: number) => PluginTimer
    setInterval: (run: () => void, ms: number) => PluginTimer
  }
  readonly servers: {
    /** closed (and its open connections destroyed) when the plugin unloads */
    add: <S extends PluginServer>(server: S) => S
  }
  readonly sockets: {
    /** destroyed when the plugin unloads, unless it closed before */
    add: <S extends PluginSocket>(socket: S) => S
  }
  /** `run(value)` when a live setting of this plugin (schema `.meta({ live: true })`) changes at run time */
  onSettingChange: <K extends keyof C & string>(key: K, run: (value: C[K]) => void) => void
  /**
   * Offers an API of this load to the node's other parts while the plugin is
   * loaded (e.g. broker_auth_username's user table, which the management API
   * calls): the host hands it out by plugin name, and drops it at unload.
   */
  provide: (api: object) => void
  /** extra cleanup, run with the other releases (newest first) when the plugin unloads */
  onUnload: (release: () => void | Promise<void>) => void
  readonly node: NodeQueries
  readonly broker: BrokerActions
  readonly cluster: ClusterView
  /** a capability the manifest names; throws for one it does not */
  capability: <N extends CapabilityName>(name: N) => Capabilities[N]
}

export interface BrokerPlugin<C = Record<string, unknown>> {
  name: string
  version: string
  description: string
  /**
   * a Joi object over the flat setting keys, e.g. `'auth.http.auth_req'`; `.meta({ live: true })` on a key makes it live,
   * `.meta({ datatype: … })` shows it in the node's configuration API (`configItemKeys`)
   */
  schema: Joi.ObjectSchema<C>
  /** capabilities beyond the plugin view, granted by name (`administration`: broker_management; `plugin_code`: broker_reloader; `retained`: broker_retainer) */
  capabilities?: readonly CapabilityName[]
  /** registers everything through `ctx`; what it opens is released by the host */
  load: (ctx: PluginContext<C>) => void | Promise<void>
  /**
   * What `load` would refuse beyond the schema (a file it reads, a key it
   * parses), checked before settings changed at run time are saved: throws
   * an Error saying why. `root` is the install root relative paths start at.
   */
  check?: (config: C, root: string) => void | Promise<void>
}

/** Types a plugin module's default export. */
export function definePlugin<C> (plugin: BrokerPlugin<C>): BrokerPlugin<C> {
  return plugin
}

/**
 * The keys of a plugin schema shown by the node's configuration API (SPEC
 * §2.14, app = the plugin's name), each with its datatype: those marked
 * `.meta({ datatype: 'bytesize' })` (`string`, `integer`, `enum`, `duration`,
 * `bytesize`). `PUT /configs/<plugin>` changes them as the plugin's settings API does.
 */
export function configItemKeys (schema: Joi.ObjectSchema): Map<string, string> {
  const keys = (schema.describe().keys ?? {}) as Record<string, Described>
  const items = new Map<string, string>()
  for (const [key, described] of Object.entries(keys)) {
    const datatype = datatypeMeta(described)
    if (datatype !== undefined) items.set(key, datatype)
  }
  return items
}

/** The keys of a plugin schema marked `.meta({ live: true })`. */
export function liveKeys (schema: Joi.ObjectSchema): Set<string> {
  const keys = (schema.describe().keys ?? {}) as Record<string, { metas?: Array<{ live?: boolean }> }>
  return new Set(Object.entries(keys).filter(([, d]) => d.metas?.some((m) => m.live === true)).map(([k]) => k))
}
