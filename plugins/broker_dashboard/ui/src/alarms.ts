// The alarms every page's header shows a count of: polled from the API.
import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import { v3, type ByNode } from './api.js'
import { useLoad, usePoll } from './hooks.js'
import type { AlarmRecord } from './types.js'

export type NodeAlarm = AlarmRecord & { node: string }

export interface AlarmWatch {
  present: NodeAlarm[]
  error: string | undefined
  reload: () => Promise<void>
}

export const ALARM_POLL_MS = 5000

export const AlarmsContext = createContext<AlarmWatch>({ present: [], error: undefined, reload: async () => {} })
export const useAlarms = (): AlarmWatch => useContext(AlarmsContext)

/** `GET /alarms/` or `/alarms/history/` (SPEC's by-node form) as one list, each alarm with its node */
export async function alarmsByNode (path: '/alarms/' | '/alarms/history/'): Promise<NodeAlarm[]> {
  const byNode = await v3.get<ByNode<'alarms', AlarmRecord[]>>(path)
  return byNode.flatMap((entry) => 'alarms' in entry ? entry.alarms.map((a) => ({ ...a, node: entry.node })) : [])
}

export function useAlarmWatch (): AlarmWatch {
  const loaded = useLoad(async () => await alarmsByNode('/alarms/'), [])
  usePoll(loaded.reload, ALARM_POLL_MS)
  return { present: loaded.data ?? [], error: loaded.error, reload: loaded.reload }
}
