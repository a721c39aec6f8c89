// The bench's numeric settings from the environment (BENCH_*, SOAK_*), one reading and one error.

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
