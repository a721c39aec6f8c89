// What may be done to the broker's traffic on someone's behalf: publish as
// the node, subscribe or unsubscribe a connected client, end a connection.
import type { Aedes, PublishPacket } from 'aedes'
import { PublishStop } from '../engine/callbacks.js'
import type { PublishProperties } from '../hooks/types.js'
import { engineSubscribe, engineUnsubscribe, type SubscriptionOptions } from '../engine/internals.js'
import { foldPublish, isStopped } from '../hooks/folds.js'
import type { HookRegistry } from '../hooks/registry.js'
import { noteTopicRewrite } from '../hooks/rewritten.js'
import { noteDisconnectReason } from '../hooks/engine-events.js'
import { connInfo } from '../listeners/conn-info.js'
import type { OperationContext } from './context.js'
import { ServiceError } from './service-error.js'
import { validTopicFilter, validTopicName } from './topic-validation.js'

/**
 * What a caller publishes as the node (SPEC §4.3); `clientId` names the publisher (default `http`);
 * `properties`: MQTT 5 properties the message carries (a plugin's, e.g. a delayed message's own).
 */
export interface ApiPublishRequest { topic: string, payload?: string | Buffer, qos?: 0 | 1 | 2, retain?: boolean, clientId?: string, properties?: PublishProperties }

const ALWAYS = (): boolean => true

/**
 * Publishes as the node: no client, no ACL check; resolves once the engine has
 * taken it. It goes through `message.publish` first (not the node's own
 * `$SYS/` notices); a handler's stop resolves quietly when it took the message
 * in (below 0x80) and rejects with a `PublishStop` when it refused it.
 */
export async function publishAsNode (engine: Aedes, hooks: HookRegistry, request: ApiPublishRequest): Promise<void> {
  const { qos = 0, properties } = request
  let { topic, retain = false } = request
  let payload: Buffer = Buffer.from(request.payload ?? '')
  if (hooks.has('message.publish') && !topic.startsWith('$SYS/')) {
    const result = await foldPublish(hooks, { topic, payload, qos, retain, properties, authorize: ALWAYS })
    if (isStopped(result)) {
      if (result.stop < 0x80) return
      throw new PublishStop(result.stop, result.reason)
    }
    ({ topic, payload, retain } = result)
  }
  if (hooks.has('message.accepted') && !topic.startsWith('$SYS/')) hooks.notify('message.accepted', { topic, payload, qos, retain })
  const packet: PublishPacket = { cmd: 'publish', topic, payload, qos, retain, dup: false }
  if (properties !== undefined) packet.properties = { ...properties }
  noteTopicRewrite(packet, request.topic, topic)
  await new Promise<void>((resolve, reject) => {
    engine.publish(packet, (err?: Error | null) => err ? reject(err) : resolve())
  })
}

export interface BrokerActions {
  /** Publishes as the node (no ACL check: the caller is trusted); `bad_topic` for a topic that is not a name. */
  publish: (request: ApiPublishRequest) => Promise<void>
  /**
   * Subscribes a connected client, as if it had sent SUBSCRIBE (ACL checked, retained messages sent); `not_online`
   * when it is not connected here. `options`: MQTT 5 No Local, Retain As Publish, Retain Handling.
   */
  subscribe: (clientId: string, topic: string, qos: 0 | 1 | 2, options?: SubscriptionOptions) => Promise<void>
  unsubscribe: (clientId: string, topic: string) => Promise<void>
  /** Ends a connection (MQTT 5: DISCONNECT 0x98 administrative action); false when it is not connected here. */
  kick: (clientId: string) => boolean
}

const MQTT5_ADMINISTRATIVE_ACTION = 0x98

export function brokerActions (context: OperationContext): BrokerActions {
  const { parts, tracking } = context

  const filterOf = (topic: string): void => {
    if (!validTopicFilter(topic)) throw new ServiceError('bad_topic', `bad topic filter ${JSON.stringify(topic)}`)
  }
  const connected = (clientId: string): NonNullable<ReturnType<OperationContext['onlineClient']>> => {
    const client = context.onlineClient(clientId)
    if (client === undefined) throw new ServiceError('not_online', `client ${clientId} is not online`)
    return client
  }

  return {
    publish: async (request) => {
      if (!validTopicName(request.topic)) throw new ServiceError('bad_topic', `bad topic name ${JSON.stringify(request.topic)}`)
      try {
        await publishAsNode(parts.engine, parts.hooks, request)
      } catch (err) {
        if (!(err instanceof PublishStop)) throw err
        throw new ServiceError('bad_value', `${err.message} (reason code 0x${err.reasonCode.toString(16)})`)
      }
    },
    subscribe: async (clientId, topic, qos, options) => {
      filterOf(topic)
      await engineSubscribe(connected(clientId), topic, qos, options)
    },
    unsubscribe: async (clientId, topic) => {
      filterOf(topic)
      await engineUnsubscribe(connected(clientId), topic)
    },
    kick: (clientId) => {
      const client = context.onlineClient(clientId)
      if (client === undefined) return false
      noteDisconnectReason(client, 'kicked')
      const listener = connInfo(client.conn)?.listener
      if (listener !== undefined) tracking.noteKicked(listener)
      client.disconnect({ reasonCode: MQTT5_ADMINISTRATIVE_ACTION })
      return true
    }
  }
}
