// broker_sn's counters, listed with the node's metrics (Prometheus
// `broker_mqttsn_…_total`) while the plugin is loaded.
import type { PluginContext, PluginCounter } from '../../lib/plugin-kit/index.js'

export interface SnCounters {
  received: PluginCounter
  sent: PluginCounter
  malformed: PluginCounter
  tooLarge: PluginCounter
  dropped: PluginCounter
  messagesDropped: PluginCounter
}

export function snCounters (ctx: PluginContext<unknown>): SnCounters {
  return {
    received: ctx.metrics.counter('mqttsn/packets/received', 'MQTT-SN packets received'),
    sent: ctx.metrics.counter('mqttsn/packets/sent', 'MQTT-SN packets sent'),
    malformed: ctx.metrics.counter('mqttsn/packets/malformed', 'MQTT-SN datagrams dropped as malformed (not a packet of MQTT-SN 1.2)'),
    tooLarge: ctx.metrics.counter('mqttsn/packets/too_large', 'MQTT-SN datagrams dropped over mqtt.sn.max_packet_size'),
    dropped: ctx.metrics.counter('mqttsn/packets/dropped', 'MQTT-SN packets dropped: not for the sender\'s state, an unknown sender, SEARCHGW over the rate, QoS -1 while off'),
    messagesDropped: ctx.metrics.counter('mqttsn/messages/dropped', 'messages to or from MQTT-SN clients dropped: a full queue, a message over the packet size, no topic id left, a congested link')
  }
}
