// Shared subscriptions (MQTT 5 §4.8.2; EMQ X `$queue/`): `$share/<group>/<filter>`
// and `$queue/<filter>` (a group of its own) for MQTT 5 and 3.1.1 clients.
// Each group subscribes once to its filter; each message goes to one member,
// chosen by broker.shared_subscription_strategy. QoS 1/2 messages a member
// that ends its session (clean) never acknowledged are redispatched to another
// member of the group. The Aedes patch routes `$share/`/`$queue/` subscribes
// and unsubscribes here (`sharedSubscriptions` option).
import { createHash } from 'node:crypto'
import type { Aedes, AedesPublishPacket, Client } from 'aedes'
import type { Config } from '../config/store.js'
import { topicMatches } from '../access/acl-match.js'
import { engineMq, engineNewPacket, enginePersistence } from './internals.js'

type Deliver = (packet: AedesPublishPacket, cb: () => void) => void
interface Member { client: Client, deliver: Deliver }

class Group {
  readonly members: Member[] = []
  next = 0
  sticky: Member | undefined
  constructor (readonly key: string, readonly filter: string, readonly listener: Deliver) {}
}

export function parseShared (topic: string): { group: string, filter: string } | undefined {
  if (topic.startsWith('$queue/')) return { group: '$queue', filter: topic.slice(7) }
  if (!topic.startsWith('$share/')) return undefined
  const slash = topic.indexOf('/', 7)
  return slash < 0 ? undefined : { group: topic.slice(7, slash), filter: topic.slice(slash + 1) }
}

export class SharedSubscriptions {
  readonly #groups = new Map<string, Group>()
  #engine: Aedes | undefined
  /** told of each message published to a group with no member to take it (metrics) */
  onDropped: ((packet: AedesPublishPacket) => void) | undefined
  /** in a cluster: which node delivers a message of a group (lib/cluster/shared-placement.ts) */
  placement: { update: (group: string, count: number) => Promise<void>, claim: (group: string, identity: string, item: AedesPublishPacket) => boolean } | undefined

  constructor (private readonly config: Config) {}

  attach (engine: Aedes): void {
    this.#engine = engine
    ;(engine as unknown as NodeJS.EventEmitter).on('outboundAbandoned', (client: Client, packets: AedesPublishPacket[]) => this.#redispatch(client, packets))
  }

  /** shared subscriptions held (members of all groups) */
  get count (): number {
    let n = 0
    for (const group of this.#groups.values()) n += group.members.length
    return n
  }

  subscribe (topic: string, deliver: Deliver, done: (err?: Error) => void, client: Client): void {
    const parsed = parseShared(topic)
    if (parsed === undefined) return done(new Error(`not a shared subscription: ${topic}`))
    const key = `${parsed.group}\u0000${parsed.filter}`
    let group = this.#groups.get(key)
    const fresh = group === undefined
    if (group === undefined) {
      const created: Group = new Group(key, parsed.filter, (packet, cb) => this.#deliver(created, packet, cb))
      group = created
      this.#groups.set(key, group)
    }
    group.members.push({ client, deliver })
    const placed = this.#placed(group)
    if (fresh) engineMq(this.#engine!).on(group.filter, group.listener, () => { void placed.then(() => done()) })
    else void placed.then(() => done())
  }

  unsubscribe (topic: string, deliver: Deliver, done: (err?: Error) => void): void {
    const parsed = parseShared(topic)
    const group = parsed === undefined ? undefined : this.#groups.get(`${parsed.group}\u0000${parsed.filter}`)
    if (group === undefined) return done()
    const index = group.members.findIndex((m) => m.deliver === deliver)
    if (index >= 0) {
      const [gone] = group.members.splice(index, 1)
      if (group.sticky === gone) group.sticky = undefined
    }
    void this.#placed(group)
    if (group.members.length > 0) return done()
    this.#groups.delete(group.key)
    engineMq(this.#engine!).removeListener(group.filter, group.listener, () => done())
  }

  #deliver (group: Group, packet: AedesPublishPacket, cb: () => void): void {
    // [MQTT-4.7.2-1] a filter starting with a wildcard does not receive $ topics
    if (packet.topic.charCodeAt(0) === 36 && (group.filter.startsWith('#') || group.filter.startsWith('+'))) return cb()
    if (this.placement !== undefined && !this.placement.claim(group.key, this.#identity(group, packet), packet)) return cb()
    this.#deliverHere(group.key, packet, cb)
  }

  /** A message another node was to deliver, drawn for this node again (the placement's redelivery, lib/cluster/join.ts). */
  redeliver (key: string, packet: AedesPublishPacket): void {
    this.#deliverHere(key, packet)
  }

  /** To one of this node's members of the group (by the strategy); `cb` once it is queued or sent. */
  #deliverHere (key: string, packet: AedesPublishPacket, cb: () => void = () => {}): void {
    const group = this.#groups.get(key)
    const member = group === undefined ? undefined : this.#pick(group, packet)
    if (member === undefined) {
      this.onDropped?.(packet)
      return cb()
    }
    this.#deliverTo(member, packet, cb)
  }

  /** A persistent member's QoS 1/2 copy is queued in its session first, as Aedes does for ordinary subscriptions. */
  #deliverTo (member: Member, packet: AedesPublishPacket, cb: () => void): void {
    const { client } = member
    if (packet.qos === 0 || client.clean) return member.deliver(packet, cb)
    const persistence = enginePersistence<{ outgoingEnqueue: (sub: { clientId: string }, p: object) => Promise<void> }>(this.#engine!)
    persistence.outgoingEnqueue({ clientId: client.id }, packet).then(() => member.deliver(packet, cb), () => member.deliver(packet, cb))
  }

  /** Tells the cluster how many members this node has in the group (nothing on one node). */
  async #placed (group: Group): Promise<void> {
    await this.placement?.update(group.key, group.members.length).catch(() => {})
  }

  /** What the cluster-wide draw of a member hashes: the publisher (hash), the group (sticky), else the message itself. */
  #identity (group: Group, packet: AedesPublishPacket): string {
    switch (this.config.get('broker.shared_subscription_strategy')) {
      case 'hash': return this.#publisher(packet)
      case 'sticky': return group.key
      default: return `${packet.brokerId}:${packet.brokerCounter}`
    }
  }

  #publisher (packet: AedesPublishPacket): string {
    return (packet as AedesPublishPacket & { clientId?: string }).clientId ?? packet.topic
  }

  #pick (group: Group, packet: AedesPublishPacket): Member | undefined {
    const members = group.members.filter((m) => !m.client.closed)
    if (members.length === 0) return undefined
    switch (this.config.get('broker.shared_subscription_strategy')) {
      case 'round_robin':
        return members[group.next++ % members.length]
      case 'sticky':
        if (group.sticky === undefined || !members.includes(group.sticky)) group.sticky = members[Math.floor(Math.random() * members.length)]
        return group.sticky
      case 'hash': {
        return members[createHash('md5').update(this.#publisher(packet)).digest().readUInt32BE(0) % members.length]
      }
      default:
        return members[Math.floor(Math.random() * members.length)]
    }
  }

  /** A member's session ended with QoS 1/2 messages unacknowledged: each goes to another member of a group that matches it. */
  #redispatch (client: Client, packets: AedesPublishPacket[]): void {
    const engine = this.#engine!
    for (const packet of packets) {
      if (packet.qos === 0) continue
      for (const group of this.#groups.values()) {
        if (!topicMatches(group.filter, packet.topic) || !group.members.some((m) => m.client !== client)) continue
        const member = this.#pick(group, packet)
        if (member === undefined || member.client === client) continue
        // a fresh broker counter, so the new member's duplicate check lets it through
        this.#deliverTo(member, engineNewPacket(engine, packet), () => {})
        break
      }
    }
  }
}
