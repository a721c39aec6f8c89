// Usage of the node's own `broker_ctl` commands. Plain data, so that
// `broker_ctl help` can print it when no node is running; plugins bring the
// usage of the commands they add (users, clientid, mgmt, admins, reload, retainer).
import type { UsageLine } from './command.js'

export const NODE_USAGE = {
  status: [['status', 'Show broker status']],
  broker: [
    ['broker', 'Show broker version, uptime and description'],
    ['broker stats', 'Show broker statistics of clients, topics, subscribers'],
    ['broker metrics', 'Show broker metrics']
  ],
  cluster: [['cluster status', 'Cluster status']],
  node: [
    ['node drain [<Rate>]', 'Stop accepting connections, then disconnect the clients at <Rate> per second (default node.drain_rate); on a terminal or with --progress, follow it until done'],
    ['node drain status', 'Show how far the drain is'],
    ['node health', 'Show whether the node serves, and why not']
  ],
  acl: [['acl reload', 'Reload the ACL file (mqtt.acl_file) and clean every ACL cache']],
  clients: [
    ['clients list', 'List all clients'],
    ['clients show <ClientId>', 'Show a client'],
    ['clients kick <ClientId>', 'Kick out a client']
  ],
  sessions: [
    ['sessions list', 'List all sessions'],
    ['sessions show <ClientId>', 'Show a session']
  ],
  routes: [
    ['routes list', 'List all routes'],
    ['routes show <Topic>', 'Show a route']
  ],
  subscriptions: [
    ['subscriptions list', 'List all subscriptions'],
    ['subscriptions show <ClientId>', 'Show subscriptions of a client'],
    ['subscriptions add <ClientId> <Topic> <QoS>', 'Subscribe a connected client to a topic'],
    ['subscriptions del <ClientId> <Topic>', 'Unsubscribe a connected client from a topic']
  ],
  plugins: [
    ['plugins list', 'Show plugins'],
    ['plugins load <Plugin>', 'Load a plugin'],
    ['plugins unload <Plugin>', 'Unload a plugin'],
    ['plugins reload <Plugin>', 'Reload a plugin (reads its settings again)']
  ],
  listeners: [['listeners', 'List listeners']],
  vm: [
    ['vm all', 'Show load, memory, process, io and ports'],
    ['vm load', 'Show the load averages'],
    ['vm memory', 'Show the memory of the Node.js process'],
    ['vm process', 'Show the process'],
    ['vm io', 'Show file descriptors'],
    ['vm ports', 'Show open connections']
  ],
  log: [
    ['log set-level <Level>', 'Set the log level (debug, info, notice, warning, error, critical, alert, emergency)'],
    ['log primary-level', 'Show the log level']
  ],
  banned: [
    ['banned list', 'List banned entries'],
    ['banned add <As> <Who> [<Duration>] [<Reason>]', 'Ban a client_id, username or ip_address (default 5m, e.g. 1h)'],
    ['banned del <As> <Who>', 'Delete a banned entry']
  ],
  trace: [
    ['trace list', 'List all traces started'],
    ['trace client <ClientId> <File>', 'Write every packet a client sends and receives to a file'],
    ['trace client <ClientId> off', 'Stop tracing a client'],
    ['trace topic <Topic> <File>', 'Write every message published to a topic filter to a file'],
    ['trace topic <Topic> off', 'Stop tracing a topic']
  ]
} as const satisfies Record<string, readonly UsageLine[]>

export type NodeCommandName = keyof typeof NODE_USAGE

/** Commands plugins add, named for the help printed without a node. */
export const PLUGIN_COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ['users', 'broker_auth_username'],
  ['clientid', 'broker_auth_clientid'],
  ['mgmt', 'broker_management'],
  ['admins', 'broker_management'],
  ['reload', 'broker_reloader'],
  ['retainer', 'broker_retainer'],
  ['recon', 'broker_recon'],
  ['statsd', 'broker_statsd']
]
