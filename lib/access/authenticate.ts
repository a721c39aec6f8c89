// The connect-time checks and the auth chain (SPEC §5.2.3–5), as Aedes'
// `authenticate` callback: client id length, banned entries, then the
// `client.authenticate` handlers in chain order; the first allow or deny
// decides, and when every handler ignores, mqtt.allow_anonymous does.
import type { AuthenticateError, Client } from 'aedes'
import type { Config } from '../config/store.js'
import { runChain, type ChainRules } from '../hooks/chain.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { AuthenticateAnswer, AuthenticateRequest, ClientInfo, ConnectInfo } from '../hooks/types.js'
import { connInfo } from '../listeners/conn-info.js'
import type { Refusal as ListenerRefusal } from '../listeners/gate.js'
import type { Logger } from '../log.js'
import { AuthFailureDelay } from './auth-failure-delay.js'
import type { BannedList } from './banned.js'
import { clientInfoOf, setClientState } from './client-state.js'
import { expandMountpoint } from './mountpoint.js'
import { REFUSALS, type Refusal } from './refusals.js'
import type { EnhancedAuth } from './enhanced-auth.js'
import type { SessionGuard } from './session-guard.js'
import { engineClientFacts, type ConnectingClient } from '../engine/internals.js'

function refusal (reason: Refusal, message: string): AuthenticateError {
  return Object.assign(new Error(message), REFUSALS[reason]) as unknown as AuthenticateError
}

/** `credentials`: refused by the auth chain (so slowed down by mqtt.auth_failure_delay) */
type Refused = { allow: false, reason: Refusal, message: string, credentials?: true }
/** `username`: the name the deciding backend matched, when it says (see AuthenticateAnswer) */
type Verdict = { allow: true, superuser: boolean, mountpoint?: string, username?: string } | Refused

/** What one handler's answer decides; undefined for an ignore. */
function verdictOf (answer: AuthenticateAnswer): Verdict | undefined {
  if (answer === 'ignore') return undefined
  if (answer === 'allow') return { allow: true, superuser: false }
  if (answer === 'deny') return { allow: false, reason: 'bad_username_or_password', message: 'authentication denied', credentials: true }
  if (answer.result === 'allow') return { allow: true, superuser: answer.superuser === true, mountpoint: answer.mountpoint, username: answer.username }
  return { allow: false, reason: answer.reason ?? 'bad_username_or_password', message: 'authentication denied', credentials: true }
}

/** The CONNECT as `client.connect` and `client.connack` see it (the user name as the client sent it). */
function connectInfo (client: Client, info: ClientInfo): ConnectInfo {
  const { clientId, username, ipAddress, port, protocol, protoVer } = info
  return { clientId, username, ipAddress, port, protocol, protoVer, keepalive: engineClientFacts(client).keepalive, cleanStart: client.clean }
}

export interface AuthenticateDeps { config: Config, hooks: HookRegistry, banned: BannedList, enhanced: EnhancedAuth, guard: SessionGuard, logger: Logger }


export function createAuthenticate ({ config, hooks, banned, enhanced, guard, logger }: AuthenticateDeps) {
  const failureDelay = new AuthFailureDelay(() => config.get('mqtt.auth_failure_delay'))
  // a handler's error refuses the connection; when all ignore, mqtt.allow_anonymous decides
  const chain: ChainRules<AuthenticateRequest, AuthenticateAnswer, Verdict, undefined> = {
    decide: verdictOf,
    failed: (err, { client }) => {
      logger.error({ err, clientId: client.clientId }, 'authenticate handler failed; connection refused')
      return { allow: false, reason: 'not_authorized', message: 'authentication failed', credentials: true }
    },
    fallback: () => config.get('mqtt.allow_anonymous')
      ? { allow: true, superuser: false }
      : { allow: false, reason: 'not_authorized', message: 'no auth plugin allowed the client and anonymous access is off', credentials: true }
  }

  function bannedRefusal (info: ClientInfo): Refused | undefined {
    const ban = banned.match(info)
    return ban === undefined ? undefined : { allow: false, reason: 'banned', message: `banned (${ban.as} ${ban.who}): ${ban.reason}` }
  }

  /**
   * After the chain allowed: from here on the client is known by the user name
   * the backend matched (`ALICE` or `alice ` that a case-insensitive backend
   * let in as alice is alice for bans, ACL rules, mountpoint and listings).
   */
  function admit (info: ClientInfo, verdict: Verdict & { allow: true }): Refused | undefined {
    if (verdict.username !== undefined && verdict.username !== info.username) {
      info.username = verdict.username
      const ban = bannedRefusal(info)
      if (ban !== undefined) return ban
    }
    info.isSuperuser = verdict.superuser
    const mounted = expandMountpoint(verdict.mountpoint ?? config.get('zone.external.mountpoint'), info)
    if ('refusal' in mounted) return { allow: false, reason: mounted.refusal, message: mounted.message }
    info.mountpoint = mounted.mountpoint
    return undefined
  }

  async function decide (client: Client, info: ClientInfo, password: Buffer | undefined, refused: ListenerRefusal | undefined): Promise<Verdict> {
    if (refused !== undefined) {
      return { allow: false, reason: refused, message: refused === 'quota_exceeded' ? 'listener connection limit reached' : 'listener connection rate exceeded' }
    }
    if (info.clientId.length > config.get('mqtt.max_clientid_len')) {
      return { allow: false, reason: 'client_id_not_valid', message: 'client id too long' }
    }
    const ban = bannedRefusal(info)
    if (ban !== undefined) return ban
    // an MQTT 5 enhanced authentication exchange already decided
    const exchanged = enhanced.takeVerdict(client)
    if (exchanged !== undefined) return { allow: true, ...exchanged }
    return await runChain(hooks.handlers('client.authenticate'), { client: info, password }, chain, undefined)
  }

  return function authenticate (client: Client, username: string | undefined, password: Buffer | undefined, done: (err: AuthenticateError | null, ok: boolean | null) => void): void {
    const info = clientInfoOf(client, username)
    const connect = hooks.has('client.connect') || hooks.has('client.connack') ? connectInfo(client, info) : undefined
    if (connect !== undefined) hooks.notify('client.connect', connect)
    const refusedOrAdmitted = async (): Promise<Refused | undefined> => {
      const verdict = await decide(client, info, password, connInfo(client.conn)?.refusal)
      const refused = verdict.allow ? admit(info, verdict) : verdict
      if (refused !== undefined) return refused
      // the session owner check and the resumed session's subscriptions (session-guard.ts)
      const ownerRefusal = await guard.admit(client as unknown as ConnectingClient, setClientState(client, info))
      return ownerRefusal === undefined ? undefined : { allow: false, reason: 'not_authorized', message: ownerRefusal }
    }
    refusedOrAdmitted().then((refused) => {
      if (refused !== undefined) {
        logger.debug({ clientId: info.clientId, reason: refused.reason, message: refused.message }, 'connection refused')
        if (connect !== undefined) hooks.notify('client.connack', connect, refused.reason)
        const wait = refused.credentials === true ? failureDelay.next(info.ipAddress) : 0
        if (wait === 0) done(refusal(refused.reason, refused.message), false)
        else setTimeout(() => done(refusal(refused.reason, refused.message), false), wait).unref()
        return
      }
      if (connect !== undefined) hooks.notify('client.connack', connect, 'success')
      done(null, true)
    }, (err: Error) => {
      logger.error({ err }, 'authenticate failed')
      if (connect !== undefined) hooks.notify('client.connack', connect, 'not_authorized')
      done(refusal('not_authorized', 'authentication failed'), false)
    })
  }
}
