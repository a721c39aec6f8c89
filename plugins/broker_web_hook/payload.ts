// `web.hook.encode_payload`: how a message's payload is written in the JSON
// body. `none` writes it as UTF-8 text (bytes that are not UTF-8 become
// U+FFFD), `base64` as standard base64, `base62` as EMQ X's emqx_base62.

export type PayloadEncoding = 'none' | 'base64' | 'base62'

/**
 * EMQ X's base62: the bytes read as 6-bit groups, each written as A–Z (0–25),
 * a–z (26–51), 0–8 (52–60) or `9` followed by A, B, C (61–63). The last one
 * or two bytes leave a group of 2 or 4 bits, written as its value.
 */
export function base62 (bytes: Uint8Array): string {
  let out = ''
  const char = (n: number): string => n < 26
    ? String.fromCharCode(65 + n)
    : n < 52 ? String.fromCharCode(97 + n - 26) : n < 61 ? String.fromCharCode(48 + n - 52) : '9' + String.fromCharCode(65 + n - 61)
  let i = 0
  for (; i + 3 <= bytes.length; i += 3) {
    const v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2]
    out += char(v >> 18) + char((v >> 12) & 63) + char((v >> 6) & 63) + char(v & 63)
  }
  const left = bytes.length - i
  if (left === 2) {
    const v = (bytes[i] << 8) | bytes[i + 1]
    out += char(v >> 10) + char((v >> 4) & 63) + char(v & 15)
  } else if (left === 1) {
    out += char(bytes[i] >> 2) + char(bytes[i] & 3)
  }
  return out
}

/** The payload in `bytes` from `start` to `end` (all of it by default) as the body writes it. */
export function encodePayload (bytes: Buffer, encoding: PayloadEncoding, start = 0, end = bytes.length): string {
  if (encoding === 'base64') return bytes.toString('base64', start, end)
  if (encoding === 'base62') return base62(bytes.subarray(start, end))
  return bytes.toString('utf8', start, end)
}
