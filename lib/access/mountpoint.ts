// Mountpoints (SPEC §2.1 `mountpoint`): a prefix put before the topics a
// client publishes and subscribes to, and taken off what it is delivered.

/** Mounts a topic filter; a shared subscription keeps its `$share/<group>/` or `$queue/` in front. */
export function mountFilter (mountpoint: string, filter: string): string {
  if (mountpoint === '') return filter
  if (filter.startsWith('$queue/')) return '$queue/' + mountpoint + filter.slice(7)
  if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', 7)
    if (slash > 0) return filter.slice(0, slash + 1) + mountpoint + filter.slice(slash + 1)
  }
  return mountpoint + filter
}

export function unmountTopic (mountpoint: string, topic: string): string {
  return mountpoint !== '' && topic.startsWith(mountpoint) ? topic.slice(mountpoint.length) : topic
}

/** The filter a client subscribed to, from its mounted form; undefined when the filter lies outside the mountpoint. */
export function unmountFilter (mountpoint: string, filter: string): string | undefined {
  if (mountpoint === '') return filter
  let share = ''
  if (filter.startsWith('$queue/')) share = '$queue/'
  else if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', 7)
    if (slash > 0) share = filter.slice(0, slash + 1)
  }
  const mounted = filter.slice(share.length)
  return mounted.startsWith(mountpoint) ? share + mounted.slice(mountpoint.length) : undefined
}
