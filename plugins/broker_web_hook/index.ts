// broker_web_hook: posts the node's events (connects, subscriptions,
// messages …) as JSON to an HTTP(S) endpoint, as EMQ X 3.x emqx_web_hook
// did; the rules in etc/plugins/broker_web_hook.conf name the events. The
// MQTT path never waits for the endpoint: events go through a bounded queue
// (drops counted) to a pool of keep-alive connections. See README.md.
import { definePlugin, type HookName } from '../../lib/plugin-kit/index.js'
import { Delivery } from './delivery.js'
import { eventHandlers } from './events.js'
import { eventsOf, type EventName } from './rules.js'
import { headersOf, readTlsFiles, rulesOf, schema, type WebHookConfig } from './settings.js'

export { schema, type WebHookConfig } from './settings.js'

/** Where the fold handlers run: after other plugins' (default 0), so the message posted is the one they made. */
export const PRIORITY = -100

/** EMQ X's metric of each event (`webhook.message_publish` …): events that matched a rule. */
const eventMetric = (event: EventName): string => `webhook.${event.replace('.', '_')}`

export default definePlugin<WebHookConfig>({
  name: 'broker_web_hook',
  version: '0.1.0',
  description: 'Posts client, session and message events as JSON to an HTTP(S) endpoint (EMQ X web hook)',
  schema,
  async check (config, root) {
    await readTlsFiles(config, root)
  },
  async load (ctx) {
    const config = ctx.config
    const url = config['web.hook.api.url']
    const tls = await readTlsFiles(config, ctx.root)
    const events = eventsOf(rulesOf(config))
    const counters = {
      sent: ctx.metrics.counter('webhook/sent', 'web hook events the endpoint accepted (2xx)'),
      failed: ctx.metrics.counter('webhook/failed', 'web hook events given up: an answer other than 2xx, or none after the retries'),
      dropped: ctx.metrics.counter('webhook/dropped', 'web hook events dropped because the queue was full')
    }
    const perEvent = new Map([...events.keys()].map((event) => [event, ctx.metrics.counter(eventMetric(event), `${event} events posted by the web hook`)]))
    const delivery = new Delivery({
      url,
      headers: headersOf(config),
      tls: { ...tls, verify: config['web.hook.ssl.verify'] },
      poolSize: config['web.hook.pool_size'],
      pipelining: config['web.hook.request.pipelining'],
      batchSize: config['web.hook.batch_size'],
      batchTime: config['web.hook.batch_time'],
      queueSize: config['web.hook.queue_size'],
      queueBytes: config['web.hook.queue_bytes'],
      timeout: config['web.hook.request.timeout'],
      retryTimes: config['web.hook.request.retry_times'],
      retryInterval: config['web.hook.request.retry_interval'],
      retryBackoff: config['web.hook.request.retry_backoff'],
      counters,
      alarms: ctx.alarms,
      logger: ctx.logger,
      plugin: ctx.name,
      node: ctx.node.name,
      encoding: config['web.hook.encode_payload']
    })
    ctx.onUnload(async () => await delivery.close())
    const handlers = eventHandlers({
      node: ctx.node.name,
      encoding: config['web.hook.encode_payload'],
      offer: (item) => delivery.offer(item),
      publish: (size, message, username, publisher) => delivery.publish(size, message, username, publisher),
      room: () => delivery.room,
      drop: () => delivery.drop(),
      count: (event) => perEvent.get(event)?.inc(),
      connection: (clientId) => ctx.node.connection(clientId)[0],
      username: (clientId) => ctx.node.client(clientId)?.username
    }, events)
    for (const [event, handler] of Object.entries(handlers) as Array<[HookName, never]>) ctx.hooks.add(event, handler, PRIORITY)
    if (url.startsWith('http:') && (tls.ca !== undefined || tls.cert !== undefined)) ctx.logger.warn({ url }, 'web.hook.ssl.* is set but the URL is http://: the files are not used')
    ctx.logger.info({ url, events: [...events.keys()], encoding: config['web.hook.encode_payload'] }, 'web hook ready')
  }
})
