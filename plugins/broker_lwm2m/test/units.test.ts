// broker_lwm2m's codecs and parsers without a node: TLV, LwM2M JSON and
// plain text against the LwM2M 1.0 TS's own examples (§6.4.3.1, §6.4.3.2,
// §6.4.4), the shipped object definitions, commands, registration
// parameters, the datagram check, the settings.
import t from 'tap'
import { parseCommand } from '../commands.js'
import { decodeContent, splitLinks } from '../content.js'
import { decodeJson, encodeJson } from '../lwm2m-json.js'
import { parseObjectXml } from '../objects.js'
import { parseObjectLinks, parseRegister, parseUpdate, queryOf, RegistrationError } from '../registration.js'
import { checkConfig, schema } from '../settings.js'
import { decodeText, encodeText } from '../text.js'
import { decodeTlv, encodeTlv, parseTlv } from '../tlv.js'
import { wellFormed } from '../transport.js'
import { ContentError, FORMAT, parsePath, type Value } from '../values.js'
import { definitions } from './device.js'

const registry = definitions()
const typeOf = registry.typeOf
const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex')

/** TS §6.4.3.1: the Device object instance /3/0 in TLV. */
const DEVICE_TLV = hex(`
  C8 00 14 4F 70 65 6E 20 4D 6F 62 69 6C 65 20 41 6C 6C 69 61 6E 63 65
  C8 01 16 4C 69 67 68 74 77 65 69 67 68 74 20 4D 32 4D 20 43 6C 69 65 6E 74
  C8 02 09 33 34 35 30 30 30 31 32 33
  C3 03 31 2E 30
  86 06 41 00 01 41 01 05
  88 07 08 42 00 0E D8 42 01 13 88
  87 08 41 00 7D 42 01 03 84
  C1 09 64
  C1 0A 0F
  83 0B 41 00 00
  C4 0D 51 82 42 8F
  C6 0E 2B 30 32 3A 30 30
  C1 10 55`)

const DEVICE_VALUES: Array<[string, Value]> = [
  ['/3/0/0', 'Open Mobile Alliance'],
  ['/3/0/1', 'Lightweight M2M Client'],
  ['/3/0/2', '345000123'],
  ['/3/0/3', '1.0'],
  ['/3/0/6/0', 1],
  ['/3/0/6/1', 5],
  ['/3/0/7/0', 3800],
  ['/3/0/7/1', 5000],
  ['/3/0/8/0', 125],
  ['/3/0/8/1', 900],
  ['/3/0/9', 100],
  ['/3/0/10', 15],
  ['/3/0/11/0', 0],
  ['/3/0/13', 1367491215],
  ['/3/0/14', '+02:00'],
  ['/3/0/16', 'U']
]

t.test('TLV: the TS\'s Device instance example, both ways', async (t) => {
  const entries = decodeTlv(DEVICE_TLV, [3, 0], typeOf)
  t.same(entries.map((e) => [e.path, e.value]), DEVICE_VALUES)
  const encoded = encodeTlv([3, 0], DEVICE_VALUES.map(([path, value]) => ({ path: parsePath(path)!, value })), typeOf)
  t.equal(encoded.toString('hex'), DEVICE_TLV.toString('hex'), 'written byte for byte as the TS does')
  t.same(decodeTlv(DEVICE_TLV, [3], typeOf).map((e) => e.path)[0], '/3/0/0', 'read on the object: the instance is 0')
})

t.test('TLV: the TS\'s Access Control example (object instances, a 16-bit resource instance id)', async (t) => {
  const bytes = hex(`
    08 00 0E C1 00 01 C1 01 00 83 02 41 7F 07 C1 03 7F
    08 02 12 C1 00 03 C1 01 00 87 02 41 7F 07 61 01 36 01 C1 03 7F`)
  t.same(decodeTlv(bytes, [2], typeOf).map((e) => [e.path, e.value]), [
    ['/2/0/0', 1], ['/2/0/1', 0], ['/2/0/2/127', 7], ['/2/0/3', 127],
    ['/2/2/0', 3], ['/2/2/1', 0], ['/2/2/2/127', 7], ['/2/2/2/310', 1], ['/2/2/3', 127]
  ])
  const tree = parseTlv(bytes)
  t.same(tree.map((e) => [e.kind, e.id]), [['instance', 0], ['instance', 2]])
  const written = encodeTlv([2], decodeTlv(bytes, [2], typeOf).map((e) => ({ path: parsePath(e.path)!, value: e.value })), typeOf)
  t.equal(written.toString('hex'), bytes.toString('hex'))
})

t.test('TLV: a resource, resource instances, every type, and what is not TLV', async (t) => {
  t.same(decodeTlv(hex('C1 09 64'), [3, 0, 9], typeOf), [{ path: '/3/0/9', value: 100 }])
  t.same(decodeTlv(hex('41 00 01 41 01 05'), [3, 0, 6], typeOf), [{ path: '/3/0/6/0', value: 1 }, { path: '/3/0/6/1', value: 5 }])
  t.same(decodeTlv(hex('86 06 41 00 01 41 01 05'), [3, 0, 6], typeOf).length, 2)
  const each: Array<[number[], Value]> = [
    [[3, 0, 13], -2], [[3, 0, 13], 2 ** 40], [[6, 0, 0], 43.5723], [[1, 0, 6], true], [[3, 0, 22, 0], '3:1'], [[6, 0, 4], 'AQL+'], [[3, 0, 9], -129]
  ]
  for (const [path, value] of each) {
    const bytes = encodeTlv(path.slice(0, path.length === 4 ? 3 : 2), [{ path, value }], typeOf)
    t.same(decodeTlv(bytes, path.slice(0, 2), typeOf)[0].value, value, `${path.join('/')} = ${String(value)}`)
  }
  t.equal(encodeTlv([3, 0], [{ path: [3, 0, 9], value: -129 }], typeOf).toString('hex'), 'c209ff7f', 'the smallest integer size')
  t.throws(() => parseTlv(hex('C8 00 14 4F 70')), ContentError, 'cut short')
  t.throws(() => parseTlv(hex('C8')), ContentError)
  t.throws(() => parseTlv(hex('08 00 03 08 00 00')), ContentError, 'an instance inside an instance')
  t.throws(() => decodeTlv(hex('C2 09 00 00 00'), [3, 0], typeOf), ContentError, 'an integer of 3 bytes')
  t.throws(() => decodeTlv(hex('C1 06 02'), [1, 0], typeOf), ContentError, 'a boolean of 2')
  t.throws(() => parseTlv(Buffer.alloc(10_000, 0x40)), /more than 4096/, 'a bound on elements')
})

t.test('LwM2M JSON: the TS\'s Device example, both ways', async (t) => {
  const text = '{"bn":"/3/0/","e":[{"n":"0","sv":"Open Mobile Alliance"},{"n":"1","sv":"Lightweight M2M Client"},{"n":"2","sv":"345000123"},{"n":"3","sv":"1.0"},{"n":"6/0","v":1},{"n":"6/1","v":5},{"n":"7/0","v":3800},{"n":"7/1","v":5000},{"n":"8/0","v":125},{"n":"8/1","v":900},{"n":"9","v":100},{"n":"10","v":15},{"n":"11/0","v":0},{"n":"13","v":1367491215},{"n":"14","sv":"+02:00"},{"n":"16","sv":"U"}]}'
  t.same(decodeJson(Buffer.from(text), [3, 0], typeOf).map((e) => [e.path, e.value]), DEVICE_VALUES)
  t.equal(encodeJson([3, 0], DEVICE_VALUES.map(([path, value]) => ({ path: parsePath(path)!, value })), typeOf).toString(), text)
  t.same(decodeJson(Buffer.from('{"e":[{"n":"","bv":true}]}'), [1, 0, 6], typeOf), [{ path: '/1/0/6', value: true }], 'no bn: the request path')
  t.same(decodeJson(Buffer.from('{"bn":"/3/0/22/","e":[{"n":"0","ov":"3:1"}]}'), [3, 0], typeOf), [{ path: '/3/0/22/0', value: '3:1' }])
  t.throws(() => decodeJson(Buffer.from('{"bn":"/3/0/"}'), [3, 0], typeOf), ContentError)
  t.throws(() => decodeJson(Buffer.from('[1'), [3, 0], typeOf), ContentError)
  t.throws(() => decodeJson(Buffer.from('{"e":[{"n":"9"}]}'), [3, 0], typeOf), ContentError, 'no value')
  t.throws(() => decodeJson(Buffer.from('{"bn":"/x/","e":[{"n":"9","v":1}]}'), [3, 0], typeOf), ContentError, 'not a path')
})

t.test('plain text and opaque, and the content dispatcher', async (t) => {
  t.same(decodeText(Buffer.from('100'), [3, 0, 9], typeOf), [{ path: '/3/0/9', value: 100 }])
  t.same(decodeText(Buffer.from('1'), [1, 0, 6], typeOf), [{ path: '/1/0/6', value: true }])
  t.same(decodeText(Buffer.from('-43.5'), [6, 0, 0], typeOf), [{ path: '/6/0/0', value: -43.5 }])
  t.equal(encodeText(true).toString(), '1')
  t.equal(encodeText(12.5).toString(), '12.5')
  t.throws(() => decodeText(Buffer.from('ten'), [3, 0, 9], typeOf), ContentError)
  t.throws(() => decodeText(Buffer.from('2'), [1, 0, 6], typeOf), ContentError)
  t.throws(() => decodeText(Buffer.from('x'), [3, 0], typeOf), ContentError, 'text for an instance')
  t.same(decodeContent(FORMAT.opaque, Buffer.from([1, 2]), [6, 0, 4], typeOf), [{ path: '/6/0/4', value: 'AQI=' }])
  t.same(decodeContent(undefined, Buffer.from('7'), [3, 0, 9], typeOf), [{ path: '/3/0/9', value: 7 }], 'no format on a resource: text')
  t.same(decodeContent(FORMAT.tlvOld, hex('C1 09 64'), [3, 0], typeOf), [{ path: '/3/0/9', value: 100 }], 'the 1.0 drafts\' number')
  t.throws(() => decodeContent(50, Buffer.from('{}'), [3, 0], typeOf), /not one of LwM2M 1.0's/)
  t.same(splitLinks('</3/0>;dim=8,</3/0/1>;title="a,b",</5>'), ['</3/0>;dim=8', '</3/0/1>;title="a,b"', '</5>'])
})

t.test('the shipped object definitions 0-7 parse, with their types', async (t) => {
  for (let id = 0; id <= 7; id++) t.ok(registry.get(id), `object ${id}`)
  t.equal(registry.get(3)?.name, 'Device')
  t.match(registry.get(3)?.resources.get(13), { name: 'Current Time', type: 'Time', operations: 'RW', multiple: false })
  t.match(registry.get(3)?.resources.get(4), { name: 'Reboot', type: 'None', operations: 'E' })
  t.equal(registry.get(2)?.resources.get(2)?.multiple, true)
  t.equal(typeOf(6, 0), 'Float')
  t.equal(typeOf(42, 0), undefined)
  t.throws(() => parseObjectXml('<LWM2M></LWM2M>'), /no <LWM2M><Object>/)
  t.throws(() => parseObjectXml('<LWM2M><Object><ObjectID>x</ObjectID></Object></LWM2M>'), /ObjectID/)
  t.throws(() => parseObjectXml('<LWM2M><Object><ObjectID>9</ObjectID><Resources><Item ID="0"><Type>Blob</Type></Item></Resources></Object></LWM2M>'), /type "Blob"/)
})

t.test('commands: EMQ X\'s JSON shapes planned as CoAP requests', async (t) => {
  const plan = (command: unknown): unknown => {
    const parsed = parseCommand(Buffer.from(JSON.stringify(command)), typeOf)
    return 'request' in parsed ? parsed.request : parsed
  }
  t.same(plan({ reqID: 1, msgType: 'read', data: { path: '/3/0/0' } }), { method: 'GET', path: [3, 0, 0] })
  t.same(plan({ reqID: 1, msgType: 'discover', data: { path: '3/0' } }), { method: 'GET', path: [3, 0], accept: FORMAT.link })
  t.same(plan({ reqID: 1, msgType: 'observe', data: { path: '/3/0/9' } }), { method: 'GET', path: [3, 0, 9], observe: 0 })
  t.same(plan({ reqID: 1, msgType: 'cancel-observe', data: { path: '/3/0/9' } }), { method: 'GET', path: [3, 0, 9], observe: 1 })
  t.same(plan({ reqID: 1, msgType: 'write-attr', data: { path: '/3/0/9', pmin: '10', pmax: 60, gt: 50.5 } }), { method: 'PUT', path: [3, 0, 9], query: ['pmin=10', 'pmax=60', 'gt=50.5'] })
  t.match(plan({ reqID: 1, msgType: 'write', data: { path: '/3/0/13', type: 'Time', value: '1367491215' } }), { method: 'PUT', path: [3, 0, 13], contentFormat: FORMAT.tlv, payload: hex('C4 0D 51 82 42 8F') })
  t.match(plan({ reqID: 1, msgType: 'execute', data: { path: '/3/0/4', args: 'x' } }), { method: 'POST', payload: Buffer.from('x'), contentFormat: FORMAT.text })
  t.match(plan({ reqID: 1, msgType: 'write', data: { basePath: '/3/0', content: [{ path: '/14', value: '+01:00' }, { path: '/3/0/13', value: 5 }] } }), { method: 'POST', path: [3, 0] })
  t.match(plan({ msgType: 'read', data: { path: '/3/0/0/0/0' } }), { code: '4.00', reqID: null })
  t.match(plan({ reqID: 'a', msgType: 'write', data: { path: '/42/0/0', value: 1 } }), { code: '4.00', message: /not known: give "type"/ })
  t.match(plan({ reqID: 'a', msgType: 'write', data: { path: '/3/0', value: 1 } }), { code: '4.00', message: /resource path/ })
  t.match(plan({ reqID: 'a', msgType: 'write-attr', data: { path: '/3/0/9' } }), { code: '4.00', message: /without any of/ })
  t.match(plan({ reqID: 'a', msgType: 'write-attr', data: { path: '/3/0/9', pmin: 'soon' } }), { code: '4.00' })
  t.match(plan({ reqID: 'a', msgType: 'execute', data: { path: '/3/0' } }), { code: '4.00' })
  t.match(plan({ reqID: 'a', msgType: 'read', data: { path: '/65535' } }), { code: '4.00' })
  t.match(plan({ reqID: 'a', msgType: 'write', data: { basePath: '/3/0', content: Array.from({ length: 300 }, () => ({ path: '/9', value: 1 })) } }), { code: '4.00', message: /1-256 values/ })
  t.match(parseCommand(Buffer.alloc(70_000, 0x20), typeOf), { code: '4.00', message: /over 65536 bytes/ })
  t.match(parseCommand(Buffer.from('[]'), typeOf), { code: '4.00' })
  t.match(parseCommand(Buffer.from('{"reqID":1,"msgType":"read","data":[]}'), typeOf), { code: '4.00', msgType: 'read', reqID: 1 })
})

t.test('registration parameters and object links', async (t) => {
  const q = (text: string): Map<string, string> => queryOf(text.split('&'))
  t.same(parseRegister(q('ep=dev&lt=300&lwm2m=1.0&b=UQ&sms=123'), Buffer.from('</>;rt="oma.lwm2m";ct=11543,</1/0>,</3/0>,</5>')), {
    ep: 'dev', lt: 300, lwm2m: '1.0', b: 'UQ', sms: '123', alternatePath: '/', objectList: ['/1/0', '/3/0', '/5']
  })
  t.same(parseRegister(q('ep=dev'), Buffer.alloc(0)), { ep: 'dev', lt: 86400, lwm2m: '1.0', b: 'U', alternatePath: '/', objectList: [] }, 'the TS defaults')
  t.same(parseObjectLinks('</lwm2m>;rt="oma.lwm2m",</lwm2m/1/0>,</lwm2m/3/0>'), { alternatePath: '/lwm2m', objectList: ['/1/0', '/3/0'] })
  t.same(parseUpdate(q('lt=30'), Buffer.alloc(0)), { lt: 30 })
  for (const [query, payload] of [['lt=60', ''], ['ep=a/b', ''], ['ep=a#', ''], ['ep=d&lt=-1', ''], ['ep=d&b=T', ''], ['ep=d&lwm2m=2.0', ''], ['ep=d', '</3/0/1/2>'], ['ep=d', '3/0'], [`ep=${'e'.repeat(300)}`, '']]) {
    t.throws(() => parseRegister(q(query), Buffer.from(payload)), RegistrationError, `${query} ${payload}`)
  }
  t.throws(() => parseObjectLinks(Array.from({ length: 1100 }, (_, i) => `</3/${i}>`).join(',')), /more than 1024/)
})

t.test('datagram checks beyond coap-packet\'s', async (t) => {
  t.ok(wellFormed(hex('40 01 00 01')), 'a GET')
  t.ok(wellFormed(hex('60 00 12 34')), 'an empty ACK')
  t.ok(wellFormed(hex('42 02 00 01 aa bb b2 72 64 ff 01')), 'a POST with a token, an option and a payload')
  t.ok(wellFormed(hex('40 45 00 01 ff ff')), 'a payload of one 0xff byte')
  t.notOk(wellFormed(hex('40 01 00')), 'cut short')
  t.notOk(wellFormed(hex('49 01 00 01 00 00 00 00 00 00 00 00 00')), 'a token of 9')
  t.notOk(wellFormed(hex('48 01 00 01 00 00')), 'a token cut short')
  t.notOk(wellFormed(hex('40 20 00 01')), 'code class 1')
  t.notOk(wellFormed(hex('40 e0 00 01')), 'code class 7')
  t.notOk(wellFormed(hex('41 00 00 01 aa')), 'an empty message with a token')
  t.notOk(wellFormed(hex('40 01 00 01 ff')), 'a payload marker and no payload')
  // a device's answer to a command whose random token ends in 0xff was dropped as malformed: the command timed out (5.04)
  t.ok(wellFormed(hex('68 44 00 01 0c 36 f2 a9 ac 1c 7b ff')), 'an ACK 2.04 whose token ends in 0xff, no options, no payload')
  t.ok(wellFormed(hex('40 45 00 01 61 ff')), 'an option value ending in 0xff, no payload')
  t.notOk(wellFormed(hex('40 45 00 01 62 ff')), 'an option cut short')
  t.notOk(wellFormed(hex('42 45 00 01 aa ff 61 01 ff')), 'a token ending in 0xff, an option, a marker and no payload')
})

t.test('settings: defaults, durations, and refusals', async (t) => {
  const { value, error } = schema.validate({})
  t.notOk(error)
  t.match(value, { 'lwm2m.port': '5783', 'lwm2m.lifetime_min': 1000, 'lwm2m.lifetime_max': 86_400_000, 'lwm2m.qmode_time_window': 22_000, 'lwm2m.mountpoint': 'lwm2m/%e/', 'lwm2m.topics.command': 'dn/#', 'lwm2m.xml_dir': 'etc/lwm2m_xml' })
  t.equal(schema.validate({ 'lwm2m.qmode_time_window': '0' }).value?.['lwm2m.qmode_time_window'], 0)
  t.ok(schema.validate({ 'lwm2m.topics.response': 'up/+' }).error, 'a wildcard in a topic')
  t.ok(schema.validate({ 'lwm2m.mountpoint': 'lwm2m/#/' }).error)
  t.ok(schema.validate({ 'lwm2m.lifetime_min': '0s' }).error)
  t.ok(schema.validate({ 'lwm2m.port': '70000' }).error)
  t.throws(() => checkConfig({ ...value!, 'lwm2m.lifetime_min': 5000, 'lwm2m.lifetime_max': 1000 }), /lifetime_min is over/)
})
