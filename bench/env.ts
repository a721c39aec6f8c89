// The bench's settings from the environment (BENCH_*, SOAK_*): numbers and comma-separated choices, one reading and one error each.

export interface NumberRule {
  /** whole numbers only */
  integer?: boolean
  /** 0 is allowed (otherwise the number must be positive) */
  zero?: boolean
}

/** `process.env[name]` as a number, `fallback` when unset or empty; throws naming the variable when it breaks the rule. */
export function envNumber (name: string, fallback: number, rule: NumberRule = {}, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  const lowOk = rule.zero === true ? value >= 0 : value > 0
  if (!Number.isFinite(value) || !lowOk || (rule.integer === true && !Number.isInteger(value))) {
    throw new Error(`${name}=${raw}: expected ${rule.zero === true ? 'a number ≥ 0' : 'a positive number'}${rule.integer === true ? ', whole' : ''}`)
  }
  return value
}

/** `process.env[name]` as a comma-separated choice among `all`: the chosen ones in `all`'s order, all of them when unset or empty; throws naming a value it does not know. */
export function envChoice<T extends string | number> (name: string, all: readonly T[], env: NodeJS.ProcessEnv = process.env): T[] {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return [...all]
  const wanted = raw.split(',').map((v) => v.trim()).filter((v) => v !== '')
  for (const value of wanted) {
    if (!all.some((known) => String(known) === value)) throw new Error(`${name}=${raw}: no ${value} (have ${all.join(', ')})`)
  }
  return all.filter((known) => wanted.includes(String(known)))
}

/** `process.env[name]` as command-line arguments split on spaces (e.g. Node options for a started broker), none when unset. */
export function envArgs (name: string, env: NodeJS.ProcessEnv = process.env): string[] {
  return (env[name] ?? '').split(' ').filter((arg) => arg !== '')
}
