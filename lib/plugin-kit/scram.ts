/**
 * SCRAM-SHA-256 (RFC 5802 with RFC 7677's parameters), server side, for MQTT 5 enhanced
 * authentication with authentication method `SCRAM-SHA-256`.
 *
 * Credentials can come from a password or from a `hashForStorage` value: its
 * PBKDF2-HMAC-SHA-256 32-byte hash is exactly SCRAM's SaltedPassword, so stored users
 * authenticate without the broker knowing their passwords.
 *
 * Not supported: channel binding (no `-PLUS`; `p=` is refused), mandatory extensions (`m=`),
 * SASLprep (names and passwords are used as their UTF-8 bytes). Malformed input gives
 * `{ error }`, never a throw.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { TextDecoder } from 'node:util';
import { pbkdf2 } from './hash/hash-worker.js';
import { STORAGE_ITERATIONS } from './hash/password-hash.js';


/** What the server keeps per user: enough to verify a proof, not to impersonate the user. */
export interface ScramCredentials {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

/** ScramServer options. */
export interface ScramServerOptions {
  /** Server nonce suffix (printable, no comma); tests only. Default: 18 random bytes, base64. */
  nonce?: () => string;
  /** Iteration count shown to unknown users. Default: STORAGE_ITERATIONS, as for stored users. */
  fakeIterations?: number;
}

/** A failed step; `error` says why. */
export interface ScramError { error: string }

const hmac = (key: Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();
const fail = (error: string): ScramError => ({ error });

/** Derive the server's keys from SaltedPassword = Hi(password, salt, iterations). */
export function scramFromSaltedPassword(saltedPassword: Buffer, salt: Buffer, iterations: number): ScramCredentials {
  const storedKey = sha256(hmac(saltedPassword, 'Client Key'));
  return { salt, iterations, storedKey, serverKey: hmac(saltedPassword, 'Server Key') };
}

/** Credentials from a `pbkdf2$sha256$<iterations>$<salt-hex>$<hash-hex>` value with a 32-byte hash; else undefined. */
export function scramFromStored(stored: string): ScramCredentials | undefined {
  const m = /^pbkdf2\$sha256\$([1-9][0-9]{0,9})\$((?:[0-9a-fA-F]{2})+)\$([0-9a-fA-F]{64})$/.exec(String(stored));
  if (!m || Number(m[1]) > 0x7fffffff) return undefined;
  return scramFromSaltedPassword(Buffer.from(m[3]!, 'hex'), Buffer.from(m[2]!, 'hex'), Number(m[1]));
}

/** Credentials for `password` (async PBKDF2; a random 16-byte salt when none is given). */
export async function scramFromPassword(password: string, salt?: Buffer, iterations = 4096): Promise<ScramCredentials> {
  const s = salt ?? randomBytes(16);
  return scramFromSaltedPassword(await pbkdf2(password, s, iterations, 32, 'sha256'), s, iterations);
}

/** Per-process secret for the fake salts of unknown users. */
const FAKE_SECRET = randomBytes(32);
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/;
const EXTENSION = /^[A-Za-z]=./;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A message as text: undefined if not a Buffer, not UTF-8, or containing NUL. */
function toText(message: Buffer): string | undefined {
  try {
    const text = Buffer.isBuffer(message) ? utf8.decode(message) : undefined;
    return text?.includes('\0') ? undefined : text;
  } catch {
    return undefined;
  }
}

/** Strict base64 (canonical, non-empty); undefined otherwise. */
function fromBase64(s: string): Buffer | undefined {
  const b = Buffer.from(s, 'base64');
  return s !== '' && b.toString('base64') === s ? b : undefined;
}

/** Decode a saslname (`=2C` -> `,`, `=3D` -> `=`); undefined if empty or with a stray `=`. */
function decodeName(s: string): string | undefined {
  if (s === '' || /=(?!2C|3D)/.test(s)) return undefined;
  return s.replace(/=(2C|3D)/g, (_m, code: string) => (code === '2C' ? ',' : '='));
}

interface Pending {
  username: string;
  gs2Header: string;
  nonce: string;
  /** client-first-message-bare "," server-first-message */
  authPrefix: string;
  credentials: ScramCredentials;
}

/** One SCRAM-SHA-256 exchange: `first` then `final`, each at most once; any failure or misordering ends it. */
export class ScramServer {
  private started = false;
  private pending: Pending | undefined;

  constructor(
    private readonly lookup: (username: string) => Promise<ScramCredentials | undefined>,
    private readonly options: ScramServerOptions = {},
  ) {}

  /** Handle client-first-message `n,,n=<user>,r=<cnonce>`; answers `r=<nonce>,s=<salt>,i=<iterations>`. */
  async first(clientFirst: Buffer): Promise<{ serverFirst: Buffer; username: string } | ScramError> {
    if (this.started) return fail('SCRAM: client-first-message already received');
    this.started = true;
    const text = toText(clientFirst);
    if (text === undefined) return fail('SCRAM: client-first-message is not UTF-8 text');
    const [flag = '', authzid = '', ...bare] = text.split(',');
    if (flag.startsWith('p=')) return fail('SCRAM: channel binding is not supported');
    if (flag !== 'n' && flag !== 'y') return fail('SCRAM: invalid GS2 header');
    const [userAttr = '', nonceAttr = '', ...extensions] = bare;
    if (userAttr.startsWith('m=')) return fail('SCRAM: mandatory extensions are not supported');
    const username = userAttr.startsWith('n=') ? decodeName(userAttr.slice(2)) : undefined;
    if (username === undefined) return fail('SCRAM: missing or malformed username (n=)');
    if (!nonceAttr.startsWith('r=') || !PRINTABLE.test(nonceAttr.slice(2))) return fail('SCRAM: missing or malformed nonce (r=)');
    if (!extensions.every((e) => EXTENSION.test(e))) return fail('SCRAM: malformed extension in client-first-message');
    if (authzid !== '' && authzid !== 'a=') {
      if (!authzid.startsWith('a=')) return fail('SCRAM: invalid GS2 header');
      if (decodeName(authzid.slice(2)) !== username) return fail('SCRAM: authorization identity differs from the username');
    }

    let credentials: ScramCredentials | undefined;
    try {
      credentials = await this.lookup(username);
    } catch {
      return fail('SCRAM: credential lookup failed');
    }
    // Unknown user: a stable fake salt; random keys, so no proof can match (final fails).
    credentials ??= {
      salt: hmac(FAKE_SECRET, username).subarray(0, 16),
      iterations: this.options.fakeIterations ?? STORAGE_ITERATIONS,
      storedKey: randomBytes(32),
      serverKey: randomBytes(32),
    };
    const suffix = this.options.nonce ? this.options.nonce() : randomBytes(18).toString('base64');
    if (!PRINTABLE.test(suffix)) return fail('SCRAM: invalid server nonce');
    const nonce = nonceAttr.slice(2) + suffix;
    const serverFirst = `r=${nonce},s=${credentials.salt.toString('base64')},i=${credentials.iterations}`;
    const gs2Header = `${flag},${authzid},`;
    this.pending = { username, gs2Header, nonce, authPrefix: `${bare.join(',')},${serverFirst}`, credentials };
    return { serverFirst: Buffer.from(serverFirst, 'utf8'), username };
  }

  /** Handle client-final-message `c=<gs2 header b64>,r=<nonce>,p=<proof>`; answers `v=<server signature>`. */
  async final(clientFinal: Buffer): Promise<{ serverFinal: Buffer; username: string } | ScramError> {
    const p = this.pending;
    this.pending = undefined;
    this.started = true; // any final ends the exchange, even out of order
    if (!p) return fail('SCRAM: client-final-message without a pending client-first-message');
    const text = toText(clientFinal);
    if (text === undefined) return fail('SCRAM: client-final-message is not UTF-8 text');
    const parts = text.split(',');
    const [cbAttr = '', nonceAttr = ''] = parts;
    const proofAttr = parts.length >= 3 ? parts[parts.length - 1]! : '';
    if (!cbAttr.startsWith('c=') || !nonceAttr.startsWith('r=') || !proofAttr.startsWith('p=') ||
        !parts.slice(2, -1).every((e) => EXTENSION.test(e))) {
      return fail('SCRAM: malformed client-final-message (expected c=...,r=...,p=...)');
    }
    const binding = fromBase64(cbAttr.slice(2));
    if (!binding?.equals(Buffer.from(p.gs2Header, 'utf8'))) return fail('SCRAM: channel binding (c=) does not match the GS2 header');
    if (nonceAttr.slice(2) !== p.nonce) return fail('SCRAM: nonce (r=) does not match');
    const proof = fromBase64(proofAttr.slice(2));
    if (proof === undefined || proof.length !== 32) return fail('SCRAM: malformed client proof (p=)');

    const authMessage = `${p.authPrefix},${parts.slice(0, -1).join(',')}`;
    const signature = hmac(p.credentials.storedKey, authMessage);
    const clientKey = Buffer.from(proof.map((byte, i) => byte ^ signature[i]!));
    const storedKey = sha256(clientKey);
    const matches = storedKey.length === p.credentials.storedKey.length && timingSafeEqual(storedKey, p.credentials.storedKey);
    if (!matches) return fail('SCRAM: authentication failed');
    const serverSignature = hmac(p.credentials.serverKey, authMessage).toString('base64');
    return { serverFinal: Buffer.from(`v=${serverSignature}`, 'utf8'), username: p.username };
  }
}
