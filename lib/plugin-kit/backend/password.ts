// The `password_hash` setting of the database auth plugins (SPEC §5.2), over
// lib/access/password-hash.ts: `plain`, `md5`, `sha`, `sha256`, `sha512`,
// `bcrypt`, `salt,sha256` / `salt sha256` (salt before the password),
// `sha256,salt` / `sha256 salt` (after), `salt,bcrypt` (the salt column holds
// the bcrypt salt), `pbkdf2,<macfun>,<iterations>,<dklen>` (salt column =
// pbkdf2 salt).
import Joi from 'joi'
import { parseHashSpec, verifyPassword, type HashSpec } from '../hash/password-hash.js'

export type PasswordChecker = (password: string, stored: string, salt?: string) => Promise<boolean>

/** A checker for one setting; throws (naming the setting) when the setting is not a hash form. */
export function passwordChecker (setting: string): PasswordChecker {
  const spec = parseHashSpec(setting)
  return async (password, stored, salt) => {
    try {
      return await verifyPassword(spec, password, stored, salt)
    } catch {
      return false // e.g. a salted hash whose salt column is empty
    }
  }
}

/** Whether the hash needs the stored salt (salted forms and pbkdf2), so the auth query must select it. */
export function usesSalt (setting: string): boolean {
  const spec: HashSpec = parseHashSpec(setting)
  return spec.saltPosition !== 'none' || spec.algorithm === 'pbkdf2'
}

/** Joi for a `password_hash` key: a bad form is an error when the settings load. */
export function passwordHashSetting (def: string): Joi.StringSchema {
  return Joi.string().trim().custom((raw: string) => {
    parseHashSpec(raw)
    return raw
  }).default(def)
}
