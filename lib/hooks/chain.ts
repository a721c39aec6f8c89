// The one runner of the chain hooks (`client.authenticate`, `client.check_acl`,
// `client.enhanced_auth`): handlers are asked in order and the first answer
// that is not an ignore decides. Synchronous first: while handlers answer with
// plain values the chain runs without a promise or a closure (the ACL check of
// every PUBLISH goes through here); at the first handler that answers with a
// thenable it continues asynchronously from that handler on.

/** What a chain makes of its handlers' answers; one object per caller, made once. */
export interface ChainRules<Req, Ans, Result, Ctx> {
  /** The result `answer` decides, or undefined when it ignores (the next handler is asked). */
  decide: (answer: Ans, request: Req, ctx: Ctx, handler: ChainHandler<Req, Ans>) => Result | undefined
  /** A handler threw or its promise rejected: the result that ends the chain, or undefined to go on. */
  failed: (err: unknown, request: Req, ctx: Ctx) => Result | undefined
  /** Every handler ignored. */
  fallback: (request: Req, ctx: Ctx) => Result
}

export type ChainHandler<Req, Ans> = (request: Req) => Ans | PromiseLike<Ans>

function isThenable<Ans> (answer: Ans | PromiseLike<Ans>): answer is PromiseLike<Ans> {
  return typeof answer === 'object' && answer !== null && typeof (answer as { then?: unknown }).then === 'function'
}

/**
 * Asks `handlers` in order from `from`; `ctx` is passed to the rules as is
 * (state the request does not carry), so that the rules need no closure per
 * call. A plain result when every handler asked answered synchronously.
 */
export function runChain<Req, Ans, Result, Ctx> (
  handlers: ReadonlyArray<ChainHandler<Req, Ans>>, request: Req, rules: ChainRules<Req, Ans, Result, Ctx>, ctx: Ctx, from = 0
): Result | Promise<Result> {
  for (let i = from; i < handlers.length; i++) {
    let answer: Ans | PromiseLike<Ans>
    try {
      answer = handlers[i](request)
    } catch (err) {
      const result = rules.failed(err, request, ctx)
      if (result !== undefined) return result
      continue
    }
    if (isThenable(answer)) return continueAsync(handlers, i, answer, request, rules, ctx)
    const result = rules.decide(answer, request, ctx, handlers[i])
    if (result !== undefined) return result
  }
  return rules.fallback(request, ctx)
}

/** Waits for handler `at`'s answer, then runs the rest of the chain (synchronously again while it can). */
async function continueAsync<Req, Ans, Result, Ctx> (
  handlers: ReadonlyArray<ChainHandler<Req, Ans>>, at: number, pending: PromiseLike<Ans>,
  request: Req, rules: ChainRules<Req, Ans, Result, Ctx>, ctx: Ctx
): Promise<Result> {
  let answer: Ans
  try {
    answer = await pending
  } catch (err) {
    return rules.failed(err, request, ctx) ?? await runChain(handlers, request, rules, ctx, at + 1)
  }
  return rules.decide(answer, request, ctx, handlers[at]) ?? await runChain(handlers, request, rules, ctx, at + 1)
}
