// A rate limit on log records: at most PER_WINDOW records per WINDOW_MS; the
// number left out is told with the next record that passes. A script that
// fails on every message cannot flood the log.
const PER_WINDOW = 10
const WINDOW_MS = 10_000

export type LimitedLog = (fields: Record<string, unknown>, message: string) => void

export function limitedLog (write: LimitedLog, now: () => number = Date.now): LimitedLog {
  let windowStart = -Infinity
  let logged = 0
  let left = 0
  return (fields, message) => {
    if (now() - windowStart >= WINDOW_MS) {
      windowStart = now()
      logged = 0
    }
    if (logged >= PER_WINDOW) {
      left++
      return
    }
    logged++
    write(left === 0 ? fields : { ...fields, notLogged: left }, left === 0 ? message : `${message} (${left} more not logged)`)
    left = 0
  }
}
