// The control channel between `broker_ctl` and a running node: a Unix socket
// under the node's data directory, mode 0600 (only the user the node runs as,
// and root, can use it). One JSON line each way per connection.
import { join } from 'node:path'

export const SOCKET_NAME = 'broker_ctl.sock'

export function controlSocketPath (dataDir: string): string {
  return join(dataDir, SOCKET_NAME)
}

export interface CtlRequest { argv: string[] }

export type CtlResponse =
  | { ok: true, text: string, data: unknown }
  | { ok: false, exit: 1 | 2, error: string, usage?: string }
