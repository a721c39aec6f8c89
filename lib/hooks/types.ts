// The hook points (EMQ X names) and what each handler receives and returns.
// Chain hooks (`client.authenticate`, `client.check_acl`,
// `client.enhanced_auth`) answer allow, deny or ignore (or continue an
// exchange), plainly or with a promise; the first answer that is not an
// ignore ends the chain (lib/hooks/chain.ts runs them). The others are
// notifications: their return value is ignored and an error is only logged.

/** What the node knows about a connecting or connected client. */
export interface ClientInfo {
  clientId: string
  username?: string
  /** client address as the listener saw it (`127.0.0.1`, `::1`) */
  ipAddress: string
  port: number
  /** `mqtt:tcp` | `mqtt:ssl` | `mqtt:ws` | `mqtt:wss`; a protocol gateway's (`stomp:tcp`) */
  protocol: string
  /** MQTT protocol level: 3, 4 or 5 (a gateway's client: 5, its link to the engine) */
  protoVer: number
  /** a protocol gateway's client: its protocol and version as the listings show them (`STOMP`, `1.2`); absent for MQTT */
  gateway?: { protoName: string, protoVer: number | string }
  /** subject of the TLS client certificate, `nossl` without TLS */
  peercert: string
  /** set by an authenticate answer; an empty string when none */
  mountpoint: string
  isSuperuser: boolean
}

export interface AuthenticateRequest {
  client: ClientInfo
  /** the CONNECT password, if any */
  password?: Buffer
}

export type Decision = 'allow' | 'deny' | 'ignore'

/**
 * An authenticate handler's answer. `reason` picks the refusal code (default bad_username_or_password;
 * `server_unavailable` — MQTT 5 0x88, 3.x return code 3 — when the plugin's backing server cannot answer).
 * `username` on allow: the user name as the backend stores it, when its lookup matched another spelling
 * (a case-insensitive or space-padding comparison let `ALICE` or `alice ` in as `alice`); from then on the
 * node knows the client by this name (ClientInfo, bans, ACL, mountpoint, listings).
 */
export type AuthenticateAnswer =
  | 'ignore'
  | 'deny'
  | { result: 'allow', superuser?: boolean, mountpoint?: string, username?: string }
  | { result: 'deny', reason?: 'bad_username_or_password' | 'not_authorized' | 'server_unavailable' }
  | 'allow'

/**
 * One step of an MQTT 5 enhanced authentication exchange (§4.12). Step 0
 * comes with the CONNECT (or a re-authenticating AUTH 0x19); the handler that
 * does not ignore it owns the exchange and gets every later step, with the
 * `state` it returned.
 */
export interface EnhancedAuthRequest {
  client: ClientInfo
  /** the Authentication Method, e.g. `SCRAM-SHA-256` */
  method: string
  /** the Authentication Data of this step */
  data?: Buffer
  step: number
  state?: unknown
}

export type EnhancedAuthAnswer =
  | 'ignore'
  | { result: 'continue', data: Buffer, state?: unknown }
  | { result: 'allow', data?: Buffer, superuser?: boolean, mountpoint?: string }
  | { result: 'deny', reason?: 'bad_username_or_password' | 'not_authorized' | 'server_unavailable' }

export type AclAccess = 'publish' | 'subscribe'

export interface CheckAclRequest {
  client: ClientInfo
  access: AclAccess
  /** the topic (publish) or topic filter (subscribe), as the client wrote it (before any mountpoint) */
  topic: string
}

export interface MessageInfo {
  topic: string
  payload: Buffer
  qos: 0 | 1 | 2
  retain: boolean
  /** the publishing client's id; undefined for messages the node itself publishes */
  from?: string
}

/** A CONNECT as it arrived, before authentication (`client.connect`, `client.connack`). */
export interface ConnectInfo extends Pick<ClientInfo, 'clientId' | 'username' | 'ipAddress' | 'port' | 'protocol' | 'protoVer' | 'gateway'> {
  keepalive: number
  cleanStart: boolean
}

/** The MQTT 5 PUBLISH properties a message carries from its publisher to its subscribers. */
export interface PublishProperties {
  payloadFormatIndicator?: boolean
  /** seconds */
  messageExpiryInterval?: number
  contentType?: string
  responseTopic?: string
  correlationData?: Buffer
  userProperties?: Record<string, string | string[]>
}

/**
 * A message on its way in (`message.publish`): from a client (`client` set),
 * a will (`client` is its owner's), or the node itself (API, plugins; no
 * `client`). `authorize(topic)` is the publisher's ACL answer for another
 * topic (always true for the node's own messages).
 */
export interface PublishMessage extends MessageInfo {
  /** its MQTT 5 properties as published (read only: a handler's changes to them are not applied) */
  properties?: PublishProperties
  client?: ClientInfo
  authorize: (topic: string) => boolean | Promise<boolean>
}

/**
 * A `message.publish` handler's answer: undefined goes on unchanged; an
 * object of changes goes on with them (the next handler sees the changed
 * message; the ACL checks the final topic); `stop` ends here, unrouted: an
 * MQTT 5 publisher at QoS 1/2 gets that reason code in its PUBACK/PUBREC
 * (below 0x80: accepted, e.g. 0x00 for a message taken in; 0x80 and up: a
 * refusal, counted as dropped), an MQTT 3.x one its usual acknowledgement.
 * The QoS cannot change: the publisher's acknowledgement depends on it.
 */
export type PublishAnswer =
  | undefined
  | { topic?: string, payload?: Buffer, retain?: boolean }
  | { stop: number, reason?: string }

/** One filter of a SUBSCRIBE (`client.subscribe`). */
export interface SubscribeFilter { topic: string, qos: 0 | 1 | 2 }

/** undefined: unchanged; changes; or `stop`: not subscribed, with this SUBACK code (0x80 and up; MQTT 3.x: 0x80). */
export type SubscribeAnswer = undefined | { topic?: string, qos?: 0 | 1 | 2 } | { stop: number }

export interface HookHandlers {
  'client.authenticate': (request: AuthenticateRequest) => AuthenticateAnswer | Promise<AuthenticateAnswer>
  'client.check_acl': (request: CheckAclRequest) => Decision | Promise<Decision>
  'client.enhanced_auth': (request: EnhancedAuthRequest) => EnhancedAuthAnswer | Promise<EnhancedAuthAnswer>
  /** a CONNECT arrived, before authentication */
  'client.connect': (connect: ConnectInfo) => void
  /** the CONNACK's outcome in EMQ X words: `success`, `bad_username_or_password`, `not_authorized`, `banned`, `server_unavailable`, … */
  'client.connack': (connect: ConnectInfo, result: string) => void
  'client.connected': (client: ClientInfo) => void
  'client.disconnected': (client: ClientInfo, reason: string) => void
  /** fold, per filter of a SUBSCRIBE, before the ACL (which checks the filter it produces) */
  'client.subscribe': (client: ClientInfo, filter: SubscribeFilter) => SubscribeAnswer | Promise<SubscribeAnswer>
  /** fold, per filter of an UNSUBSCRIBE, synchronous: a string replaces the filter */
  'client.unsubscribe': (client: ClientInfo, topic: string) => string | undefined
  /** a session ended: a clean session's client went, a persistent one expired or was discarded by a clean start */
  'session.terminated': (client: ClientInfo, reason: string) => void
  'session.subscribed': (client: ClientInfo, topic: string, qos: number) => void
  'session.unsubscribed': (client: ClientInfo, topic: string) => void
  /** fold, for each message on its way in except the node's own `$SYS/` ones, before the ACL */
  'message.publish': (message: PublishMessage) => PublishAnswer | Promise<PublishAnswer>
  /**
   * a message taken in: after `message.publish` and the ACL, before it is routed (EMQ X's `message.publish` as its
   * web hook sees it); `client` is its publisher (a will's owner), none for the node's own; not the `$SYS/` notices
   */
  'message.accepted': (message: MessageInfo, client?: ClientInfo) => void
  'message.delivered': (client: ClientInfo, message: MessageInfo) => void
  'message.acked': (client: ClientInfo, message: MessageInfo) => void
  'message.dropped': (message: MessageInfo, reason: string, client?: ClientInfo) => void
}

export type HookName = keyof HookHandlers

export const CHAIN_HOOKS = ['client.authenticate', 'client.check_acl', 'client.enhanced_auth'] as const satisfies readonly HookName[]

/** Hooks whose handlers' answers change what goes on (lib/hooks/folds.ts runs them). */
export const FOLD_HOOKS = ['message.publish', 'client.subscribe', 'client.unsubscribe'] as const satisfies readonly HookName[]
