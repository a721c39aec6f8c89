// userPassword values as slapd stores them (RFC 2307 `{SCHEME}` prefixes):
// {SHA}, {SSHA}, {MD5}, {SMD5}, {SHA256}, {SSHA256}, {SHA512}, {SSHA512}
// (base64 of the digest, salted forms with the salt appended to both the
// hashed input and the digest). An unprefixed value is checked with
// `auth.ldap.password_hash` as EMQ X did (plain, or hex md5/sha/sha256).
// Other schemes ({CRYPT}, {ARGON2} …) never match.
import { createHash, timingSafeEqual } from 'node:crypto'
import { passwordChecker } from '../../lib/plugin-kit/index.js'

const SCHEMES: Record<string, { digest: string, salted: boolean }> = {
  SHA: { digest: 'sha1', salted: false },
  SSHA: { digest: 'sha1', salted: true },
  MD5: { digest: 'md5', salted: false },
  SMD5: { digest: 'md5', salted: true },
  SHA256: { digest: 'sha256', salted: false },
  SSHA256: { digest: 'sha256', salted: true },
  SHA512: { digest: 'sha512', salted: false },
  SSHA512: { digest: 'sha512', salted: true }
}

function schemeMatches (scheme: { digest: string, salted: boolean }, password: string, encoded: string): boolean {
  const decoded = Buffer.from(encoded, 'base64')
  const size = createHash(scheme.digest).digest().length
  if (decoded.length < size || (!scheme.salted && decoded.length !== size)) return false
  const digest = decoded.subarray(0, size)
  const salt = decoded.subarray(size)
  const computed = createHash(scheme.digest).update(Buffer.concat([Buffer.from(password, 'utf8'), salt])).digest()
  return timingSafeEqual(digest, computed)
}

export type LdapPasswordChecker = (password: string, stored: string) => Promise<boolean>

export function ldapPasswordChecker (passwordHash: string): LdapPasswordChecker {
  const unprefixed = passwordChecker(passwordHash)
  return async (password, stored) => {
    const prefixed = /^\{([A-Za-z0-9-]+)\}(.*)$/s.exec(stored)
    if (prefixed === null) return await unprefixed(password, stored)
    const scheme = SCHEMES[prefixed[1].toUpperCase()]
    return scheme !== undefined && schemeMatches(scheme, password, prefixed[2])
  }
}
