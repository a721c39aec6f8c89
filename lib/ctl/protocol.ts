// The control channel between `broker_ctl` and a running node: a Unix socket
// under the node's data directory, mode 0600 (only the user the node runs as,
// and root, can use it). One JSON request line; the node answers with zero or
// more progress lines (only when the request asked for them) and then one
// answer line, and closes.
import { join } from 'node:path'

export const SOCKET_NAME = 'broker_ctl.sock'

export function controlSocketPath (dataDir: string): string {
  return join(dataDir, SOCKET_NAME)
}

/** `progress`: broker_ctl shows progress lines (someone waits at a terminal, or --progress) */
export interface CtlRequest { argv: string[], progress?: boolean }

/** A line before the answer: what a long operation has done so far. */
export interface CtlProgressLine { progress: string }

export type CtlResponse =
  | { ok: true, text: string, data: unknown }
  | { ok: false, exit: 1 | 2, error: string, usage?: string }
