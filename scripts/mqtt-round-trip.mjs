#!/usr/bin/env node
// An MQTT 3.1.1 publish/subscribe round trip for scripts/production-smoke.sh:
// one client subscribes (QoS 1), another publishes (QoS 1), the first must
// receive the message. Written on mqtt-packet (the codec the engine itself
// parses with, a runtime dependency) so it runs in an install pruned of the
// dev dependencies and needs no Debian package.
//   usage: node scripts/mqtt-round-trip.mjs <port> [<host>]
import { connect } from 'node:net'
import mqttPacket from 'mqtt-packet'

const port = Number(process.argv[2])
const host = process.argv[3] ?? '127.0.0.1'
const topic = `smoke/${process.pid}`
const payload = `round trip ${Date.now()}`
const deadline = setTimeout(() => { console.error('mqtt round trip: no answer within 20 s'); process.exit(1) }, 20_000)

/** A connected client: `next(cmd)` resolves with the next packet of that type. */
async function client (clientId) {
  const socket = connect(port, host)
  const parser = mqttPacket.parser()
  const waiting = []
  const arrived = []
  parser.on('packet', (packet) => {
    const at = waiting.findIndex((w) => w.cmd === packet.cmd)
    if (at < 0) arrived.push(packet)
    else waiting.splice(at, 1)[0].resolve(packet)
  })
  socket.on('data', (data) => parser.parse(data))
  socket.on('error', (err) => { console.error(`mqtt round trip: ${clientId}: ${err.message}`); process.exit(1) })
  const next = async (cmd) => {
    const at = arrived.findIndex((p) => p.cmd === cmd)
    if (at >= 0) return arrived.splice(at, 1)[0]
    return await new Promise((resolve) => waiting.push({ cmd, resolve }))
  }
  const send = (packet) => socket.write(mqttPacket.generate(packet))
  send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 30 })
  const connack = await next('connack')
  if (connack.returnCode !== 0) throw new Error(`${clientId}: CONNACK return code ${connack.returnCode}`)
  return { socket, send, next }
}

const subscriber = await client(`smoke-sub-${process.pid}`)
subscriber.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
const suback = await subscriber.next('suback')
if (suback.granted[0] !== 1) throw new Error(`SUBACK granted ${suback.granted[0]}`)
const publisher = await client(`smoke-pub-${process.pid}`)
publisher.send({ cmd: 'publish', topic, payload, qos: 1, messageId: 1, retain: false, dup: false })
await publisher.next('puback')
const message = await subscriber.next('publish')
if (message.topic !== topic || message.payload.toString() !== payload) throw new Error(`received ${message.topic}: ${message.payload}`)
if (message.qos > 0) subscriber.send({ cmd: 'puback', messageId: message.messageId })
for (const c of [subscriber, publisher]) {
  c.send({ cmd: 'disconnect' })
  c.socket.end()
}
clearTimeout(deadline)
console.log(`mqtt round trip: ${topic} published and received`)
