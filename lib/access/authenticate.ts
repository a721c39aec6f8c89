// The connect-time checks and the auth chain (SPEC §5.2.3–5), as Aedes'
// `authenticate` callback: client id length, banned entries, then the
// `client.authenticate` handlers in chain order; the first allow or deny
// decides, and when every handler ignores, mqtt.allow_anonymous does.
import type { AuthenticateError, Client } from 'aedes'
import type { Config } from '../config/store.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { AuthenticateAnswer, ClientInfo } from '../hooks/types.js'
import { connInfo } from '../listeners/conn-info.js'
import type { Refusal as ListenerRefusal } from '../listeners/gate.js'
import type { Logger } from '../log.js'
import { AuthFailureDelay } from './auth-failure-delay.js'
import type { BannedList } from './banned.js'
import { clientInfoOf, expandMountpoint, setClientState } from './client-state.js'
import { REFUSALS, type Refusal } from './refusals.js'
import type { EnhancedAuth } from './enhanced-auth.js'


function refusal (reason: Refusal, message: string): AuthenticateError {
  return Object.assign(new Error(message), REFUSALS[reason]) as unknown as AuthenticateError
}

/** `credentials`: refused by the auth chain (so slowed down by mqtt.auth_failure_delay) */
type Verdict = { allow: true, superuser: boolean, mountpoint?: string } | { allow: false, reason: Refusal, message: string, credentials?: true }

export interface AuthenticateDeps { config: Config, hooks: HookRegistry, banned: BannedList, enhanced: EnhancedAuth, logger: Logger }


export function createAuthenticate ({ config, hooks, banned, enhanced, logger }: AuthenticateDeps) {
  const failureDelay = new AuthFailureDelay(() => config.get('mqtt.auth_failure_delay'))

  async function decide (client: Client, info: ClientInfo, password: Buffer | undefined, refused: ListenerRefusal | undefined): Promise<Verdict> {
    if (refused !== undefined) {
      return { allow: false, reason: refused, message: refused === 'quota_exceeded' ? 'listener connection limit reached' : 'listener connection rate exceeded' }
    }
    if (info.clientId.length > config.get('mqtt.max_clientid_len')) {
      return { allow: false, reason: 'client_id_not_valid', message: 'client id too long' }
    }
    const ban = banned.match(info)
    if (ban !== undefined) {
      return { allow: false, reason: 'banned', message: `banned (${ban.as} ${ban.who}): ${ban.reason}` }
    }
    // an MQTT 5 enhanced authentication exchange already decided
    const exchanged = enhanced.takeVerdict(client)
    if (exchanged !== undefined) return { allow: true, ...exchanged }
    for (const handler of hooks.handlers('client.authenticate')) {
      let answer: AuthenticateAnswer
      try {
        answer = await handler({ client: info, password })
      } catch (err) {
        logger.error({ err, clientId: info.clientId }, 'authenticate handler failed; connection refused')
        return { allow: false, reason: 'not_authorized', message: 'authentication failed', credentials: true }
      }
      if (answer === 'ignore') continue
      if (answer === 'allow') return { allow: true, superuser: false }
      if (answer === 'deny') return { allow: false, reason: 'bad_username_or_password', message: 'authentication denied', credentials: true }
      if (answer.result === 'allow') return { allow: true, superuser: answer.superuser === true, mountpoint: answer.mountpoint }
      return { allow: false, reason: answer.reason ?? 'bad_username_or_password', message: 'authentication denied', credentials: true }
    }
    if (config.get('mqtt.allow_anonymous')) return { allow: true, superuser: false }
    return { allow: false, reason: 'not_authorized', message: 'no auth plugin allowed the client and anonymous access is off', credentials: true }
  }

  return function authenticate (client: Client, username: string | undefined, password: Buffer | undefined, done: (err: AuthenticateError | null, ok: boolean | null) => void): void {
    const info = clientInfoOf(client, username)
    decide(client, info, password, connInfo(client.conn)?.refusal).then((verdict) => {
      if (!verdict.allow) {
        logger.debug({ clientId: info.clientId, reason: verdict.reason }, 'connection refused')
        const wait = verdict.credentials === true ? failureDelay.next(info.ipAddress) : 0
        if (wait === 0) done(refusal(verdict.reason, verdict.message), false)
        else setTimeout(() => done(refusal(verdict.reason, verdict.message), false), wait).unref()
        return
      }
      info.isSuperuser = verdict.superuser
      info.mountpoint = expandMountpoint(verdict.mountpoint ?? config.get('zone.external.mountpoint'), info)
      setClientState(client, info)
      done(null, true)
    }, (err: Error) => {
      logger.error({ err }, 'authenticate failed')
      done(refusal('not_authorized', 'authentication failed'), false)
    })
  }
}
