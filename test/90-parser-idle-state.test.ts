// The patched packet parser (patches/mqtt-packet+9.0.2.patch) between packets
// holds no packet and no part of the CONNECT (client id, credentials, will):
// only the protocol version it parses by (issue 20 #1, memory per idle
// connection). Packets split across reads, several in one read, and MQTT 5
// properties after the CONNECT still parse.
import t from 'tap'
import mqtt, { type Packet } from 'mqtt-packet'

function parserWith (packets: Packet[]): ReturnType<typeof mqtt.parser> {
  const parser = mqtt.parser()
  parser.on('packet', (packet: Packet) => packets.push(packet))
  parser.on('error', (err: Error) => { throw err })
  return parser
}

for (const protocolVersion of [4, 5] as const) {
  t.test(`MQTT ${protocolVersion === 5 ? '5' : '3.1.1'}: nothing kept between packets`, async (t) => {
    const packets: Packet[] = []
    const parser = parserWith(packets)
    const internals = parser as unknown as { packet: unknown, settings: Record<string, unknown> }
    const connect = mqtt.generate({
      cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, clientId: 'dev-1', keepalive: 60,
      username: 'user', password: Buffer.from('secret'),
      will: { topic: 'w', payload: Buffer.from('gone'), qos: 0, retain: false }
    })
    parser.parse(connect)
    t.equal(packets.length, 1)
    t.equal((packets[0] as { password?: Buffer }).password?.toString(), 'secret', 'the CONNECT is emitted whole')
    t.equal(internals.packet, null, 'no packet is held while no byte of the next has arrived')
    t.same(Object.keys(internals.settings).sort(), ['bridgeMode', 'protocolVersion'], 'the parser keeps only what it parses by')
    t.equal(internals.settings.protocolVersion, protocolVersion)

    const publish = mqtt.generate({
      cmd: 'publish', topic: 'a/b', payload: Buffer.from('x'.repeat(300)), qos: 1, messageId: 7, retain: false, dup: false,
      ...(protocolVersion === 5 ? { properties: { userProperties: { k: 'v' } } } : {})
    }, { protocolVersion })
    const ping = mqtt.generate({ cmd: 'pingreq' })
    // one byte, then the rest of the PUBLISH and a PINGREQ in one read
    parser.parse(publish.subarray(0, 1))
    t.not(internals.packet, null, 'a packet is made when its first byte arrives')
    parser.parse(Buffer.concat([publish.subarray(1), ping]))
    t.same(packets.slice(1).map((p) => p.cmd), ['publish', 'pingreq'])
    const parsed = packets[1] as mqtt.IPublishPacket
    t.equal(parsed.messageId, 7)
    t.equal(parsed.payload.length, 300)
    if (protocolVersion === 5) t.same(parsed.properties?.userProperties, { k: 'v' }, 'MQTT 5 properties parse by the kept version')
    t.equal(internals.packet, null)
  })
}
