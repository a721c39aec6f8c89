// A device's payload → EMQ X's content list, by its Content-Format.
import { decodeJson } from './lwm2m-json.js'
import { decodeOpaque, decodeText } from './text.js'
import { decodeTlv } from './tlv.js'
import { ContentError, FORMAT, type Entry, type TypeOf } from './values.js'

/** Decodes a read / observe answer for `path`; undefined format: text for a resource, TLV otherwise (what clients send without saying). */
export function decodeContent (format: number | undefined, payload: Buffer, path: readonly number[], typeOf: TypeOf): Entry[] {
  switch (format ?? (path.length >= 3 ? FORMAT.text : FORMAT.tlv)) {
    case FORMAT.text: return decodeText(payload, path, typeOf)
    case FORMAT.opaque: return decodeOpaque(payload, path)
    case FORMAT.tlv: case FORMAT.tlvOld: return decodeTlv(payload, path, typeOf)
    case FORMAT.json: case FORMAT.jsonOld: return decodeJson(payload, path, typeOf)
    default: throw new ContentError(`content format ${String(format)} is not one of LwM2M 1.0's`)
  }
}

/** A link-format payload (discover, register) → its links, one string each (`</3/0>;dim=8`). */
export function splitLinks (payload: string): string[] {
  const links: string[] = []
  let current = ''
  let quoted = false
  let angled = false
  for (const ch of payload) {
    if (ch === '"') quoted = !quoted
    else if (!quoted && ch === '<') angled = true
    else if (!quoted && ch === '>') angled = false
    if (ch === ',' && !quoted && !angled) {
      if (current.trim() !== '') links.push(current.trim())
      current = ''
    } else {
      current += ch
    }
  }
  if (current.trim() !== '') links.push(current.trim())
  return links
}
