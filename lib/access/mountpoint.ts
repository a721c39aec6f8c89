// Mountpoints (SPEC §2.1 `mountpoint`): a prefix put before the topics a
// client publishes and subscribes to, and taken off what it is delivered.
import { isLevelValue } from './acl-match.js'
import type { Refusal } from './refusals.js'

/**
 * A topic template with `%c` → client id and `%u` → user name, copied
 * literally (no `$&`-style replacement patterns); `unfit` names the value
 * that cannot stand in a topic level — empty, missing or holding `+`, `#` or
 * `/` — and would widen or break the topic (the ACL's placeholder rule).
 */
export function fillLevelTemplate (template: string, who: { clientId: string, username?: string }): { value: string } | { unfit: 'clientId' | 'username' } {
  if (template.includes('%c') && !isLevelValue(who.clientId)) return { unfit: 'clientId' }
  if (template.includes('%u') && !isLevelValue(who.username)) return { unfit: 'username' }
  return { value: template.split('%c').map((part) => part.split('%u').join(who.username ?? '')).join(who.clientId) }
}

/**
 * A mountpoint template filled (fillLevelTemplate). A value that could leave
 * its tenant refuses the client instead: the client id with
 * client_id_not_valid, the user name with bad_username_or_password.
 */
export function expandMountpoint (template: string, who: { clientId: string, username?: string }): { mountpoint: string } | { refusal: Refusal, message: string } {
  // the default (no mountpoint) and any template without a placeholder: every connect comes here
  if (!template.includes('%')) return { mountpoint: template }
  const filled = fillLevelTemplate(template, who)
  if ('value' in filled) return { mountpoint: filled.value }
  return filled.unfit === 'clientId'
    ? { refusal: 'client_id_not_valid', message: 'the client id cannot fill the mountpoint (empty, or holds +, # or /)' }
    : { refusal: 'bad_username_or_password', message: 'the user name cannot fill the mountpoint (missing, empty, or holds +, # or /)' }
}

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
