// broker_modules: EMQ X 3.x's modules in one plugin, each switched on or off
// by its key (live: no reload): presence notices in $SYS (presence.ts), the
// subscriptions every client gets on connect (subscription.ts), and topic
// rewrite rules on publish, subscribe and unsubscribe (rewrite.ts,
// rewrite-hooks.ts). Settings: etc/plugins/broker_modules.conf.
import { definePlugin } from '../../lib/plugin-kit/index.js'
import { presence } from './presence.js'
import { rewriting } from './rewrite-hooks.js'
import { schema, type ModulesConfig } from './settings.js'
import { subscription } from './subscription.js'

export { schema, type ModulesConfig } from './settings.js'

export default definePlugin<ModulesConfig>({
  name: 'broker_modules',
  version: '0.1.0',
  description: 'EMQ X modules: presence notices, subscriptions on connect, topic rewrite',
  schema,
  load (ctx) {
    presence(ctx)
    subscription(ctx)
    rewriting(ctx)
  }
})
