// broker_retainer: keeps the clients' retained MQTT messages (EMQ X's
// emqx_retainer). The node hands every retained PUBLISH (but its own `$SYS/`
// notices) to this plugin through the `retained` capability, and asks it for
// the messages a SUBSCRIBE gets. Unloaded, the retain flag is ignored:
// messages are delivered, nothing is stored or sent on SUBSCRIBE.
//
// storage_type: ram (memory.ts), disc (disc.ts), disc_only (store-only.ts);
// in a cluster every node keeps them in the cluster's store (store-only.ts).
// The limits and the expiry are keeper.ts; `broker_ctl retainer` command.ts.
import Joi from 'joi'
import { bytesizeSetting, definePlugin, durationSetting, type Logger, type PluginContext, type PluginStore } from '../../lib/plugin-kit/index.js'
import { retainerCommand } from './command.js'
import { DiscStorage } from './disc.js'
import { Keeper, type KeeperSettings } from './keeper.js'
import { MemoryStorage } from './memory.js'
import type { Limits, Storage } from './storage.js'
import { StoreOnlyStorage } from './store-only.js'

export type StorageType = 'ram' | 'disc' | 'disc_only'

export interface RetainerConfig extends KeeperSettings {
  'retainer.storage_type': StorageType
}

/** the longest expiry_interval: MQTT's largest Message Expiry Interval, 2^32-1 s */
const MAX_EXPIRY_MS = 4_294_967_295_000
/** how often expired messages are swept when retainer.expiry_interval is 0 (MQTT 5 messages may still carry an expiry) */
const DEFAULT_SWEEP_MS = 60_000
const MIN_SWEEP_MS = 1000
const MAX_SWEEP_MS = 3_600_000
const RECOUNT_MS = 1000

export const schema = Joi.object<RetainerConfig>({
  'retainer.storage_type': Joi.string().valid('ram', 'disc', 'disc_only').default('disc').meta({ datatype: 'enum' }),
  'retainer.max_retained_messages': Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0).meta({ live: true, datatype: 'integer' }),
  'retainer.max_payload_size': bytesizeSetting(1048576).meta({ live: true, datatype: 'bytesize' }),
  'retainer.expiry_interval': durationSetting(0, 0, { ms: MAX_EXPIRY_MS, said: '4294967295s (MQTT\'s longest message expiry)' }).meta({ live: true, datatype: 'duration' })
})

async function openStorage (type: StorageType, store: PluginStore, shared: boolean, limits: Limits, logger: Logger): Promise<Storage> {
  if (shared) return await StoreOnlyStorage.open(store, true, limits, logger)
  if (type === 'ram') return await MemoryStorage.open(store, limits, logger)
  if (type === 'disc') return await DiscStorage.open(store, limits, logger)
  return await StoreOnlyStorage.open(store, false, limits, logger)
}

/** Sweeps expired messages every retainer.expiry_interval (EMQ X's period), within 1 s … 1 h; every minute when it is 0. */
function sweepEvery (ctx: PluginContext<RetainerConfig>, keeper: Keeper): void {
  const period = (interval: number): number => interval === 0 ? DEFAULT_SWEEP_MS : Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, interval))
  const sweep = (): void => {
    keeper.sweep().catch((err: Error) => ctx.logger.error({ err }, 'expired retained messages not swept'))
  }
  let timer = ctx.timers.setInterval(sweep, period(ctx.config['retainer.expiry_interval']))
  ctx.onSettingChange('retainer.expiry_interval', (interval) => {
    timer.cancel()
    timer = ctx.timers.setInterval(sweep, period(interval))
  })
}

export default definePlugin<RetainerConfig>({
  name: 'broker_retainer',
  version: '1.0.0',
  description: 'Retained messages: kept in memory, on disc or both, with limits and expiry',
  schema,
  capabilities: ['retained'],

  async load (ctx) {
    const slot = ctx.capability('retained')
    const limits = { maxPayload: ctx.config['retainer.max_payload_size'], maxCount: ctx.config['retainer.max_retained_messages'] }
    const type = ctx.config['retainer.storage_type']
    const storage = await openStorage(type, ctx.store, slot.shared, limits, ctx.logger)
    // registered before the slot, so it runs after the slot is released: no message arrives while ram writes its set
    ctx.onUnload(async () => await storage.close())
    if (slot.shared && type !== 'disc_only') ctx.logger.info({ storage_type: type }, 'in a cluster the retained messages are kept in the cluster\'s store (as disc_only), so that every node sees them')
    const keeper = new Keeper(storage, () => ctx.config, ctx.logger)
    await slot.provide(keeper)
    ctx.commands.add(retainerCommand(keeper))
    sweepEvery(ctx, keeper)
    // in a cluster other nodes change the count: asked of the store every second (EMQ X's retained stats period)
    if (slot.shared) ctx.timers.setInterval(() => { storage.recount().catch((err: Error) => ctx.logger.warn({ err }, 'retained messages not counted')) }, RECOUNT_MS)
    ctx.logger.info({ storage_type: type, retained: keeper.count() }, 'retained messages ready')
  }
})
