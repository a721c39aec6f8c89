/** Runs `work` over the items, at most `concurrency` at a time. */
export async function inPool<T> (items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < items.length) await work(items[next++])
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane))
}
