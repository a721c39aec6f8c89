// A rate limit on log records: at most `perWindow` records per `windowMs`;
// the number left out is told with the next record that passes (a field
// `notLogged` and "(N more not logged)" after the message). A flood of one
// kind of failure cannot flood the log.

export type LimitedLog = (fields: Record<string, unknown>, message: string) => void

export interface LogLimit {
  perWindow: number
  windowMs: number
  now?: () => number
}

export function limitedLog (write: LimitedLog, { perWindow, windowMs, now = Date.now }: LogLimit): LimitedLog {
  let windowStart = -Infinity
  let logged = 0
  let left = 0
  return (fields, message) => {
    if (now() - windowStart >= windowMs) {
      windowStart = now()
      logged = 0
    }
    if (logged >= perWindow) {
      left++
      return
    }
    logged++
    write(left === 0 ? fields : { ...fields, notLogged: left }, left === 0 ? message : `${message} (${left} more not logged)`)
    left = 0
  }
}
