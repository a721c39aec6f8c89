// Percentiles of latency samples (nearest-rank), and a trend's slope.

/** The p-th percentile (0 < p <= 100) of ascending `sorted`; NaN when empty. */
export function percentile (sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]
}

/** Joins the workers' samples into one ascending array. */
export function mergeSorted (parts: Float64Array[]): Float64Array {
  const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    all.set(p, at)
    at += p.length
  }
  return all.sort()
}

/** Least-squares slope of y over x. */
export function slope (x: number[], y: number[]): number {
  const n = x.length
  if (n < 2) return 0
  const mx = x.reduce((a, b) => a + b, 0) / n
  const my = y.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += (x[i] - mx) * (y[i] - my)
    den += (x[i] - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}
