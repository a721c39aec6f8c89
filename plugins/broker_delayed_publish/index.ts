// broker_delayed_publish: `$delayed/<seconds>/<topic>` publishes <topic>
// after the delay (EMQ X's delayed publish). See README.md.
import { definePlugin } from '../../lib/plugin-kit/index.js'
import { delayedCommand } from './command.js'
import { delayedIntake } from './intake.js'
import { DelayedMessages } from './keeper.js'
import { delayedRoutes } from './routes.js'
import { schema, type DelayedConfig } from './settings.js'

export { schema, type DelayedConfig } from './settings.js'

export default definePlugin<DelayedConfig>({
  name: 'broker_delayed_publish',
  version: '0.1.0',
  description: 'Delayed publish: $delayed/<seconds>/<topic> is published after the delay',
  schema,
  load (ctx) {
    const node = ctx.node.name
    const messages = new DelayedMessages({
      store: ctx.store,
      timers: ctx.timers,
      publish: ctx.broker.publish,
      cluster: ctx.cluster,
      node,
      logger: ctx.logger,
      limit: () => ctx.config['delayed.max_delayed_messages']
    })
    // released last: the hook, the routes and the command go first
    ctx.onUnload(async () => await messages.close())
    // the store is read while the node goes on starting (a million records take a while): what is due goes out as it is found
    messages.scan().then(
      (report) => ctx.logger.info({ ...report }, 'delayed messages restored'),
      (err: Error) => ctx.logger.error({ err }, 'delayed messages not restored'))
    ctx.cluster.onNodeLeft((left) => {
      messages.scan().catch((err: Error) => ctx.logger.error({ err, node: left }, 'delayed messages of a node that left not taken over'))
    })
    const delayed = ctx.metrics.counter('messages/delayed', 'Messages taken in by delayed publish')
    ctx.hooks.add('message.publish', delayedIntake(messages, node, ctx.logger, () => delayed.inc()))
    ctx.commands.add(delayedCommand(messages))
    for (const route of delayedRoutes(messages)) ctx.routes.add(route)
  }
})
