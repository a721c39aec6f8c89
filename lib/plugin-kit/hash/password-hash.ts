/**
 * Password hashing shared by all authentication plugins.
 *
 * Mirrors EMQ X 3.x `emqx_passwd`: hex (lowercase) digests for md5/sha/sha256/sha512,
 * hex pbkdf2 output of `dklen` bytes, bcrypt via the pure-JS `bcryptjs` (both slow ones on
 * the hashing threads of hash-worker.ts, never on the event loop), and a salt
 * that is concatenated before (`salt,sha256`) or after (`sha256,salt`) the password.
 *
 * Errors: configuration problems (unknown spec, digest not supported by this Node/OpenSSL,
 * salt required but missing) throw; a malformed *stored* value makes verification fail.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { bcryptCompare, bcryptHash, pbkdf2, pbkdf2Md4 } from './hash-worker.js';

/** Hash algorithms understood by EMQ X 3.x auth plugins. */
export type HashAlgorithm = 'plain' | 'md5' | 'sha' | 'sha256' | 'sha512' | 'pbkdf2' | 'bcrypt';

/** HMAC functions accepted for pbkdf2 (EMQ X names; `sha` is SHA-1). */
export type Pbkdf2Macfun =
  | 'md4' | 'md5' | 'ripemd160' | 'sha' | 'sha224' | 'sha256' | 'sha384' | 'sha512';

/** pbkdf2 parameters. */
export interface Pbkdf2Params {
  macfun: Pbkdf2Macfun;
  iterations: number;
  /** Derived key length in bytes (output is 2 * dklen hex chars). */
  dklen: number;
}

/**
 * A parsed hash spec. `saltPosition` says where the salt is concatenated to the password.
 * For bcrypt, any position other than 'none' means the salt column holds the bcrypt salt
 * (`$2a$10$...`) and hash = bcrypt(password, salt). For pbkdf2 the salt is always the
 * pbkdf2 salt and `saltPosition` is 'none'.
 */
export interface HashSpec {
  algorithm: HashAlgorithm;
  saltPosition: 'none' | 'prefix' | 'suffix';
  pbkdf2?: Pbkdf2Params;
}

const ALGORITHMS: readonly HashAlgorithm[] = ['plain', 'md5', 'sha', 'sha256', 'sha512', 'pbkdf2', 'bcrypt'];
const MACFUNS: readonly Pbkdf2Macfun[] = ['md4', 'md5', 'ripemd160', 'sha', 'sha224', 'sha256', 'sha384', 'sha512'];

/** EMQ X name -> node:crypto digest name. */
function nodeDigest(name: Exclude<HashAlgorithm, 'plain' | 'pbkdf2' | 'bcrypt'> | Pbkdf2Macfun): string {
  return name === 'sha' ? 'sha1' : name;
}

/**
 * Digests usable here, probed once at load (OpenSSL 3 drops md4/ripemd160 without the legacy provider);
 * md4 is always available: ./md4.ts computes it.
 */
const AVAILABLE = new Set<Pbkdf2Macfun>(MACFUNS.filter((name) => {
  if (name === 'md4') return true;
  try {
    createHash(nodeDigest(name)).update('').digest();
    return true;
  } catch {
    return false;
  }
}));

/** True if this Node/OpenSSL build can compute the given pbkdf2 macfun. */
export function isMacfunAvailable(macfun: Pbkdf2Macfun): boolean {
  return AVAILABLE.has(macfun);
}

function assertMacfunAvailable(macfun: Pbkdf2Macfun): void {
  if (!AVAILABLE.has(macfun)) {
    throw new Error(`pbkdf2 macfun "${macfun}" is not supported by this Node.js/OpenSSL build ` +
      `(OpenSSL ${process.versions.openssl}; legacy digests need the legacy provider)`);
  }
}

function isAlgorithm(s: string): s is HashAlgorithm {
  return (ALGORITHMS as readonly string[]).includes(s);
}

function isMacfun(s: string): s is Pbkdf2Macfun {
  return (MACFUNS as readonly string[]).includes(s);
}

function positiveInt(s: string): number | undefined {
  return /^[1-9][0-9]{0,9}$/.test(s) && Number(s) <= 0x7fffffff ? Number(s) : undefined;
}

function checkPbkdf2(p: Pbkdf2Params, what: string): Pbkdf2Params {
  if (!isMacfun(p.macfun)) throw new Error(`Invalid pbkdf2 macfun in ${what}: ${String(p.macfun)}`);
  for (const key of ['iterations', 'dklen'] as const) {
    const v = p[key];
    if (!Number.isInteger(v) || v < 1 || v > 0x7fffffff) {
      throw new Error(`Invalid pbkdf2 ${key} in ${what}: ${String(v)}`);
    }
  }
  assertMacfunAvailable(p.macfun);
  return { macfun: p.macfun, iterations: p.iterations, dklen: p.dklen };
}

/**
 * Parse an EMQ X password_hash setting: `plain`, `sha256`, `salt,sha256`, `sha256,salt`,
 * `salt sha256` / `sha256 salt` (PgSQL style), `salt,bcrypt`, `bcrypt`, `pbkdf2,sha256,1000,20`.
 * A bare `pbkdf2` takes its parameters from `pbkdf2Options` (ignored for other forms).
 * Throws an Error naming the text for anything else, or if the pbkdf2 digest is unavailable.
 */
export function parseHashSpec(text: string, pbkdf2Options?: Pbkdf2Params): HashSpec {
  const bad = (why: string): Error => new Error(`Invalid password hash spec "${text}": ${why}`);
  const tokens = text.trim().toLowerCase().split(/\s*,\s*|\s+/);
  if (tokens.some((t) => t === '')) throw bad('empty element');
  const [first, second] = tokens;

  if (first === 'pbkdf2') {
    if (tokens.length === 1) {
      if (!pbkdf2Options) throw bad('pbkdf2 needs macfun, iterations and dklen');
      return { algorithm: 'pbkdf2', saltPosition: 'none', pbkdf2: checkPbkdf2(pbkdf2Options, `"${text}"`) };
    }
    const [, macfun = '', iter = '', dk = ''] = tokens;
    const iterations = positiveInt(iter);
    const dklen = positiveInt(dk);
    if (tokens.length !== 4 || !isMacfun(macfun) || iterations === undefined || dklen === undefined) {
      throw bad('expected pbkdf2,<macfun>,<iterations>,<dklen>');
    }
    return { algorithm: 'pbkdf2', saltPosition: 'none', pbkdf2: checkPbkdf2({ macfun, iterations, dklen }, `"${text}"`) };
  }

  const salted = (alg: string | undefined, saltPosition: 'prefix' | 'suffix'): HashSpec => {
    if (alg === 'pbkdf2') throw bad('pbkdf2 takes no salt position (the salt is the pbkdf2 salt)');
    if (alg === undefined || !isAlgorithm(alg)) throw bad(`unknown algorithm "${alg}"`);
    return { algorithm: alg, saltPosition };
  };
  if (tokens.length === 1 && first !== undefined && isAlgorithm(first)) return { algorithm: first, saltPosition: 'none' };
  if (tokens.length === 2 && first === 'salt') return salted(second, 'prefix');
  if (tokens.length === 2 && second === 'salt') return salted(first, 'suffix');
  throw bad('unknown form');
}

/** Compare two strings in constant time (for equal byte lengths); unequal lengths give false. */
export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

function requireSalt(spec: HashSpec, salt: string | undefined): string {
  if (salt === undefined) throw new Error(`Password hash "${spec.algorithm}" with a salt needs a salt value`);
  return salt;
}

/**
 * Hash `password` as described by `spec` (salt concatenated per `saltPosition`; pbkdf2 salt;
 * bcrypt salt string). For bare `bcrypt` a missing salt means a fresh random one (cost 10).
 */
export async function hashPassword(spec: HashSpec, password: string, salt?: string): Promise<string> {
  switch (spec.algorithm) {
    case 'pbkdf2': {
      if (!spec.pbkdf2) throw new Error('pbkdf2 hash spec is missing its parameters');
      const { macfun, iterations, dklen } = checkPbkdf2(spec.pbkdf2, 'hash spec');
      const key = macfun === 'md4'
        ? await pbkdf2Md4(password, requireSalt(spec, salt), iterations, dklen)
        : await pbkdf2(password, requireSalt(spec, salt), iterations, dklen, nodeDigest(macfun));
      return key.toString('hex');
    }
    case 'bcrypt':
      if (spec.saltPosition !== 'none') return await bcryptHash(password, requireSalt(spec, salt));
      return await bcryptHash(password, salt ?? bcrypt.genSaltSync(10));
    default: {
      let input = password;
      if (spec.saltPosition === 'prefix') input = requireSalt(spec, salt) + password;
      if (spec.saltPosition === 'suffix') input = password + requireSalt(spec, salt);
      if (spec.algorithm === 'plain') return input;
      return createHash(nodeDigest(spec.algorithm)).update(input, 'utf8').digest('hex');
    }
  }
}

/**
 * Check `password` against the `stored` hash in constant time. Bare `bcrypt` uses the salt
 * embedded in `stored`. Config errors throw; a malformed bcrypt salt/hash gives false.
 */
export async function verifyPassword(spec: HashSpec, password: string, stored: string, salt?: string): Promise<boolean> {
  if (spec.algorithm === 'bcrypt') {
    const bcryptSalt = spec.saltPosition === 'none' ? undefined : requireSalt(spec, salt);
    try {
      if (bcryptSalt === undefined) return await bcryptCompare(password, stored);
      return constantTimeEqual(await bcryptHash(password, bcryptSalt), stored);
    } catch {
      return false; // malformed bcrypt salt in the database
    }
  }
  return constantTimeEqual(await hashPassword(spec, password, salt), stored);
}

/** Iterations used by hashForStorage. */
export const STORAGE_ITERATIONS = 100_000;
const STORAGE_KEYLEN = 32;
const HEX = /^(?:[0-9a-f]{2})+$/;

/** Hash a password for broker-owned storage: `pbkdf2$sha256$<iterations>$<salt-hex>$<hash-hex>`. */
export async function hashForStorage(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await pbkdf2(password, salt, STORAGE_ITERATIONS, STORAGE_KEYLEN, 'sha256');
  return `pbkdf2$sha256$${STORAGE_ITERATIONS}$${salt.toString('hex')}$${key.toString('hex')}`;
}

/** Verify against a hashForStorage value. Returns false (never throws) for malformed input. */
export async function verifyStored(password: string, stored: string): Promise<boolean> {
  try {
    const parts = stored.split('$');
    if (parts.length !== 5) return false;
    const [scheme, digest, iter = '', saltHex = '', hashHex = ''] = parts;
    const iterations = positiveInt(iter);
    if (scheme !== 'pbkdf2' || (digest !== 'sha256' && digest !== 'sha512')) return false;
    if (iterations === undefined || iterations > 10_000_000) return false;
    if (!HEX.test(saltHex) || !HEX.test(hashHex) || hashHex.length > 1024) return false;
    const expected = Buffer.from(hashHex, 'hex');
    const key = await pbkdf2(password, Buffer.from(saltHex, 'hex'), iterations, expected.length, digest);
    return timingSafeEqual(key, expected);
  } catch {
    return false;
  }
}
