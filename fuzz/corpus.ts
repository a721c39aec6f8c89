// The fuzz corpus: every input that ever crashed, hung or bloated the broker,
// or made the API answer an undocumented 500, as one JSON file each in
// fuzz/corpus/ (bytes as hex). test/46-fuzz.test.ts replays them all.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Connection, Transport } from './mqtt-cases.js'

/** fuzz/corpus, from fuzz/ or dist/fuzz/ */
export const CORPUS_DIR = join(fileURLToPath(new URL('.', import.meta.url)).replace(/\/dist\/fuzz\/$/, '/fuzz/'), 'corpus')

interface EntryBase {
  /** crash, hang, rss (MQTT); 500, hang, crash (API) */
  what: string
  /** what makes two findings the same bug (crash: error and first frame) */
  signature: string
  /** ISO date it was found */
  found: string
  note?: string
  /** the branch expected to fix it, when it still fails on the branch that found it */
  fixedBy?: string
}

export interface MqttEntry extends EntryBase {
  kind: 'mqtt'
  /** written one after the other, each over its own connection */
  connections: Array<{ transport: Transport, chunks: string[] }>
}

export interface ApiRequest {
  method: string
  /** path and query string, as sent */
  path: string
  headers: Record<string, string>
  body?: string
}

export interface ApiEntry extends EntryBase {
  kind: 'api'
  request: ApiRequest
}

export type Entry = MqttEntry | ApiEntry

export const toConnections = (entry: MqttEntry): Connection[] =>
  entry.connections.map((c) => ({ transport: c.transport, chunks: c.chunks.map((h) => Buffer.from(h, 'hex')) }))

export const fromConnections = (connections: Connection[]): MqttEntry['connections'] =>
  connections.map((c) => ({ transport: c.transport, chunks: c.chunks.map((b) => b.toString('hex')) }))

export function loadCorpus (dir = CORPUS_DIR): Array<{ file: string, entry: Entry }> {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((file) => ({ file, entry: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Entry }))
}

/** Writes the entry as `<kind>-<what>-<hash of its input>.json`; returns the file name. */
export function writeEntry (entry: Entry, dir = CORPUS_DIR): string {
  const input = JSON.stringify(entry.kind === 'mqtt' ? entry.connections : entry.request)
  const file = `${entry.kind}-${entry.what}-${createHash('sha256').update(input).digest('hex').slice(0, 12)}.json`
  writeFileSync(join(dir, file), JSON.stringify(entry, null, 2) + '\n')
  return file
}
