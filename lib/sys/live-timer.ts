// A repeating timer whose period is a configuration setting read live: when
// the setting changes at run time (`Config.set` emits `change`) the timer is
// re-armed with the new period at once; 0 switches it off. The timer never
// keeps the process alive (unref'd) and `stop()` clears it and the listener.
import type { Config } from '../config/store.js'
import type { SettingKey, SettingValue } from '../config/schema.js'

/** settings holding a number (durations are milliseconds) */
export type NumberKey = { [K in SettingKey]: SettingValue<K> extends number ? K : never }[SettingKey]

export class LiveTimer {
  #timer: NodeJS.Timeout | null = null
  #running = false
  readonly #onChange = (key: string): void => {
    if (key === this.key && this.#running) this.#arm()
  }

  constructor (private readonly config: Config, private readonly key: NumberKey, private readonly run: () => void) {}

  start (): void {
    this.#running = true
    this.config.on('change', this.#onChange)
    this.#arm()
  }

  stop (): void {
    this.#running = false
    this.config.off('change', this.#onChange)
    this.#clear()
  }

  #arm (): void {
    this.#clear()
    const period: number = this.config.get(this.key)
    if (period <= 0) return
    this.#timer = setInterval(this.run, period)
    this.#timer.unref()
  }

  #clear (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }
}
