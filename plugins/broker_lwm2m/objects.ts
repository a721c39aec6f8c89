// The object definitions (`lwm2m.xml_dir`): the OMA LwM2M registry's XML
// files (`<LWM2M><Object><ObjectID>3</ObjectID><Resources><Item ID="0">
// <Name>…</Name><Operations>R</Operations><MultipleInstances>…</MultipleInstances>
// <Type>String</Type>…`), parsed with fast-xml-parser. They give each
// resource's type, which the TLV, JSON and text formats need to read and
// write values.
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { XMLParser } from 'fast-xml-parser'
import { RESOURCE_TYPES, type ResourceType, type TypeOf } from './values.js'

export interface ResourceDef {
  id: number
  name: string
  operations: string
  multiple: boolean
  type: ResourceType
}

export interface ObjectDef {
  id: number
  name: string
  multiple: boolean
  resources: Map<number, ResourceDef>
}

/** A definition file larger than this is refused (the registry's largest are far below). */
const MAX_FILE_BYTES = 2 * 1024 * 1024
const MAX_FILES = 2000

export class ObjectRegistry {
  readonly #objects = new Map<number, ObjectDef>()

  get size (): number {
    return this.#objects.size
  }

  get (object: number): ObjectDef | undefined {
    return this.#objects.get(object)
  }

  add (def: ObjectDef): void {
    this.#objects.set(def.id, def)
  }

  /** The type of a resource, or undefined when its object or the resource is not defined. */
  readonly typeOf: TypeOf = (object, resource) => this.#objects.get(object)?.resources.get(resource)?.type
}

/** Parses one definition file's text; throws saying what is wrong. */
export function parseObjectXml (text: string): ObjectDef[] {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    parseTagValue: false,
    isArray: (name) => name === 'Object' || name === 'Item',
    processEntities: true
  })
  const doc = parser.parse(text) as { LWM2M?: { Object?: Array<Record<string, unknown>> } }
  const objects = doc.LWM2M?.Object
  if (!Array.isArray(objects) || objects.length === 0) throw new Error('no <LWM2M><Object> element')
  return objects.map((object) => {
    const id = idOf(object.ObjectID, '<ObjectID>')
    const items = (object.Resources as { Item?: Array<Record<string, unknown>> } | undefined)?.Item ?? []
    const resources = new Map<number, ResourceDef>()
    for (const item of items) {
      const rid = idOf(item['@_ID'], `object ${id}: an <Item ID>`)
      const type = String(item.Type ?? '').trim() || 'None'
      if (!RESOURCE_TYPES.includes(type as ResourceType)) throw new Error(`object ${id} resource ${rid}: type ${JSON.stringify(type)} is not one of ${RESOURCE_TYPES.join(', ')}`)
      resources.set(rid, {
        id: rid,
        name: text2(item.Name),
        operations: text2(item.Operations),
        multiple: text2(item.MultipleInstances) === 'Multiple',
        type: type as ResourceType
      })
    }
    return { id, name: text2(object.Name), multiple: text2(object.MultipleInstances) === 'Multiple', resources }
  })
}

function text2 (value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value).trim() : ''
}

function idOf (value: unknown, what: string): number {
  const text = text2(value)
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65534) throw new Error(`${what} ${JSON.stringify(text)} is not an id (0-65534)`)
  return Number(text)
}

/** Reads every `*.xml` of `dir` (relative to `root`); a file that is not a definition is refused with its name. */
export async function loadObjects (root: string, dir: string): Promise<ObjectRegistry> {
  const folder = resolve(root, dir)
  const names = (await readdir(folder)).filter((name) => name.toLowerCase().endsWith('.xml')).sort()
  if (names.length > MAX_FILES) throw new Error(`lwm2m.xml_dir ${folder} holds more than ${MAX_FILES} XML files`)
  const registry = new ObjectRegistry()
  for (const name of names) {
    const file = join(folder, name)
    if ((await stat(file)).size > MAX_FILE_BYTES) throw new Error(`${file}: larger than ${MAX_FILE_BYTES} bytes`)
    try {
      for (const def of parseObjectXml(await readFile(file, 'utf8'))) registry.add(def)
    } catch (err) {
      throw new Error(`${file}: ${(err as Error).message}`, { cause: err })
    }
  }
  return registry
}
