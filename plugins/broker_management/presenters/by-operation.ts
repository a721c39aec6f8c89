// Which presenter makes the v3 answer of each operation from its facts: one
// node's answer goes through it before it is listed, paged or turned into v2.
import type { RemoteMethod } from '../../../lib/plugin-kit/admin.js'
import type { Alarm, ConfigFacts, ConnectionFacts, SessionFacts } from './facts.js'
import { alarmRecord, configRecord, connectionRecord, sessionRecord } from './records-v3.js'

const each = <F>(present: (facts: F) => unknown) => (value: unknown): unknown => (value as F[]).map(present)

const PRESENTERS: Partial<Record<RemoteMethod, (value: unknown) => unknown>> = {
  connections: each<ConnectionFacts>(connectionRecord),
  connection: each<ConnectionFacts>(connectionRecord),
  sessions: each<SessionFacts>(sessionRecord),
  session: each<SessionFacts>(sessionRecord),
  configs: each<ConfigFacts>(configRecord),
  alarms: each<Alarm>(alarmRecord),
  alarmHistory: each<Alarm>(alarmRecord)
}

/** One node's answer to `method` as the v3 API shows it (an answer with no presenter is shown as it is). */
export function present (method: RemoteMethod, value: unknown): unknown {
  const presenter = PRESENTERS[method]
  return presenter === undefined ? value : presenter(value)
}
