// Joins the node to its cluster (or makes it a cluster of one): the RPC
// listener first, so other nodes can ask it things; its membership record
// once it accepts clients; both end when it stops.
import { setTimeout as delay } from 'node:timers/promises'
import type { Config } from '../config/store.js'
import type { Backend } from '../engine/backend.js'
import type { Logger } from '../log.js'
import type { NodeOperations } from '../service/operations.js'
import { redisCluster, serveRemote, singleNodeCluster, type Cluster } from './cluster.js'
import { Membership } from './membership.js'
import { ClusterRpc } from './rpc.js'
import { RpcSeal } from './rpc-seal.js'
import { schema } from '../config/schema.js'
import { quietErrors } from './redis.js'
import { SharedPlacement } from './shared-placement.js'
import type { SharedSubscriptions } from '../engine/shared-subscriptions.js'
import type { AedesPublishPacket } from 'aedes'

/** How long a drain waits for Redis to name the other nodes before it takes the last heartbeat's view. */
const REFERENCE_READ_MS = 1000

export interface Clustering {
  cluster: Cluster
  /** the node accepts clients (at `mqttPort`, its TCP listener's port): tell the others */
  announce: (mqttPort?: number) => Promise<void>
  /** the node stops: leave the list, stop answering */
  leave: () => Promise<void>
  /** another live node's MQTT address, for a drained MQTT 5 client's Server Reference; undefined when alone. Read fresh from Redis (the last heartbeat's view when Redis does not answer within REFERENCE_READ_MS) */
  serverReference: () => Promise<string | undefined>
  /** the live nodes' names as last seen (for `$SYS/brokers`) */
  liveNodes: () => string[]
  /** the live nodes' names, read from the cluster now (this node among them, announced or not) */
  members: () => Promise<string[]>
  /** `listener()` whenever the set of live nodes changes */
  onMembersChanged: (listener: () => void) => void
  /** `listener(node)` when a node leaves the cluster, on one live node only (the first by name) */
  onNodeLeft: (listener: (node: string) => void) => void
  /** `listener(node)` when a node leaves the cluster, on every live node */
  onNodeDown: (listener: (node: string) => void) => void
}

interface JoinOptions { config: Config, backend: Backend, service: NodeOperations, shared: SharedSubscriptions, engineId: string, logger: Logger }

export async function joinCluster ({ config, backend, service, shared, engineId, logger }: JoinOptions): Promise<Clustering> {
  const startedAt = Date.now()
  if (backend.redis === undefined) {
    return { cluster: singleNodeCluster(service, startedAt, engineId), announce: async () => {}, leave: async () => {}, serverReference: async () => undefined, liveNodes: () => [service.name], members: async () => [service.name], onMembersChanged: () => {}, onNodeLeft: () => {}, onNodeDown: () => {} }
  }
  const prefix = config.get('cluster.name')
  const log = logger.child({ cluster: prefix })
  const seal = rpcSeal(config, log)
  const rpc = new ClusterRpc(backend.redis, quietErrors(backend.redis.duplicate()), prefix, service.name,
    async (method, args) => await serveRemote(service, method, args), config.get('cluster.rpc_timeout'), log, seal)
  await rpc.start()
  const heartbeatMs = config.get('cluster.heartbeat_interval')
  // a dead node is noticed within 4 heartbeats (its deadline is 3 ahead, read every heartbeat)
  const placement = new SharedPlacement(backend.redis, quietErrors(backend.redis.duplicate()), prefix, service.name, log, 5 * heartbeatMs + 2000,
    (key, packet) => shared.redeliver(key, packet as AedesPublishPacket))
  await placement.start()
  shared.placement = placement
  const membership = new Membership(backend.redis, prefix, { node: service.name, status: 'Running', started_at: startedAt, engine_id: engineId },
    heartbeatMs, log)
  membership.on('nodedown', (node: string) => placement.nodeDown(node))
  membership.on('changed', () => placement.nodesLive(membership.live()))
  return {
    cluster: redisCluster(membership, rpc),
    announce: async (mqttPort) => {
      membership.self.address = advertised(config, mqttPort)
      await membership.start()
      log.info({ nodes: (await membership.members()).map((m) => m.node) }, 'joined the cluster')
    },
    leave: async () => {
      await membership.stop()
      await rpc.stop()
      placement.stop()
    },
    serverReference: async () => {
      // the last heartbeat's view may predate a node that joined since
      const members = await Promise.race([membership.members(), delay(REFERENCE_READ_MS, undefined, { ref: false })]).catch(() => undefined)
      return (members ?? membership.liveMembers()).find((m) => m.node !== service.name && m.address !== undefined)?.address
    },
    liveNodes: () => membership.live(),
    members: async () => (await membership.members()).map((m) => m.node),
    onMembersChanged: (listener) => { membership.on('changed', listener) },
    onNodeLeft: (listener) => {
      membership.on('nodedown', (node: string) => {
        membership.members().then((members) => {
          if (members[0]?.node !== service.name) return
          listener(node)
          placement.forgetNode(node).catch((err: Error) => log.warn({ err: err.message, node }, 'shared subscription members of a node that left not removed'))
        }, (err: Error) => log.warn({ err: err.message }, 'cluster members not read'))
      })
    },
    onNodeDown: (listener) => { membership.on('nodedown', listener) }
  }
}

/** The seal of this cluster's RPC messages; an empty cookie stops the node, the shipped one is logged loudly at every start. */
function rpcSeal (config: Config, log: Logger): RpcSeal {
  const cookie = config.get('cluster.cookie')
  if (cookie === '') throw new Error('cluster.cookie is empty: set the same secret cookie on every node of the cluster (cluster.discovery = redis)')
  // the shipped cookie: known to anyone who has read etc/broker.conf
  if (cookie === schema['cluster.cookie'].default) {
    log.error('cluster.cookie is the shipped default: anyone who can publish on the cluster\'s Redis server can run management operations (setConfig, loadPlugin …) on every node. Set a secret cookie, the same on every node.')
  }
  return new RpcSeal(cookie, config.get('cluster.name'))
}

/** The host of the node name (`n1@10.0.0.11`) and the TCP listener's port; undefined without one. */
function advertised (config: Config, port: number | undefined): string | undefined {
  if (port === undefined) return undefined
  const name = config.get('node.name')
  const host = name.includes('@') ? name.slice(name.indexOf('@') + 1) : config.get('listener.tcp.external')?.host ?? '127.0.0.1'
  return `${host}:${port}`
}
