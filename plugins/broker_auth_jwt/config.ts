// Settings of broker_auth_jwt (etc/plugins/broker_auth_jwt.conf), SPEC §5.2
// jwt row and research/EMQX-BEHAVIOUR.md (JWT).
import Joi from 'joi'

export const CLAIM_PREFIX = 'auth.jwt.verify_claims.'
const EXP = 'auth.jwt.verify_claims.exp'

export interface JwtConfig {
  /** HMAC secret for HS256/HS384/HS512 tokens */
  'auth.jwt.secret'?: string
  /** PEM file of an RSA or EC public key (RS*, PS*, ES* tokens), relative to the install root */
  'auth.jwt.pubkey'?: string
  'auth.jwt.from': 'password' | 'username'
  'auth.jwt.verify_claims': boolean
  /** `required`: a token without `exp` is refused (whatever verify_claims says); `optional`: one without it never expires */
  'auth.jwt.verify_claims.exp': 'required' | 'optional'
  /** expected claim values; `%u` and `%c` are the username and client id */
  [claim: `auth.jwt.verify_claims.${string}`]: string
}

const SWITCH = Joi.boolean().truthy('on', 'yes', 'enable').falsy('off', 'no', 'disable')

export const schema = Joi.object<JwtConfig>({
  'auth.jwt.secret': Joi.string(),
  'auth.jwt.pubkey': Joi.string(),
  'auth.jwt.from': Joi.string().valid('password', 'username').default('password'),
  'auth.jwt.verify_claims': SWITCH.default(false),
  'auth.jwt.verify_claims.exp': Joi.string().trim().lowercase().valid('required', 'optional').default('optional')
    .messages({ 'any.only': 'auth.jwt.verify_claims.exp is required or optional (exp is a time, not a value to compare)' })
})
  .pattern(/^auth\.jwt\.verify_claims\.[A-Za-z0-9_$.]+$/, Joi.string())
  .or('auth.jwt.secret', 'auth.jwt.pubkey', { separator: false })
  .messages({
    'object.missing': 'set auth.jwt.secret (an HMAC secret) or auth.jwt.pubkey (an RSA/EC public key file): ' +
      'broker_auth_jwt has no key to verify tokens with'
  })

/** The claims to check (claim name → expected value with `%u`/`%c`), empty when verify_claims is off; never `exp` (`requiresExp`). */
export function expectedClaims (config: JwtConfig): Array<[claim: string, expected: string]> {
  if (!config['auth.jwt.verify_claims']) return []
  return Object.entries(config)
    .filter(([key]) => key.startsWith(CLAIM_PREFIX) && key !== EXP)
    .map(([key, value]) => [key.slice(CLAIM_PREFIX.length), String(value)])
}

/** A token must carry `exp`: its own switch, not tied to verify_claims (forgetting that must not leave tokens valid forever). */
export function requiresExp (config: JwtConfig): boolean {
  return config[EXP] === 'required'
}
