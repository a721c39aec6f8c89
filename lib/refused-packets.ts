// Packets the node refuses (malformed, a protocol violation, too large) are
// logged at `warning`, with the client and its address, so an operator sees a
// broken or hostile client without debug logging. At most PER_WINDOW records
// per WINDOW_MS: a flood of bad packets cannot flood the log; the number left
// out is logged with the next record.
import type { Client } from 'aedes'
import { connInfo } from './listeners/conn-info.js'
import type { Logger } from './log.js'
import { limitedLog } from './log-limit.js'

const PER_WINDOW = 20
const WINDOW_MS = 10_000

/** Not a refused packet: the connection ended or timed out. */
const ENDINGS = new Set(['connection closed', 'drain timeout', 'keep alive timeout', 'connect did not arrive in time'])

export function isRefusedPacket (err: Error): boolean {
  return !('syscall' in err) && !ENDINGS.has(err.message)
}

export function refusedPacketLog (logger: Logger, now: () => number = Date.now): (client: Client, err: Error) => void {
  const refused = limitedLog((fields, message) => logger.warn(fields, message), { perWindow: PER_WINDOW, windowMs: WINDOW_MS, now })
  return (client, err) => {
    const fields = { clientId: client.id, ipAddress: connInfo(client.conn)?.ipAddress, err: err.message }
    if (!isRefusedPacket(err)) {
      logger.debug(fields, 'client error')
      return
    }
    refused(fields, 'packet refused')
  }
}
