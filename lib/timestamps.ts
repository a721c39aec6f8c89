// The one place times are written, one form per surface (README "Timestamps"):
// - the management API (v3, v2), `broker_ctl` (text and `--json`) and `$SYS`:
//   SPEC §2's `YYYY-MM-DD HH:MM:SS`, local time (EMQ X's form; SPEC shows no zone);
// - logs (JSON lines, the log file), trace files and the reload log: RFC 3339
//   with the local offset and milliseconds, `2026-11-27T21:05:09.123+01:00`,
//   which sorts, parses everywhere and says its zone.

const pad = (n: number, width = 2): string => String(n).padStart(width, '0')

/** SPEC §2: `YYYY-MM-DD HH:MM:SS`, local time. */
export function specTime (date: Date | number = new Date()): string {
  const d = typeof date === 'number' ? new Date(date) : date
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** RFC 3339, local time with its offset and milliseconds: `2026-11-27T21:05:09.123+01:00`. */
export function rfc3339 (date: Date | number = new Date()): string {
  const d = typeof date === 'number' ? new Date(date) : date
  const offset = -d.getTimezoneOffset()
  const zone = `${offset < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`
  return `${specTime(d).replace(' ', 'T')}.${pad(d.getMilliseconds(), 3)}${zone}`
}
