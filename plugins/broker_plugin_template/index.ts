// broker_plugin_template: the example to copy when writing a plugin. It greets
// every client that connects by publishing `hello <clientId>` to
// `<template.greeting_topic>/<clientId>`. README.md explains the contract;
// etc/plugins/broker_plugin_template.conf holds its one setting.
//
// To start a plugin of your own: copy this folder to plugins/broker_<name>/,
// rename it below and in the conf file, then replace the schema and the hook.
import Joi from 'joi'
import { definePlugin, type ClientInfo, type PluginContext } from '../../lib/plugin-kit/index.js'

/** The settings, as `schema` validates and converts them (flat keys, as written in the .conf file). */
export interface TemplateConfig {
  'template.greeting_topic': string
}

/**
 * The schema sees every `key = value` line of etc/plugins/<name>.conf as a
 * string; Joi converts, fills defaults and rejects bad values. A rejection
 * stops the load with `<file>:<line>: <key>: <why>`. Keys the schema does not
 * know are refused too, so a typo in the file is caught.
 */
export const schema = Joi.object<TemplateConfig>({
  'template.greeting_topic': Joi.string()
    .pattern(/^[^+#]+$/, 'topic without + or #')
    .default('greetings')
})

/** MQTT topic names may not hold wildcards, so such a client id cannot be a topic level. */
function topicLevelOk (clientId: string): boolean {
  return !/[+#]/.test(clientId)
}

/** Builds the `client.connected` handler over the context the host gave this load. */
export function greeter (ctx: PluginContext<TemplateConfig>): (client: ClientInfo) => void {
  const prefix = ctx.config['template.greeting_topic']
  return (client) => {
    if (!topicLevelOk(client.clientId)) {
      ctx.logger.debug({ clientId: client.clientId }, 'client id is not a valid topic level; no greeting')
      return
    }
    // Notification handlers are synchronous and their return value is
    // ignored, so a promise they start must handle its own failure: an
    // unhandled rejection would take the whole broker down.
    ctx.publish({ topic: `${prefix}/${client.clientId}`, payload: `hello ${client.clientId}`, qos: 0 })
      .catch((err: Error) => ctx.logger.warn({ err, clientId: client.clientId }, 'greeting not published'))
  }
}

export default definePlugin<TemplateConfig>({
  // must equal the folder name: the host finds plugins by folder and checks this
  name: 'broker_plugin_template',
  version: '0.1.0',
  description: 'Example plugin: publishes a greeting when a client connects',
  schema,

  // `ctx` is everything a plugin may use:
  //   ctx.config     the settings above, validated (re-read on every load and reload)
  //   ctx.hooks.add  register a handler on a hook point (see README.md for the list)
  //   ctx.publish    publish a message as the node (no client, no ACL check)
  //   ctx.node       read access to the node: its name, a connected client's ClientInfo
  //   ctx.store      durable key/value strings of this plugin, kept across restarts
  //   ctx.logger     a logger tagged with the plugin's name
  //   ctx.root       the install folder, to resolve relative paths in settings
  // Keep what you need in closures (as greeter does), not in module variables:
  // the module is imported once, but may be loaded, unloaded and loaded again
  // (and serve several nodes in one process). A load that opens something
  // (a server, a pool, a timer) returns a function that closes it; the host
  // calls it when the plugin unloads (broker_management does this).
  load (ctx) {
    ctx.hooks.add('client.connected', greeter(ctx))
  },

  // Hooks need no removing here: the host removes every handler this plugin
  // added, after unload returns (and also when load throws). Release what the
  // host cannot see: clear timers and intervals, close sockets, servers, HTTP
  // agents and database pools, stop watchers. Once unload has returned, nothing
  // of this load may still run. This template holds nothing of that kind.
  unload () {}
})
