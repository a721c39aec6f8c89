// Publishing through a cluster bus (lib/cluster/bus.ts) in a test: the bus's
// callback as a promise, settled once the message's bus part is done.
import type { RedisBus } from '../../lib/cluster/bus.js'

export interface BusMessage { topic: string, qos?: number, payload?: Buffer, retain?: boolean, cmd?: 'publish' }

export const emitted = async (b: RedisBus, packet: BusMessage): Promise<void> =>
  await new Promise((resolve, reject) => b.emit(packet as never, (err) => err === undefined ? resolve() : reject(err)))
