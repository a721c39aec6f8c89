// The node's settings (SPEC §2.14) and the ACL rules: list and change them,
// read the ACL file again, forget a client's cached ACL answers.
import { clientState } from '../access/client-state.js'
import { changeSetting, OverrideWriteError } from '../config/overrides.js'
import { canonicalKey } from '../config/schema.js'
import type { OperationContext } from './context.js'
import type { ConfigFacts } from './facts.js'
import { SECRET_SETTINGS } from './node-status.js'
import { ServiceError } from './service-error.js'

export interface ConfigOperations {
  /** Every setting; a secret one shows `******` when set, never its value. */
  configs: () => ConfigFacts[]
  /**
   * Changes one setting of `app` now (parts that read it act on it at once, or
   * on the `change` event) and keeps it in <data_dir>/configs.override when
   * the configuration has overrides (lib/config/overrides.ts).
   */
  setConfig: (app: string, key: string, value: string, origin?: string, nextStart?: boolean) => void
  /** Reads `mqtt.acl_file` again and forgets every client's cached answers; a bad file keeps the rules in force. */
  reloadAcl: () => Promise<number>
  /** Forgets a connected client's cached ACL answers for one topic, or all; false when it is not connected here. */
  cleanAclCache: (clientId: string, topic?: string) => boolean
}

export function configOperations (context: OperationContext): ConfigOperations {
  const { config, access } = context.parts
  return {
    configs: () => config.items().map(({ key, value, datatype, app, kind }) => ({ key, value: SECRET_SETTINGS.has(key) && value !== '' ? '******' : value, datatype, app, kind })),
    setConfig: (app, key, value, origin = 'management api', nextStart = false) => {
      const item = config.items().find((i) => i.key === canonicalKey(key))
      if (item === undefined || item.app !== app) throw new ServiceError('not_found', `no setting ${key} in ${app}`)
      try {
        changeSetting(config, key, value, origin, nextStart)
      } catch (err) {
        throw new ServiceError(err instanceof OverrideWriteError ? 'failed' : 'bad_value', (err as Error).message)
      }
    },
    reloadAcl: async () => {
      let count: number
      try {
        count = await access.reload()
      } catch (err) {
        throw new ServiceError('bad_value', (err as Error).message)
      }
      for (const client of context.online()) {
        const state = clientState(client)
        if (state !== undefined) access.cleanCache(state)
      }
      return count
    },
    cleanAclCache: (clientId, topic) => {
      const client = context.onlineClient(clientId)
      const state = client === undefined ? undefined : clientState(client)
      if (state === undefined) return false
      access.cleanCache(state, topic)
      return true
    }
  }
}
