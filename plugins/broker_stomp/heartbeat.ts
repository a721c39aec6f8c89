// STOMP heart-beating (1.1+): CONNECT's `heart-beat: cx,cy` says how often
// the client can send (cx) and wants to receive (cy), in ms, 0 for never.
// The node agrees to both (as EMQ X, it answers `cy,cx`), but never more
// often than once a second, so a client cannot make it write a thousand
// heart-beats a second. It sends an EOL when it wrote nothing for the agreed
// interval, and closes the connection when nothing came from the client for
// twice the client's interval.
import type { PluginContext, PluginTimer } from '../../lib/plugin-kit/index.js'

export const MIN_HEARTBEAT_MS = 1000
/** silence allowed from the client, in its intervals */
export const TOLERANCE = 2

export interface Heartbeat {
  /** ms between the node's heart-beats (0: none) */
  send: number
  /** ms the client agreed to send within (0: not watched) */
  expect: number
}

/** The agreed intervals, or an error text for a header that is not `<ms>,<ms>`. */
export function negotiate (header: string | undefined): Heartbeat | string {
  if (header === undefined) return { send: 0, expect: 0 }
  const match = /^\s*(\d{1,9})\s*,\s*(\d{1,9})\s*$/.exec(header)
  if (match === null) return `heart-beat ${JSON.stringify(header.slice(0, 32))} is not <ms>,<ms>`
  const cx = Number(match[1])
  const cy = Number(match[2])
  return { send: cy === 0 ? 0 : Math.max(cy, MIN_HEARTBEAT_MS), expect: cx === 0 ? 0 : Math.max(cx, MIN_HEARTBEAT_MS) }
}

/** CONNECTED's `heart-beat`: the node's sx (what it sends), sy (what it expects). */
export function replyHeader (heartbeat: Heartbeat): string {
  return `${heartbeat.send},${heartbeat.expect}`
}

/** Runs the agreed heart-beats of one connection; `stop` when it closes. */
export function startHeartbeat (timers: PluginContext<unknown>['timers'], heartbeat: Heartbeat, io: { idleSince: () => { read: number, written: number }, beat: () => void, dead: () => void }): { stop: () => void } {
  const running: PluginTimer[] = []
  if (heartbeat.send > 0) {
    running.push(timers.setInterval(() => {
      if (Date.now() - io.idleSince().written >= heartbeat.send * 0.9) io.beat()
    }, heartbeat.send))
  }
  if (heartbeat.expect > 0) {
    running.push(timers.setInterval(() => {
      if (Date.now() - io.idleSince().read > heartbeat.expect * TOLERANCE) io.dead()
    }, heartbeat.expect))
  }
  return { stop: () => { for (const timer of running) timer.cancel() } }
}
