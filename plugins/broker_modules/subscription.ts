// The subscription module (EMQ X emqx_mod_subscription): every client that
// connects is subscribed to the `module.subscription.<n>.topic` filters, as if
// it had sent SUBSCRIBE (the client's ACL and mountpoint apply). `%c` is its
// client id and `%u` its user name; a value that cannot stand in a topic
// level (empty, missing, holding `+`, `#` or `/`) would widen the filter or
// break it, so that subscription is skipped and logged (as the ACL does for
// its placeholders). MQTT 5 clients get the item's No Local, Retain As
// Publish and Retain Handling; 3.x clients the topic and QoS.
import { fillLevelTemplate, validTopicFilter, type ClientInfo, type PluginContext } from '../../lib/plugin-kit/index.js'
import { subscriptionItems, type ModulesConfig, type SubscriptionItem } from './settings.js'

/** The item's filter for this client (the node's own placeholder rule, as for mountpoints), or why there is none. */
export function fillTemplate (template: string, client: Pick<ClientInfo, 'clientId' | 'username'>): { topic: string } | { skipped: string } {
  const filled = fillLevelTemplate(template, client)
  if ('unfit' in filled) {
    return { skipped: filled.unfit === 'clientId' ? 'the client id cannot stand in a topic level (empty, or holds +, # or /)' : 'the user name cannot stand in a topic level (none, empty, or holds +, # or /)' }
  }
  return validTopicFilter(filled.value) ? { topic: filled.value } : { skipped: 'the result is not a topic filter' }
}

export function subscription (ctx: PluginContext<ModulesConfig>): void {
  const items: SubscriptionItem[] = subscriptionItems(ctx.config)
  if (items.length === 0) return
  ctx.hooks.add('client.connected', (client) => {
    if (!ctx.config['module.subscription']) return
    for (const item of items) {
      const filled = fillTemplate(item.topic, client)
      if ('skipped' in filled) {
        ctx.logger.warn({ clientId: client.clientId, username: client.username, template: item.topic }, `module.subscription.${item.n} skipped: ${filled.skipped}`)
        continue
      }
      const options = client.protoVer === 5 ? { nl: item.nl, rap: item.rap, rh: item.rh } : undefined
      ctx.broker.subscribe(client.clientId, filled.topic, item.qos, options)
        // the client may be gone already
        .catch((err: Error) => ctx.logger.debug({ err, clientId: client.clientId, topic: filled.topic }, 'module subscription not made'))
    }
  })
}
