// broker_statsd: pushes the node's metrics, statistics and runtime figures
// to a StatsD server over UDP every `statsd.flush_interval` (EMQ X's
// emqx_statsd). Counters go as increments since the previous push (`|c`),
// statistics and runtime figures as gauges (`|g`), with `statsd.prefix`,
// DogStatsD tags (`statsd.tags`) and `statsd.sample_rate`. The lines are
// made by hot-shots and sent by udp-sender.ts from UDP sockets opened
// through the plugin's context. A server that is down or a name that does
// not resolve costs a counted failure and a warning a minute, never the node.
import StatsD from 'hot-shots'
import { definePlugin, eventLoopProbe, gcProbe, keyValues, output, specTime, usageError, type CtlCommand } from '../../lib/plugin-kit/index.js'
import { Failures, type FailureFacts } from './failures.js'
import { Readings } from './readings.js'
import { parseTags, schema, type StatsdConfig } from './settings.js'
import { UdpSender } from './udp-sender.js'

export { schema, parseTags, type StatsdConfig } from './settings.js'

/** The event-loop delay is sampled every this many ms between pushes. */
const LOOP_RESOLUTION_MS = 20

export interface StatsdStatus {
  server: string
  /** the address the name resolved to at the latest push */
  address?: string
  prefix: string
  tags: string[]
  sample_rate: number
  flush_interval_ms: number
  pushes: number
  /** datagrams the system took */
  sent: number
  /** ms since the epoch */
  last_push_at?: number
  failures: FailureFacts
}

function statusCommand (status: () => StatsdStatus): CtlCommand {
  return {
    name: 'statsd',
    usage: [['statsd status', 'Show where the StatsD metrics go, how many pushes and datagrams went and the latest failure']],
    run: ([sub, ...rest]) => {
      if (sub !== 'status' || rest.length > 0) throw usageError('statsd status')
      const facts = status()
      const text = keyValues({
        server: `${facts.server}${facts.address === undefined ? '' : ` (${facts.address})`}`,
        prefix: facts.prefix === '' ? '(none)' : facts.prefix,
        tags: facts.tags.length === 0 ? '(none)' : facts.tags.join(','),
        sample_rate: facts.sample_rate,
        flush_interval: `${facts.flush_interval_ms} ms`,
        pushes: facts.pushes,
        datagrams_sent: facts.sent,
        last_push: facts.last_push_at === undefined ? 'none yet' : specTime(facts.last_push_at),
        failures: `${facts.failures.count}${facts.failures.last === undefined ? '' : ` (latest: ${facts.failures.last})`}`
      })
      return output(text, facts)
    }
  }
}

export default definePlugin<StatsdConfig>({
  name: 'broker_statsd',
  version: '0.1.0',
  description: 'StatsD: pushes metrics, statistics and runtime figures to a StatsD server over UDP',
  schema,

  load (ctx) {
    const config = ctx.config
    const server = `${config['statsd.host']}:${config['statsd.port']}`
    const tags = parseTags(config['statsd.tags'], ctx.node.name)
    const failures = new Failures(ctx.logger, server)
    const sender = new UdpSender({
      host: config['statsd.host'],
      port: config['statsd.port'],
      track: (socket) => ctx.sockets.add(socket),
      onError: (err) => failures.report(err)
    })
    const client = new StatsD({
      protocol: 'stream',
      stream: sender.stream,
      prefix: config['statsd.prefix'],
      globalTags: tags,
      sampleRate: config['statsd.sample_rate'],
      // one line per datagram; nothing from the DD_* environment, no telemetry of its own
      maxBufferSize: 0,
      datadog: false,
      includeDataDogTags: false,
      includeDatadogTelemetry: false,
      originDetection: false,
      errorHandler: (err) => failures.report(err)
    })
    ctx.onUnload(async () => await new Promise<void>((resolve) => client.close(() => resolve())))
    const loop = eventLoopProbe(LOOP_RESOLUTION_MS)
    ctx.onUnload(loop.stop)
    const gc = gcProbe()
    ctx.onUnload(gc.stop)
    const readings = new Readings(ctx.node, loop, gc)

    let unloaded = false
    let pushing = false
    let pushes = 0
    let lastPushAt: number | undefined
    const push = async (): Promise<void> => {
      // a push still waiting for the name to resolve: this one is skipped, its increments go with the next
      if (pushing) return
      pushing = true
      try {
        // the readings wait while the name does not resolve: the next push sends the increments since the last that went
        if (!await sender.resolve() || unloaded) return
        for (const line of readings.take()) {
          if (line.type === 'c') client.increment(line.name, line.value)
          else client.gauge(line.name, line.value)
        }
        pushes++
        lastPushAt = Date.now()
      } finally {
        pushing = false
      }
    }
    ctx.timers.setInterval(() => {
      push().catch((err: Error) => failures.report(err))
    }, config['statsd.flush_interval'])
    ctx.commands.add(statusCommand(() => ({
      server,
      address: sender.target?.address,
      prefix: config['statsd.prefix'],
      tags,
      sample_rate: config['statsd.sample_rate'],
      flush_interval_ms: config['statsd.flush_interval'],
      pushes,
      sent: sender.sent,
      last_push_at: lastPushAt,
      failures: failures.facts()
    })))
    // released first (newest first): a push that resolves after this sends nothing
    ctx.onUnload(() => { unloaded = true })
  }
})
