// One load's reloads: asks the host (the `plugin_code` capability) to swap a
// plugin's code, records each outcome in the reload log, and keeps each
// plugin folder's signature so the interval check reloads a plugin once per
// change of its files (a failed reload is not tried again until they change).
import type { PluginCode, PluginContext } from '../../lib/plugin-kit/index.js'
import { folderSignature } from './code-watch.js'
import type { ReloadCause, ReloadLog, ReloadOutcome } from './reload-log.js'

/** Why a reload was refused: `self` (the reloader's own code), or the node's operation's refusal. */
export type RefusalKind = 'self' | 'not_found' | 'failed' | 'badrpc'

export type Outcome = ReloadOutcome & ({ ok: true } | { ok: false, kind: RefusalKind })

export interface Reloads {
  /** reloads `plugin` on `node` (default this node); never throws */
  reload: (plugin: string, by: ReloadCause, node?: string) => Promise<Outcome>
  /** takes every plugin folder's signature as the state to compare with */
  baseline: () => Promise<void>
  /** reloads each plugin whose files changed since the last look; one check at a time */
  check: () => Promise<void>
}

export function reloads<C> (ctx: PluginContext<C>, code: PluginCode, log: ReloadLog): Reloads {
  const signatures = new Map<string, string>()
  /** `tracking`: the interval check runs (a baseline was taken) */
  const state = { tracking: false, checking: false, stopped: false }
  ctx.onUnload(() => { state.stopped = true })

  const selfRefusal = `${ctx.name} cannot reload its own code: the reload would unload the reloader while it runs it; restart the node to run its new code`

  /** The folder's signature now, remembered; undefined when the plugin or its folder is gone. */
  const look = async (plugin: string): Promise<string | undefined> => {
    let folder: string
    try {
      folder = code.folder(plugin)
    } catch {
      return undefined
    }
    const signature = await folderSignature(folder)
    if (signature !== undefined) signatures.set(plugin, signature)
    return signature
  }

  /** `looked`: the folder's signature was just taken (the interval check); else it is taken before the import, when the interval runs */
  const swap = async (plugin: string, by: ReloadCause, node: string, looked: boolean): Promise<Outcome> => {
    let outcome: Outcome
    if (plugin === ctx.name) {
      outcome = { ok: false, kind: 'self', reason: selfRefusal }
    } else {
      // the files as they are before the import are what this reload stands for: a change
      // made while it runs (a build still writing) is seen by the next check
      if (!looked && state.tracking && node === ctx.node.name) await look(plugin)
      try {
        outcome = { ok: true, result: await code.reload(plugin, node) }
      } catch (err) {
        const kind = (err as { kind?: string }).kind
        outcome = { ok: false, kind: kind === 'not_found' || kind === 'badrpc' ? kind : 'failed', reason: (err as Error).message }
      }
    }
    log.record({ plugin, node, by, outcome })
    return outcome
  }

  const names = async (): Promise<string[]> => (await code.plugins()).map((p) => p.name)

  return {
    reload: async (plugin, by, node = ctx.node.name) => await swap(plugin, by, node, false),
    baseline: async () => {
      state.tracking = true
      for (const plugin of await names()) await look(plugin)
    },
    check: async () => {
      if (state.checking) return
      state.checking = true
      try {
        for (const plugin of await names()) {
          if (state.stopped) return
          const before = signatures.get(plugin)
          const now = await look(plugin)
          if (before === undefined || now === undefined || now === before) continue
          if (plugin === ctx.name) {
            ctx.logger.warn({ plugin }, `its own files changed: ${selfRefusal}`)
            continue
          }
          await swap(plugin, 'interval', ctx.node.name, true)
        }
      } finally {
        state.checking = false
      }
    }
  }
}
