// The one check every packet from a client passes before any engine handler
// sees it (the Aedes patch calls it right after parsing): strings that are
// not well-formed UTF-8 or hold U+0000, properties that a packet type does not
// carry or carries twice, values out of their range, an unsupported protocol
// level. A handler after this point sees only valid packets, so no timer gets
// a NaN from a repeated Session Expiry Interval (an array after parsing).
import type { Packet } from 'mqtt-packet'

/** What the engine answers: v5 reason code, and the 3.x CONNACK return code when 3.x has one. */
export interface PacketRefusal {
  reasonCode: number
  returnCode?: number
  message: string
}

export type PacketValidator<C> = (packet: Packet, client: C) => PacketRefusal | undefined

export interface ValidationSettings<C> {
  /** `zone.external.max_topic_alias`, read per packet (a live setting) */
  topicAliasMaximum: () => number
  /** the Session Expiry Interval of the client's CONNECT (seconds); undefined before it */
  connectSessionExpiry: (client: C) => number | undefined
}

const MALFORMED = 0x81
const PROTOCOL_ERROR = 0x82
const UNSUPPORTED_PROTOCOL_VERSION = 0x84
const TOPIC_ALIAS_INVALID = 0x94
/** MQTT 3.x CONNACK 0x01, unacceptable protocol level */
const UNACCEPTABLE_PROTOCOL_LEVEL = 1

/** The protocol name each level is spoken with. */
const PROTOCOL_NAMES: Record<number, string> = { 3: 'MQIsdp', 4: 'MQTT', 5: 'MQTT' }

const REASON_AND_USER = ['reasonString', 'userProperties']
/** MQTT 5 §2.2.2.2: the properties a client may send, by packet type. */
const ALLOWED_PROPERTIES: Record<string, ReadonlySet<string>> = {
  connect: new Set(['sessionExpiryInterval', 'receiveMaximum', 'maximumPacketSize', 'topicAliasMaximum', 'requestResponseInformation',
    'requestProblemInformation', 'userProperties', 'authenticationMethod', 'authenticationData']),
  will: new Set(['willDelayInterval', 'payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic',
    'correlationData', 'userProperties']),
  publish: new Set(['payloadFormatIndicator', 'messageExpiryInterval', 'topicAlias', 'responseTopic', 'correlationData',
    'userProperties', 'subscriptionIdentifier', 'contentType']),
  puback: new Set(REASON_AND_USER),
  pubrec: new Set(REASON_AND_USER),
  pubrel: new Set(REASON_AND_USER),
  pubcomp: new Set(REASON_AND_USER),
  subscribe: new Set(['subscriptionIdentifier', 'userProperties']),
  unsubscribe: new Set(['userProperties']),
  disconnect: new Set(['sessionExpiryInterval', 'reasonString', 'userProperties', 'serverReference']),
  auth: new Set(['authenticationMethod', 'authenticationData', ...REASON_AND_USER])
}
/** Single-byte properties whose only values are 0 and 1 (the parser keeps any other value as a number). */
const FLAG_PROPERTIES = ['requestResponseInformation', 'requestProblemInformation', 'payloadFormatIndicator']
/** Properties whose value 0 is a Protocol Error. */
const NON_ZERO_PROPERTIES = ['receiveMaximum', 'maximumPacketSize', 'subscriptionIdentifier']

type Properties = Record<string, unknown>
/** What the mqtt-packet patch adds to a parsed packet. */
interface ParsedPacket { cmd: string, malformedString?: true, properties?: Properties, protocolId?: string, protocolVersion?: number, will?: { properties?: Properties } }

const refuse = (reasonCode: number, message: string, returnCode?: number): PacketRefusal => ({ reasonCode, message, returnCode })

export function createPacketValidator<C> (settings: ValidationSettings<C>): PacketValidator<C> {
  return (packet, client) => {
    const parsed = packet as unknown as ParsedPacket
    if (parsed.cmd === 'connect') {
      const refusal = checkProtocol(parsed)
      if (refusal !== undefined) return refusal
    }
    if (parsed.malformedString === true) return refuse(MALFORMED, `${parsed.cmd}: a string is not well-formed UTF-8 or holds U+0000`)
    return checkProperties(parsed.cmd, parsed.properties) ??
      (parsed.cmd === 'connect' ? checkProperties('will', parsed.will?.properties) : undefined) ??
      checkInContext(parsed, client, settings)
  }
}

function checkProtocol (packet: ParsedPacket): PacketRefusal | undefined {
  const level = packet.protocolVersion ?? 0
  const name = PROTOCOL_NAMES[level]
  if (name === undefined) return refuse(UNSUPPORTED_PROTOCOL_VERSION, `unsupported protocol level ${level}`, UNACCEPTABLE_PROTOCOL_LEVEL)
  if (packet.protocolId !== name) {
    return refuse(UNSUPPORTED_PROTOCOL_VERSION, `protocol name ${packet.protocolId} with level ${level}`, UNACCEPTABLE_PROTOCOL_LEVEL)
  }
  return undefined
}

function checkProperties (where: string, properties: Properties | undefined): PacketRefusal | undefined {
  if (properties === undefined) return undefined
  const allowed = ALLOWED_PROPERTIES[where]
  for (const [name, value] of Object.entries(properties)) {
    if (allowed?.has(name) !== true) return refuse(MALFORMED, `${where}: property ${name} is not allowed`)
    // the parser makes an array of a repeated property; only User Property may repeat
    if (name !== 'userProperties' && Array.isArray(value)) return refuse(PROTOCOL_ERROR, `${where}: property ${name} given more than once`)
  }
  for (const name of FLAG_PROPERTIES) {
    if (typeof properties[name] === 'number') return refuse(PROTOCOL_ERROR, `${where}: ${name} must be 0 or 1`)
  }
  for (const name of NON_ZERO_PROPERTIES) {
    if (properties[name] === 0) return refuse(PROTOCOL_ERROR, `${where}: ${name} must not be 0`)
  }
  const responseTopic = properties.responseTopic
  if (typeof responseTopic === 'string' && /[+#]/.test(responseTopic)) return refuse(PROTOCOL_ERROR, `${where}: Response Topic with a wildcard`)
  return undefined
}

function checkInContext<C> (packet: ParsedPacket, client: C, { topicAliasMaximum, connectSessionExpiry }: ValidationSettings<C>): PacketRefusal | undefined {
  const properties = packet.properties
  if (properties === undefined) return undefined
  if (packet.cmd === 'publish') {
    if (properties.subscriptionIdentifier !== undefined) return refuse(PROTOCOL_ERROR, 'a client PUBLISH carries a Subscription Identifier')
    const alias = properties.topicAlias
    const max = topicAliasMaximum()
    if (typeof alias === 'number' && (alias === 0 || alias > max)) {
      return refuse(TOPIC_ALIAS_INVALID, `topic alias ${alias} outside 1..${max}`)
    }
  }
  if (packet.cmd === 'disconnect' && (properties.sessionExpiryInterval as number) > 0 && connectSessionExpiry(client) === 0) {
    return refuse(PROTOCOL_ERROR, 'DISCONNECT sets a Session Expiry Interval after a CONNECT with 0')
  }
  return undefined
}
