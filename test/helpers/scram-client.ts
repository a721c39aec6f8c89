// A SCRAM-SHA-256 client (RFC 5802 / RFC 7677) for the tests, written independently
// of lib/access/scram.ts so that the server is checked against a second implementation.
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

export interface ScramClientOptions {
  /** client nonce (default: 18 random bytes, base64) */
  nonce?: string;
  /** raw GS2 header, e.g. `y,,` or `n,a=user,` (default `n,,`) */
  gs2Header?: string;
}

/** `=` -> `=3D` and `,` -> `=2C` (in that order). */
const saslName = (name: string): string => name.replace(/=/g, '=3D').replace(/,/g, '=2C');

export class ScramClient {
  readonly nonce: string;
  private readonly gs2Header: string;
  private readonly firstBare: string;
  private expectedServerSignature: string | undefined;

  constructor(username: string, private readonly password: string, options: ScramClientOptions = {}) {
    this.nonce = options.nonce ?? randomBytes(18).toString('base64');
    this.gs2Header = options.gs2Header ?? 'n,,';
    this.firstBare = `n=${saslName(username)},r=${this.nonce}`;
  }

  /** client-first-message */
  first(): Buffer {
    return Buffer.from(this.gs2Header + this.firstBare);
  }

  /** client-final-message for `serverFirst`; throws if the server-first-message is malformed. */
  async final(serverFirst: Buffer): Promise<Buffer> {
    const text = serverFirst.toString('utf8');
    const m = /^r=([^,]+),s=([A-Za-z0-9+/=]+),i=([1-9][0-9]*)(?:,.*)?$/.exec(text);
    if (!m) throw new Error(`malformed server-first-message: ${text}`);
    const [, combinedNonce = '', saltB64 = '', iterations = ''] = m;
    if (!combinedNonce.startsWith(this.nonce) || combinedNonce.length === this.nonce.length) {
      throw new Error('server nonce does not extend the client nonce');
    }
    const salted = await pbkdf2Async(this.password, Buffer.from(saltB64, 'base64'), Number(iterations), 32, 'sha256');
    const mac = (key: Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();
    const clientKey = mac(salted, 'Client Key');
    const storedKey = createHash('sha256').update(clientKey).digest();
    const withoutProof = `c=${Buffer.from(this.gs2Header).toString('base64')},r=${combinedNonce}`;
    const authMessage = [this.firstBare, text, withoutProof].join(',');
    const clientSignature = mac(storedKey, authMessage);
    const proof = Buffer.alloc(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ clientSignature[i]!;
    this.expectedServerSignature = mac(mac(salted, 'Server Key'), authMessage).toString('base64');
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`);
  }

  /** True if `serverFinal` is `v=` with the expected server signature. */
  verify(serverFinal: Buffer): boolean {
    return this.expectedServerSignature !== undefined &&
      serverFinal.toString('utf8') === `v=${this.expectedServerSignature}`;
  }
}
