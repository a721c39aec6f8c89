// The alarms every page's header shows a count of: polled from the API. An
// alarm that was present and is gone is kept as cleared (with the time it
// was seen gone) so the Alarms page can show what happened while it was open;
// a history the server keeps is shown there too when it serves one.
import { createContext } from 'preact'
import { useContext, useRef, useState } from 'preact/hooks'
import { v3, type ByNode } from './api.js'
import { useLoad, usePoll } from './hooks.js'
import type { AlarmRecord } from './types.js'

export type NodeAlarm = AlarmRecord & { node: string }

export interface AlarmWatch {
  present: NodeAlarm[]
  cleared: NodeAlarm[]
  error: string | undefined
  reload: () => Promise<void>
}

export const ALARM_POLL_MS = 5000

export const AlarmsContext = createContext<AlarmWatch>({ present: [], cleared: [], error: undefined, reload: async () => {} })
export const useAlarms = (): AlarmWatch => useContext(AlarmsContext)

const keyOf = (a: NodeAlarm): string => `${a.node}/${a.id}/${a.desc.timestamp}`
/** `YYYY-MM-DD HH:MM:SS` in local time, as the node writes its alarms' times */
function stamp (d: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

export function useAlarmWatch (): AlarmWatch {
  const seen = useRef(new Map<string, NodeAlarm>())
  const [cleared, setCleared] = useState<NodeAlarm[]>([])
  const loaded = useLoad(async () => {
    const byNode = await v3.get<ByNode<'alarms', AlarmRecord[]>>('/alarms/')
    const present = byNode.flatMap((entry) => 'alarms' in entry ? entry.alarms.map((a) => ({ ...a, node: entry.node })) : [])
    const now = new Set(present.map(keyOf))
    const gone = [...seen.current.entries()].filter(([key]) => !now.has(key)).map(([, a]) => ({ ...a, desc: { ...a.desc, clear_at: stamp(new Date()) } }))
    if (gone.length > 0) setCleared((before) => [...gone, ...before].slice(0, 200))
    seen.current = new Map(present.map((a) => [keyOf(a), a]))
    return present
  }, [])
  usePoll(() => { void loaded.reload() }, ALARM_POLL_MS)
  return { present: loaded.data ?? [], cleared, error: loaded.error, reload: loaded.reload }
}
