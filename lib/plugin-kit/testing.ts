// What a plugin's tests use from the core: the install root, the plugin
// settings parser and validator (as the host reads etc/plugins/<name>.conf),
// a logger, a context for unit tests of a plugin's handlers without a node
// (fake-context.ts), and a real node in the test's process with the plugin
// loaded and connected MQTT and HTTP clients (harness.ts, on test-node.ts).
export * from './index.js'
export { INSTALL_ROOT } from '../root.js'
export { parseConfigText } from '../config/parse.js'
export { readPluginConfigLines, validatePluginConfig } from '../plugins/plugin-config.js'
export { createLogger } from '../log.js'
export type { BannedEntry } from '../access/banned.js'
export * from './fake-context.js'
export * from './test-node.js'
export * from './harness.js'
