// The plain-text (text/plain, 0) and opaque (application/octet-stream, 42)
// content formats of LwM2M 1.0 (§6.4.1, §6.4.2): one resource (instance)
// value. Numbers in decimal, booleans "0" / "1", object links "3:0".
import { ContentError, formatPath, parseObjlnk, type Entry, type ResourceType, type TypeOf, type Value } from './values.js'

/** A text payload read at `path` (a resource or a resource instance). */
export function decodeText (bytes: Buffer, path: readonly number[], typeOf: TypeOf): Entry[] {
  if (path.length < 3) throw new ContentError(`plain text for ${formatPath(path)}, which is not a resource`)
  return [{ path: formatPath(path), value: textValue(bytes.toString('utf8'), typeOf(path[0], path[2])) }]
}

export function textValue (text: string, type: ResourceType | undefined): Value {
  switch (type) {
    case 'Integer': case 'Time':
      if (!/^-?\d{1,19}$/.test(text.trim())) throw new ContentError(`${JSON.stringify(text)} is not an integer`)
      return Number(text)
    case 'Float': {
      const n = Number(text)
      if (text.trim() === '' || !Number.isFinite(n)) throw new ContentError(`${JSON.stringify(text)} is not a number`)
      return n
    }
    case 'Boolean':
      if (text !== '0' && text !== '1') throw new ContentError(`${JSON.stringify(text)} is not a boolean (0 or 1)`)
      return text === '1'
    case 'Objlnk':
      parseObjlnk(text)
      return text
    default:
      return text
  }
}

/** A value → its plain text. */
export function encodeText (value: Value): Buffer {
  return Buffer.from(typeof value === 'boolean' ? (value ? '1' : '0') : String(value), 'utf8')
}

/** An opaque payload read at `path`: base64. */
export function decodeOpaque (bytes: Buffer, path: readonly number[]): Entry[] {
  if (path.length < 3) throw new ContentError(`an opaque value for ${formatPath(path)}, which is not a resource`)
  return [{ path: formatPath(path), value: bytes.toString('base64') }]
}
