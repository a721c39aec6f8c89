// broker_plugin_template: the example to copy when writing a plugin. It greets
// every client that connects by publishing `hello <clientId>` to
// `<template.greeting_topic>/<clientId>`, counts its greetings (a ctl command
// and an API route show the count) and raises an alarm when more than
// `template.alarm_after` clients connect within a minute. README.md explains
// the contract; etc/plugins/broker_plugin_template.conf holds the settings.
//
// To start a plugin of your own: copy this folder to plugins/broker_<name>/,
// rename it below and in the conf file, then replace the schema and the hooks.
import Joi from 'joi'
import { definePlugin, output, usageError, type ClientInfo, type CtlCommand, type PluginContext } from '../../lib/plugin-kit/index.js'

/** The settings, as `schema` validates and converts them (flat keys, as written in the .conf file). */
export interface TemplateConfig {
  'template.greeting_topic': string
  'template.alarm_after': number
}

/**
 * The schema sees every `key = value` line of etc/plugins/<name>.conf as a
 * string; Joi converts, fills defaults and rejects bad values. A rejection
 * stops the load with `<file>:<line>: <key>: <why>`. Keys the schema does not
 * know are refused too, so a typo in the file is caught. A key marked
 * `.meta({ live: true })` is changed at run time (API, ctl) without reloading
 * the plugin: its `ctx.onSettingChange` handler takes the new value.
 */
export const schema = Joi.object<TemplateConfig>({
  'template.greeting_topic': Joi.string()
    .pattern(/^[^+#]+$/, 'topic without + or #')
    .default('greetings')
    .meta({ live: true }),
  'template.alarm_after': Joi.number().integer().min(0).default(0)
    .description('greetings within one minute that raise an alarm; 0 = never')
})

/** What one load counts; made by `load`, so two loads never share it. */
export interface Greetings { total: number, thisMinute: number }

/** MQTT topic names may not hold wildcards, so such a client id cannot be a topic level. */
function topicLevelOk (clientId: string): boolean {
  return !/[+#]/.test(clientId)
}

export const ALARM_ID = 'broker_plugin_template_many_greetings'

/** Builds the `client.connected` handler over the context the host gave this load. */
export function greeter (ctx: PluginContext<TemplateConfig>, counts: Greetings): (client: ClientInfo) => void {
  return (client) => {
    if (!topicLevelOk(client.clientId)) {
      ctx.logger.debug({ clientId: client.clientId }, 'client id is not a valid topic level; no greeting')
      return
    }
    counts.total++
    counts.thisMinute++
    const limit = ctx.config['template.alarm_after']
    if (limit > 0 && counts.thisMinute > limit) {
      ctx.alarms.raise({ id: ALARM_ID, severity: 'warning', title: 'many greetings', summary: `more than ${limit} clients connected within a minute` })
    }
    // ctx.config is read at each call: a live change of the topic applies to the next greeting.
    // Notification handlers are synchronous and their return value is ignored, so a promise
    // they start must handle its own failure: an unhandled rejection would take the broker down.
    const prefix = ctx.config['template.greeting_topic']
    ctx.broker.publish({ topic: `${prefix}/${client.clientId}`, payload: `hello ${client.clientId}`, qos: 0 })
      .catch((err: Error) => ctx.logger.warn({ err, clientId: client.clientId }, 'greeting not published'))
  }
}

/** `broker_ctl template greetings | reset` */
export function templateCommand (counts: Greetings): CtlCommand {
  return {
    name: 'template',
    usage: [['template greetings', 'How many clients this plugin greeted'], ['template reset', 'Start counting again']],
    run: ([sub]) => {
      if (sub === 'greetings') return output(`greetings: ${counts.total}`, { greetings: counts.total })
      if (sub === 'reset') {
        counts.total = 0
        return output('ok', { greetings: 0 })
      }
      throw usageError('template greetings | template reset')
    }
  }
}

export default definePlugin<TemplateConfig>({
  // must equal the folder name: the host finds plugins by folder and checks this
  name: 'broker_plugin_template',
  version: '0.1.0',
  description: 'Example plugin: publishes a greeting when a client connects',
  schema,

  // Everything a plugin opens goes through `ctx`, and the host takes it all
  // back (newest first) when the plugin unloads, or when this load throws:
  //   ctx.config            the settings above, validated (live keys change in place)
  //   ctx.hooks.add         a handler on a hook point (README.md lists them)
  //   ctx.routes.add        an HTTP route the management API serves under /api/v3
  //   ctx.commands.add      a broker_ctl command
  //   ctx.alarms            raise / clear an alarm (cleared at unload)
  //   ctx.timers            setTimeout / setInterval (cleared at unload)
  //   ctx.servers / sockets a server or socket the plugin opens (closed at unload)
  //   ctx.onSettingChange   run when a live setting changes
  //   ctx.onUnload          any other cleanup (a pool, a client of another service)
  //   ctx.node              read the node: clients, sessions, metrics, settings
  //   ctx.broker            publish, subscribe a client, kick
  //   ctx.store             durable key/value strings of this plugin
  //   ctx.logger, ctx.root  a logger tagged with the plugin's name; the install folder
  // Keep state in what load makes (like `counts`), never in module variables:
  // the module is imported once, but may be loaded, unloaded and loaded again.
  load (ctx) {
    const counts: Greetings = { total: 0, thisMinute: 0 }
    ctx.hooks.add('client.connected', greeter(ctx, counts))
    ctx.commands.add(templateCommand(counts))
    ctx.routes.add({
      method: 'GET',
      path: '/template/greetings',
      access: 'read',
      // what the OpenAPI document (GET /api/v3/openapi.json) says of the route; `validate: { query, payload }` checks the request too
      summary: 'How many clients were greeted, and on which topic',
      response: Joi.object({ greetings: Joi.number().integer().min(0).required(), topic: Joi.string().required() }),
      handler: () => ({ greetings: counts.total, topic: ctx.config['template.greeting_topic'] })
    })
    ctx.timers.setInterval(() => {
      counts.thisMinute = 0
      ctx.alarms.clear(ALARM_ID)
    }, 60_000)
    ctx.onSettingChange('template.greeting_topic', (topic) => ctx.logger.info({ topic }, 'greeting topic changed'))
    ctx.onUnload(() => ctx.logger.info({ greetings: counts.total }, 'greeter unloaded'))
  }
})
