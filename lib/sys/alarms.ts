// Alarms (SPEC §2.18, §6): raised and cleared by id. A raised alarm is
// "present" until cleared, then kept in the history with `clear_at`
// (EMQ X's later present/history split). Raising publishes its record as
// JSON to `$SYS/brokers/<node>/alarms/<id>/alert`, clearing publishes the
// history record to `…/alarms/<id>/clear` (QoS 0, not retained). Raising an
// alarm that is present already changes nothing, so a check that keeps
// finding the same condition does not repeat the message.
// Other parts (plugins, the cluster) may raise and clear their own alarms.
import type { Logger } from '../log.js'
import { specTime } from '../timestamps.js'

export type Severity = 'notice' | 'warning' | 'error' | 'critical'

export interface AlarmInput {
  id: string
  severity: Severity
  title: string
  summary: string
}

export interface Alarm extends AlarmInput {
  /** `YYYY-MM-DD HH:MM:SS`, when raised */
  timestamp: string
}

export interface ClearedAlarm extends Alarm {
  /** `YYYY-MM-DD HH:MM:SS`, when cleared */
  clear_at: string
}

/** Oldest entries leave the history beyond this. */
const HISTORY_SIZE = 1000

export type AlarmPublisher = (suffix: string, payload: string) => void

export class Alarms {
  readonly #present = new Map<string, Alarm>()
  readonly #history: ClearedAlarm[] = []

  constructor (private readonly publish: AlarmPublisher, private readonly logger: Logger) {}

  /** Raises the alarm; false when it is present already. */
  raise (input: AlarmInput): boolean {
    if (this.#present.has(input.id)) return false
    const alarm: Alarm = { id: input.id, severity: input.severity, title: input.title, summary: input.summary, timestamp: specTime() }
    this.#present.set(alarm.id, alarm)
    this.logger.warn({ alarm: alarm.id, severity: alarm.severity }, `alarm raised: ${alarm.title}: ${alarm.summary}`)
    this.publish(`alarms/${alarm.id}/alert`, JSON.stringify(alarm))
    return true
  }

  /** Clears the alarm; false when it was not present. */
  clear (id: string): boolean {
    const alarm = this.#present.get(id)
    if (alarm === undefined) return false
    this.#present.delete(id)
    const cleared: ClearedAlarm = { ...alarm, clear_at: specTime() }
    this.#history.push(cleared)
    if (this.#history.length > HISTORY_SIZE) this.#history.shift()
    this.logger.info({ alarm: id }, `alarm cleared: ${alarm.title}`)
    this.publish(`alarms/${id}/clear`, JSON.stringify(cleared))
    return true
  }

  isRaised (id: string): boolean {
    return this.#present.has(id)
  }

  /** Alarms raised and not cleared, oldest first. */
  present (): Alarm[] {
    return [...this.#present.values()]
  }

  /** Cleared alarms, oldest first. */
  history (): ClearedAlarm[] {
    return [...this.#history]
  }

  /** EMQ X 3.x record form: `{id, desc: {severity, title, summary, timestamp}}`. */
  static toEmqx (alarm: Alarm): { id: string, desc: Omit<Alarm, 'id'> } {
    const { id, ...desc } = alarm
    return { id, desc }
  }
}
