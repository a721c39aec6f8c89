// One line per MQTT packet for trace files: the type, its fields, the size
// of the payload (never the payload itself, never a password).
import type { Packet } from 'mqtt-packet'

const SECRET = '******'

function value (v: unknown): string {
  if (v === undefined || v === null) return 'undefined'
  if (Buffer.isBuffer(v)) return `<${v.length} bytes>`
  if (typeof v === 'object') return JSON.stringify(v, (_key, inner: unknown) => isBufferJson(inner) ? `<${inner.data.length} bytes>` : inner)
  return String(v)
}

function isBufferJson (v: unknown): v is { type: 'Buffer', data: number[] } {
  return typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)
}

function fields (pairs: Array<[string, unknown]>): string {
  return pairs.filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${value(v)}`).join(', ')
}

function payloadSize (payload: unknown): number {
  if (payload === undefined || payload === null) return 0
  return typeof payload === 'string' ? Buffer.byteLength(payload) : (payload as Buffer).length
}

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * One trace line as written: control characters (C0, DEL, C1, U+2028/2029) of
 * topics, client ids, user names … as `\n`, `\xNN`, `\uNNNN`, so a field can
 * never start a line of its own (a forged record).
 */
export function traceLine (text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => NAMED[c] ?? (c.charCodeAt(0) > 0xff ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)) + '\n'
}

/** `PUBLISH(Q1, R0, D0, Topic=a/b, PacketId=3, Payload=12 bytes)` and so on. */
export function describePacket (packet: Packet): string {
  const p = packet as Packet & Record<string, unknown>
  const properties: Array<[string, unknown]> = p.properties === undefined ? [] : [['Properties', p.properties]]
  let body: string
  switch (packet.cmd) {
    case 'connect':
      body = fields([
        ['ClientId', packet.clientId], ['ProtoName', packet.protocolId], ['ProtoVer', packet.protocolVersion],
        ['CleanStart', packet.clean], ['KeepAlive', packet.keepalive], ['Username', packet.username],
        ['Password', packet.password === undefined ? undefined : SECRET],
        ['Will', packet.will === undefined || packet.will === null ? undefined : `${packet.will.topic} (Q${packet.will.qos}, R${packet.will.retain ? 1 : 0}, ${payloadSize(packet.will.payload)} bytes)`],
        ...properties
      ])
      break
    case 'connack':
      body = fields([['SessionPresent', packet.sessionPresent], ['ReturnCode', packet.returnCode], ['ReasonCode', packet.reasonCode], ...properties])
      break
    case 'publish':
      body = `Q${packet.qos}, R${packet.retain ? 1 : 0}, D${packet.dup ? 1 : 0}, ` +
        fields([['Topic', packet.topic], ['PacketId', packet.messageId], ['Payload', `${payloadSize(packet.payload)} bytes`], ...properties])
      break
    case 'subscribe':
      body = fields([['PacketId', packet.messageId], ['TopicFilters', packet.subscriptions.map((s) => `${s.topic}(q${s.qos})`).join(' ')], ...properties])
      break
    case 'suback':
      body = fields([['PacketId', packet.messageId], ['Granted', packet.granted.join(' ')], ...properties])
      break
    case 'unsubscribe':
      body = fields([['PacketId', packet.messageId], ['TopicFilters', packet.unsubscriptions.join(' ')], ...properties])
      break
    default:
      body = fields([['PacketId', p.messageId], ['ReasonCode', p.reasonCode], ...properties])
  }
  return `${packet.cmd.toUpperCase()}(${body})`
}
