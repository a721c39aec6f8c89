// MD4 (RFC 1320) and PBKDF2-HMAC-MD4 (RFC 8018, RFC 2104) for SPEC §5.2.8's
// `pbkdf2,md4,…`: OpenSSL 3 moved MD4 to its legacy provider, so Node.js
// cannot compute it. MD4 is broken as a hash; it is here only to check
// passwords that were already stored that way. Checked against the RFC 1320
// test vectors (test/47-spec-details.test.ts). PBKDF2-HMAC-MD4 is pure JS
// and slow: it runs on the hashing threads (hash-worker.ts `pbkdf2Md4`),
// which get these functions' text (`md4ThreadSource`) — keep them top-level
// functions using nothing but each other, BLOCK and Buffer.

const BLOCK = 64

function rotl (x: number, n: number): number {
  return (x << n) | (x >>> (32 - n))
}

/** MD4 digest (16 bytes) of `data` — RFC 1320 §3. */
export function md4 (data: Uint8Array): Buffer {
  // §3.1–3.2: pad with 0x80, zeros to 56 mod 64, then the bit length (64-bit little-endian)
  const padded = Buffer.alloc((((data.length + 8) >> 6) + 1) * BLOCK)
  padded.set(data)
  padded[data.length] = 0x80
  const bits = data.length * 8
  padded.writeUInt32LE(bits >>> 0, padded.length - 8)
  padded.writeUInt32LE(Math.floor(bits / 0x1_0000_0000), padded.length - 4)

  // §3.3
  let a = 0x67452301
  let b = 0xefcdab89
  let c = 0x98badcfe
  let d = 0x10325476
  const x = new Int32Array(16)
  for (let offset = 0; offset < padded.length; offset += BLOCK) {
    for (let i = 0; i < 16; i++) x[i] = padded.readInt32LE(offset + i * 4)
    const [aa, bb, cc, dd] = [a, b, c, d]
    // §3.4 round 1: F(X,Y,Z) = XY v not(X) Z
    for (const i of [0, 4, 8, 12]) {
      a = rotl((a + ((b & c) | (~b & d)) + x[i]) | 0, 3)
      d = rotl((d + ((a & b) | (~a & c)) + x[i + 1]) | 0, 7)
      c = rotl((c + ((d & a) | (~d & b)) + x[i + 2]) | 0, 11)
      b = rotl((b + ((c & d) | (~c & a)) + x[i + 3]) | 0, 19)
    }
    // round 2: G(X,Y,Z) = XY v XZ v YZ, constant 0x5A827999
    for (const i of [0, 1, 2, 3]) {
      a = rotl((a + ((b & c) | (b & d) | (c & d)) + x[i] + 0x5a827999) | 0, 3)
      d = rotl((d + ((a & b) | (a & c) | (b & c)) + x[i + 4] + 0x5a827999) | 0, 5)
      c = rotl((c + ((d & a) | (d & b) | (a & b)) + x[i + 8] + 0x5a827999) | 0, 9)
      b = rotl((b + ((c & d) | (c & a) | (d & a)) + x[i + 12] + 0x5a827999) | 0, 13)
    }
    // round 3: H(X,Y,Z) = X xor Y xor Z, constant 0x6ED9EBA1
    for (const i of [0, 2, 1, 3]) {
      a = rotl((a + (b ^ c ^ d) + x[i] + 0x6ed9eba1) | 0, 3)
      d = rotl((d + (a ^ b ^ c) + x[i + 8] + 0x6ed9eba1) | 0, 9)
      c = rotl((c + (d ^ a ^ b) + x[i + 4] + 0x6ed9eba1) | 0, 11)
      b = rotl((b + (c ^ d ^ a) + x[i + 12] + 0x6ed9eba1) | 0, 15)
    }
    a = (a + aa) | 0
    b = (b + bb) | 0
    c = (c + cc) | 0
    d = (d + dd) | 0
  }
  const digest = Buffer.alloc(16)
  digest.writeInt32LE(a, 0)
  digest.writeInt32LE(b, 4)
  digest.writeInt32LE(c, 8)
  digest.writeInt32LE(d, 12)
  return digest
}

/** HMAC-MD4 (RFC 2104) with the key's inner and outer pads prepared once. */
function hmacMd4 (key: Uint8Array): (message: Uint8Array) => Buffer {
  const k = Buffer.alloc(BLOCK)
  k.set(key.length > BLOCK ? md4(key) : key)
  const inner = Buffer.from(k.map((byte) => byte ^ 0x36))
  const outer = Buffer.from(k.map((byte) => byte ^ 0x5c))
  return (message) => md4(Buffer.concat([outer, md4(Buffer.concat([inner, message]))]))
}

/** PBKDF2 (RFC 8018 §5.2) with HMAC-MD4: `dklen` bytes. Synchronous: call it on a hashing thread. */
export function pbkdf2Md4Sync (password: string | Uint8Array, salt: string | Uint8Array, iterations: number, dklen: number): Buffer {
  const prf = hmacMd4(typeof password === 'string' ? Buffer.from(password, 'utf8') : password)
  const saltBytes = typeof salt === 'string' ? Buffer.from(salt, 'utf8') : Buffer.from(salt)
  const blocks: Buffer[] = []
  for (let index = 1; blocks.length * 16 < dklen; index++) {
    const counter = Buffer.alloc(4)
    counter.writeUInt32BE(index)
    let u = prf(Buffer.concat([saltBytes, counter]))
    const t = Buffer.from(u)
    for (let i = 1; i < iterations; i++) {
      u = prf(u)
      for (let j = 0; j < 16; j++) t[j] ^= u[j]
    }
    blocks.push(t)
  }
  return Buffer.concat(blocks).subarray(0, dklen)
}

/** Script text defining `pbkdf2Md4Sync` (and what it uses), for a thread that cannot import this module. */
export function md4ThreadSource (): string {
  return [`const BLOCK = ${BLOCK};`, rotl, md4, hmacMd4, pbkdf2Md4Sync].map(String).join('\n')
}
