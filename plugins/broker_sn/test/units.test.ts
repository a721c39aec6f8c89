// broker_sn without a node: the codec against the byte layouts of the
// MQTT-SN 1.2 specification (§5), both directions; the settings through the
// host's reader (the shipped file is the schema's defaults, bad values are
// refused with file:line); the per-client topic registry.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { decode, decodeFlags, encode, encodeFlags, flags, shortTopicId, shortTopicName, SnDecodeError, type SnPacket } from '../codec.js'
import plugin from '../index.js'
import { advertiseTarget, predefinedTopics, schema, type SnConfig } from '../settings.js'
import { MAX_TOPICS, TopicRegistry } from '../topics.js'

const hex = (bytes: number[]): Buffer => Buffer.from(bytes)

/** [what, packet, its octets as §5 lays them out] */
const LAYOUTS: Array<[string, SnPacket, number[]]> = [
  ['ADVERTISE', { type: 'advertise', gwId: 1, duration: 900 }, [0x05, 0x00, 0x01, 0x03, 0x84]],
  ['SEARCHGW', { type: 'searchgw', radius: 0 }, [0x03, 0x01, 0x00]],
  ['GWINFO (from a gateway)', { type: 'gwinfo', gwId: 7 }, [0x03, 0x02, 0x07]],
  ['GWINFO (from a client, with GwAdd)', { type: 'gwinfo', gwId: 7, gwAdd: hex([10, 0, 0, 1]) }, [0x07, 0x02, 0x07, 10, 0, 0, 1]],
  ['CONNECT will + clean', { type: 'connect', flags: flags({ will: true, cleanSession: true }), protocolId: 1, duration: 10, clientId: 'ab' }, [0x08, 0x04, 0x0c, 0x01, 0x00, 0x0a, 0x61, 0x62]],
  ['CONNACK', { type: 'connack', returnCode: 0 }, [0x03, 0x05, 0x00]],
  ['WILLTOPICREQ', { type: 'willtopicreq' }, [0x02, 0x06]],
  ['WILLTOPIC QoS 1 retain', { type: 'willtopic', flags: flags({ qos: 1, retain: true }), topic: 'w' }, [0x04, 0x07, 0x30, 0x77]],
  ['WILLTOPIC empty', { type: 'willtopic' }, [0x02, 0x07]],
  ['WILLMSGREQ', { type: 'willmsgreq' }, [0x02, 0x08]],
  ['WILLMSG', { type: 'willmsg', message: hex([0x78]) }, [0x03, 0x09, 0x78]],
  ['REGISTER', { type: 'register', topicId: 0, msgId: 1, topicName: 'a/b' }, [0x09, 0x0a, 0, 0, 0, 1, 0x61, 0x2f, 0x62]],
  ['REGACK', { type: 'regack', topicId: 1, msgId: 1, returnCode: 0 }, [0x07, 0x0b, 0, 1, 0, 1, 0]],
  ['PUBLISH DUP QoS 2 retain predefined', { type: 'publish', flags: flags({ dup: true, qos: 2, retain: true, topicIdType: 1 }), topicId: 5, msgId: 7, data: hex([0x68, 0x69]) }, [0x09, 0x0c, 0xd1, 0, 5, 0, 7, 0x68, 0x69]],
  ['PUBLISH QoS -1 short topic', { type: 'publish', flags: flags({ qos: -1, topicIdType: 2 }), topicId: 0x6162, msgId: 0, data: hex([0x7a]) }, [0x08, 0x0c, 0x62, 0x61, 0x62, 0, 0, 0x7a]],
  ['PUBACK invalid topic id', { type: 'puback', topicId: 5, msgId: 7, returnCode: 2 }, [0x07, 0x0d, 0, 5, 0, 7, 0x02]],
  ['PUBCOMP', { type: 'pubcomp', msgId: 7 }, [0x04, 0x0e, 0, 7]],
  ['PUBREC', { type: 'pubrec', msgId: 7 }, [0x04, 0x0f, 0, 7]],
  ['PUBREL', { type: 'pubrel', msgId: 7 }, [0x04, 0x10, 0, 7]],
  ['SUBSCRIBE topic name QoS 1', { type: 'subscribe', flags: flags({ qos: 1 }), msgId: 3, topicName: 'a/#' }, [0x08, 0x12, 0x20, 0, 3, 0x61, 0x2f, 0x23]],
  ['SUBSCRIBE predefined id', { type: 'subscribe', flags: flags({ topicIdType: 1 }), msgId: 3, topicId: 9 }, [0x07, 0x12, 0x01, 0, 3, 0, 9]],
  ['SUBACK', { type: 'suback', flags: flags({ qos: 1 }), topicId: 4, msgId: 3, returnCode: 0 }, [0x08, 0x13, 0x20, 0, 4, 0, 3, 0]],
  ['UNSUBSCRIBE short topic', { type: 'unsubscribe', flags: flags({ topicIdType: 2 }), msgId: 3, topicId: 0x6162 }, [0x07, 0x14, 0x02, 0, 3, 0x61, 0x62]],
  ['UNSUBACK', { type: 'unsuback', msgId: 3 }, [0x04, 0x15, 0, 3]],
  ['PINGREQ with ClientId', { type: 'pingreq', clientId: 'ab' }, [0x04, 0x16, 0x61, 0x62]],
  ['PINGREQ', { type: 'pingreq' }, [0x02, 0x16]],
  ['PINGRESP', { type: 'pingresp' }, [0x02, 0x17]],
  ['DISCONNECT', { type: 'disconnect' }, [0x02, 0x18]],
  ['DISCONNECT with a duration (sleep)', { type: 'disconnect', duration: 60 }, [0x04, 0x18, 0, 60]],
  ['WILLTOPICUPD', { type: 'willtopicupd', flags: flags(), topic: 'w' }, [0x04, 0x1a, 0x00, 0x77]],
  ['WILLTOPICUPD empty (delete)', { type: 'willtopicupd' }, [0x02, 0x1a]],
  ['WILLTOPICRESP', { type: 'willtopicresp', returnCode: 0 }, [0x03, 0x1b, 0]],
  ['WILLMSGUPD', { type: 'willmsgupd', message: hex([0x79]) }, [0x03, 0x1c, 0x79]],
  ['WILLMSGRESP', { type: 'willmsgresp', returnCode: 3 }, [0x03, 0x1d, 3]]
]

t.test('each message type encodes to the spec\'s octets and decodes back', async (t) => {
  for (const [what, packet, octets] of LAYOUTS) {
    t.same([...encode(packet)], octets, `${what}: encode`)
    t.same(decode(hex(octets)), packet, `${what}: decode`)
  }
})

t.test('the flags octet: DUP, QoS (0b11 = -1), Retain, Will, CleanSession, TopicIdType', async (t) => {
  t.equal(encodeFlags(flags({ dup: true })), 0x80)
  t.equal(encodeFlags(flags({ qos: 1 })), 0x20)
  t.equal(encodeFlags(flags({ qos: 2 })), 0x40)
  t.equal(encodeFlags(flags({ qos: -1 })), 0x60)
  t.equal(encodeFlags(flags({ retain: true })), 0x10)
  t.equal(encodeFlags(flags({ will: true })), 0x08)
  t.equal(encodeFlags(flags({ cleanSession: true })), 0x04)
  t.equal(encodeFlags(flags({ topicIdType: 2 })), 0x02)
  for (let octet = 0; octet < 256; octet++) t.equal(encodeFlags(decodeFlags(octet)), octet)
  t.same(decodeFlags(0xff), { dup: true, qos: -1, retain: true, will: true, cleanSession: true, topicIdType: 3 })
})

t.test('the length field: one octet up to 255, then 0x01 and two octets', async (t) => {
  const publish = (size: number): SnPacket => ({ type: 'publish', flags: flags(), topicId: 1, msgId: 0, data: Buffer.alloc(size, 0x61) })
  const at255 = encode(publish(248))
  t.equal(at255.length, 255)
  t.equal(at255[0], 255)
  const at258 = encode(publish(249))
  t.same([...at258.subarray(0, 4)], [0x01, 0x01, 0x02, 0x0c], '258 octets: 0x01 0x0102, then the type')
  t.same(decode(at258), publish(249))
  const big = encode(publish(300))
  t.same([...big.subarray(0, 3)], [0x01, 0x01, 0x35])
  t.same(decode(hex([0x01, 0x00, 0x04, 0x17])), { type: 'pingresp' }, 'the 3-octet form of a short packet is read too')
  t.throws(() => encode(publish(65_600)), RangeError, 'over 65535 octets')
})

t.test('malformed datagrams are refused with why, never anything else', async (t) => {
  const bad: Array<[number[], RegExp]> = [
    [[], /shorter than a header/],
    [[0x02], /shorter than a header/],
    [[0x00, 0x16], /length 0/],
    [[0x05, 0x01, 0x00], /length field says 5 octets, the datagram has 3/],
    [[0x02, 0x16, 0x00], /says 2 octets, the datagram has 3/],
    [[0x01, 0x00], /3-octet length field cut short/],
    [[0x01, 0x00, 0x09, 0x16], /says 9 octets, the datagram has 4/],
    [[0x01, 0x00, 0x03, 0x16], /says 3 octets, the datagram has 4/],
    [[0x02, 0x03], /0x03 is not one of MQTT-SN 1.2's/],
    [[0x02, 0x19], /0x19 is not one/],
    [[0x03, 0xfe, 0x00], /0xfe is not one/],
    [[0x06, 0x0b, 0, 1, 0, 1], /REGACK has 4 octet\(s\) after its type, not 5/],
    [[0x05, 0x04, 0x04, 0x01, 0x00], /CONNECT has 3 octet\(s\)/],
    [[0x08, 0x04, 0x04, 0x01, 0x00, 0x0a, 0xc3, 0x28], /ClientId is not UTF-8/],
    [[0x08, 0x04, 0x04, 0x01, 0x00, 0x0a, 0x61, 0x00], /ClientId holds U\+0000/],
    [[0x08, 0x12, 0x01, 0, 3, 0, 9, 9], /SUBSCRIBE with a topic id has 6/],
    [[0x03, 0x07, 0x00], /WILLTOPIC has 1 octet\(s\)/],
    [[0x03, 0x18, 0x00], /DISCONNECT has 1 octet\(s\) after its type, not 2/],
    [[0x06, 0x0c, 0, 0, 1, 0], /PUBLISH has 4 octet\(s\)/]
  ]
  for (const [octets, why] of bad) t.throws(() => decode(hex(octets)), { name: 'SnDecodeError', message: why }, JSON.stringify(octets))
  let other = 0
  for (let i = 0; i < 5000; i++) {
    const datagram = randomBytes(1 + (i % 40))
    if (i % 3 === 0) datagram[0] = datagram.length
    try {
      decode(datagram)
    } catch (err) {
      if (!(err instanceof SnDecodeError)) other++
    }
  }
  t.equal(other, 0, '5000 random datagrams: every refusal an SnDecodeError')
})

t.test('short topic names are their two octets', async (t) => {
  t.equal(shortTopicId('ab'), 0x6162)
  t.equal(shortTopicName(0x6162), 'ab')
  t.equal(shortTopicId('abc'), undefined)
  t.equal(shortTopicId('é'), 0xc3a9, 'two octets of UTF-8')
  t.equal(shortTopicName(0xc3a9), 'é')
  t.equal(shortTopicName(0xff00), undefined, 'not UTF-8')
})

t.test('the topic registry: ids per client, bounded; predefined and short names', async (t) => {
  const predefined = predefinedTopics({ 'mqtt.sn.predefined.topic.1': 'pre/one', 'mqtt.sn.predefined.topic.7': 'pre/seven' } as unknown as SnConfig)
  const registry = new TopicRegistry(() => predefined)
  const a = registry.register('a/b')
  t.equal(registry.register('a/b'), a, 'the same name, the same id')
  t.equal(registry.lookup(0, a!), 'a/b')
  t.equal(registry.lookup(1, 7), 'pre/seven')
  t.equal(registry.lookup(1, 2), undefined)
  t.equal(registry.lookup(2, 0x6162), 'ab')
  t.equal(registry.lookup(3, 1), undefined, 'the reserved type names nothing')
  t.same(registry.reference('pre/one'), { topicIdType: 1, topicId: 1 })
  t.same(registry.reference('a/b'), { topicIdType: 0, topicId: a })
  t.same(registry.reference('xy'), { topicIdType: 2, topicId: 0x7879 })
  t.equal(registry.reference('not/registered'), undefined)
  for (let i = 0; i < MAX_TOPICS + 10; i++) registry.register(`many/${i}`)
  t.equal(registry.size, MAX_TOPICS, `at most ${MAX_TOPICS} ids`)
  t.equal(registry.register('one/more'), undefined)
  registry.forget('a/b')
  t.equal(registry.lookup(0, a!), undefined)
  t.type(registry.register('one/more'), 'number', 'room again')
})

const FILE = 'etc/plugins/broker_sn.conf'
const read = (text: string): SnConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('settings: the shipped file is the schema\'s defaults', async (t) => {
  t.equal(plugin.name, 'broker_sn')
  const file = join(INSTALL_ROOT, FILE)
  const shipped = validatePluginConfig(schema, await readPluginConfigLines(file), file)
  t.same(shipped, read(''))
  t.same(read(''), {
    'mqtt.sn.port': '1884',
    'mqtt.sn.advertise_duration': 900_000,
    'mqtt.sn.advertise_to': '255.255.255.255',
    'mqtt.sn.gateway_id': 1,
    'mqtt.sn.idle_timeout': 30_000,
    'mqtt.sn.username': '',
    'mqtt.sn.password': '',
    'mqtt.sn.enable_qos3': false,
    'mqtt.sn.subs_resume': false,
    'mqtt.sn.max_connections': 1024,
    'mqtt.sn.max_packet_size': 4096,
    'mqtt.sn.retry_interval': 10_000,
    'mqtt.sn.max_retries': 4,
    'mqtt.sn.max_queue_len': 1000
  })
})

t.test('settings: values and predefined topics', async (t) => {
  const config = read([
    'mqtt.sn.port = 127.0.0.1:1885',
    'mqtt.sn.advertise_duration = 0',
    'mqtt.sn.enable_qos3 = on',
    'mqtt.sn.predefined.topic.0 = reserved',
    'mqtt.sn.predefined.topic.1 = /predefined/topic/name/hello',
    'mqtt.sn.predefined.topic.2 = /predefined/topic/name/nice',
    'mqtt.sn.predefined.topic.9 = /predefined/topic/name/hello'
  ].join('\n'))
  t.equal(config['mqtt.sn.port'], '127.0.0.1:1885')
  t.equal(config['mqtt.sn.advertise_duration'], 0)
  t.equal(config['mqtt.sn.enable_qos3'], true)
  const { byId, byName } = predefinedTopics(config)
  t.same([...byId], [[1, '/predefined/topic/name/hello'], [2, '/predefined/topic/name/nice'], [9, '/predefined/topic/name/hello']], 'id 0 (reserved) is ignored')
  t.equal(byName.get('/predefined/topic/name/hello'), 1, 'a name given twice: the lowest id')
  t.same(advertiseTarget('255.255.255.255', 1884), { host: '255.255.255.255', port: 1884 })
  t.same(advertiseTarget('10.0.0.255:2000', 1884), { host: '10.0.0.255', port: 2000 })
  t.same(advertiseTarget('[ff02::1]:1884', 1), { host: 'ff02::1', port: 1884 })
})

t.test('settings: bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('mqtt.sn.port = 1884\nmqtt.sn.port = udp'), { message: /^etc\/plugins\/broker_sn\.conf:2: mqtt\.sn\.port: .*<port> or <address>:<port>/ })
  t.throws(() => read('mqtt.sn.gateway_id = 256'), { message: /:1: mqtt\.sn\.gateway_id: 256 is out of range 0\.\.255$/ })
  t.throws(() => read('mqtt.sn.advertise_duration = 500ms'), { message: /:1: mqtt\.sn\.advertise_duration: .*under 1s/ })
  t.throws(() => read('mqtt.sn.advertise_duration = 20h'), { message: /over 65535s/ })
  t.throws(() => read('mqtt.sn.idle_timeout = soon'), { message: /:1: mqtt\.sn\.idle_timeout: .*not a duration/ })
  t.throws(() => read('mqtt.sn.enable_qos3 = maybe'), { message: /:1: mqtt\.sn\.enable_qos3: \S+ is not a switch/ })
  t.throws(() => read('mqtt.sn.max_packet_size = 70000'), { message: /:1: mqtt\.sn\.max_packet_size: 70000 is out of range \d+\.\.65535$/ })
  t.throws(() => read('mqtt.sn.predefined.topic.3 = a/+/b'), { message: /:1: mqtt\.sn\.predefined\.topic\.3: "a\/\+\/b" is not a topic name/ })
  t.throws(() => read('mqtt.sn.predefined.topic.x = a'), { message: /:1: mqtt\.sn\.predefined\.topic\.x: .*topic id must be a number 0-65534/ })
  t.throws(() => read('mqtt.sn.predefined.topic.65535 = a'), { message: /topic id must be a number 0-65534/ })
  t.throws(() => read('mqtt.sn.advertise_to = 10.0.0.255:70000'), { message: /:1: mqtt\.sn\.advertise_to: 10\.0\.0\.255:70000 has a port over 65535/ })
  t.throws(() => read('mqtt.sn.advertise_to = a b'), { message: /:1: mqtt\.sn\.advertise_to: .*<address> or <address>:<port>/ })
  t.throws(() => read('mqtt.sn.enable_stats = on'), { message: /:1: mqtt\.sn\.enable_stats: unknown setting$/ })
})
