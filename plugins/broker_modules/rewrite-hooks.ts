// The rewrite module's hooks: the rules of `module.rewrite.*` applied to the
// topic of every PUBLISH (`message.publish`) and each filter of SUBSCRIBE and
// UNSUBSCRIBE (`client.subscribe`, `client.unsubscribe`). The node runs these
// folds before the ACL, so the ACL checks the rewritten topic. A result that
// is no valid topic (a wildcard in a publish topic, a broken filter, too long)
// is not applied: the message or filter goes on unchanged, and it is logged.
import type { PluginContext } from '../../lib/plugin-kit/index.js'
import { rewrite, type RewriteRule, type Rewritten } from './rewrite.js'
import { rewriteRules, type ModulesConfig } from './settings.js'

/** A refused rewrite is logged at most once a minute per rule: a client cannot flood the log. */
const REFUSAL_LOG_MS = 60_000

/** Registers the rewrite hooks: on publish, subscribe and unsubscribe, before the ACL (which checks the rewritten topic). */
export function rewriting (ctx: PluginContext<ModulesConfig>): void {
  const rules = rewriteRules(ctx.config)
  const count = rules.publish.length + rules.subscribe.length
  if (count === 0) return
  if (!ctx.config['module.rewrite']) ctx.logger.info({ rules: count }, 'module.rewrite is off: the rewrite rules wait until it is switched on')
  const loggedAt = new Map<RewriteRule, number>()
  const refused = (outcome: Extract<Rewritten, { refused: string }>, topic: string, clientId: string | undefined): void => {
    const now = Date.now()
    if (now - (loggedAt.get(outcome.rule) ?? -Infinity) < REFUSAL_LOG_MS) return
    loggedAt.set(outcome.rule, now)
    ctx.logger.warn({ rule: outcome.rule.text, topic, result: outcome.result, clientId }, `rewrite not applied: the result is ${outcome.refused} (logged once a minute per rule)`)
  }
  const apply = (list: readonly RewriteRule[], topic: string, name: boolean, clientId: string | undefined): string | undefined => {
    if (!ctx.config['module.rewrite']) return undefined
    const outcome = rewrite(list, topic, name)
    if (outcome === undefined) return undefined
    if ('refused' in outcome) {
      refused(outcome, topic, clientId)
      return undefined
    }
    return outcome.topic
  }
  if (rules.publish.length > 0) {
    ctx.hooks.add('message.publish', (message) => {
      const topic = apply(rules.publish, message.topic, true, message.from)
      return topic === undefined ? undefined : { topic }
    })
  }
  if (rules.subscribe.length > 0) {
    ctx.hooks.add('client.subscribe', (client, filter) => {
      const topic = apply(rules.subscribe, filter.topic, false, client.clientId)
      return topic === undefined ? undefined : { topic }
    })
    ctx.hooks.add('client.unsubscribe', (client, filter) => apply(rules.subscribe, filter, false, client.clientId))
  }
}
