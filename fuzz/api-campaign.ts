// The management API campaign: batches of generated requests (api-requests.ts)
// against a broker process with broker_management. Per request: an answer
// within the deadline and no 500 but the documented ones; per batch: the
// process verdict (target.ts) and the API still answering. A batch that
// breaks the process is replayed request by request to find the culprit.
import fc from 'fast-check'
import { request as httpRequest } from 'node:http'
import type { ApiEntry, ApiRequest } from './corpus.js'
import { apiRequest, HARNESS_ID, spoilsHarness, type ApiWorld, type GeneratedRequest } from './api-requests.js'
import { batchSeed, type CampaignOptions, type Finding } from './mqtt-campaign.js'
import { inPool } from './pool.js'
import { Target, type Verdict } from './target.js'

const REQUEST_DEADLINE_MS = 15_000

/**
 * The operations whose 500 is documented (plugins/broker_management/README.md):
 * a plugin settings change whose reload fails, and a plugin whose load fails
 * (its error is the plugin's, e.g. a backend it cannot reach).
 */
export const DOCUMENTED_500 = new Set(['update_plugin_configs', 'load_plugin', 'start_stop_plugin'])

export interface ApiReport {
  requests: number
  skipped: number
  batches: number
  byStatus: Record<string, number>
  byRoute: Record<string, number>
  findings: Array<Finding<ApiEntry>>
}

export interface Answer { status: number, body: string }

export async function send (baseUrl: string, req: ApiRequest, deadlineMs = REQUEST_DEADLINE_MS): Promise<Answer | 'timeout' | 'refused'> {
  return await new Promise((resolve) => {
    const headers = req.body === undefined ? req.headers : { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) }
    const r = httpRequest(baseUrl + req.path, { method: req.method, headers, agent: false }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () => { clearTimeout(timer); resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }) })
      res.on('error', () => { clearTimeout(timer); resolve('refused') })
    })
    const timer = setTimeout(() => { r.destroy(); resolve('timeout') }, deadlineMs)
    r.on('error', () => { clearTimeout(timer); resolve('refused') })
    r.end(req.body)
  })
}

const basic = (credentials: string): Record<string, string> => ({ authorization: 'Basic ' + Buffer.from(credentials).toString('base64'), 'content-type': 'application/json' })

async function json (target: Target, path: string, credentials: string, body?: unknown): Promise<unknown> {
  const answer = await send(target.apiUrl, { method: body === undefined ? 'GET' : 'POST', path, headers: basic(credentials), body: body === undefined ? undefined : JSON.stringify(body) })
  if (typeof answer === 'string' || answer.status !== 200) throw new Error(`fuzz setup: ${path}: ${typeof answer === 'string' ? answer : answer.status + ' ' + answer.body}`)
  return JSON.parse(answer.body)
}

/** The harness's own application and administrator, and the names the generator aims at. */
async function setUp (target: Target): Promise<ApiWorld> {
  const secret = 'fuzz-harness-secret'
  await json(target, '/api/v3/apps/', 'admin:public', { app_id: HARNESS_ID, name: HARNESS_ID, secret })
  await json(target, '/api/v3/users/', 'admin:public', { username: HARNESS_ID, password: secret, tags: '' })
  const v3Credentials = `${HARNESS_ID}:${secret}`
  const node = ((await json(target, '/api/v3/brokers/', v3Credentials)) as Array<{ node: string }>)[0].node
  const plugins = ((await json(target, `/api/v3/nodes/${encodeURIComponent(node)}/plugins/`, v3Credentials)) as Array<{ name: string }>).map((p) => p.name)
  const configs = (await json(target, '/api/v3/configs/', v3Credentials)) as Array<{ config: Array<{ key: string }> }>
  return { node, plugins, configKeys: configs[0].config.map((c) => c.key), v3Credentials, v2Credentials: v3Credentials }
}

/** The process verdict, and the API still answering the harness. */
async function checkApi (target: Target, world: ApiWorld): Promise<Verdict> {
  const verdict = await target.check()
  if (!verdict.ok) return verdict
  const answer = await send(target.apiUrl, { method: 'GET', path: '/api/v3/brokers/', headers: basic(world.v3Credentials) })
  if (typeof answer !== 'string' && answer.status === 200) return verdict
  return { ok: false, what: 'hang', detail: `GET /api/v3/brokers/: ${typeof answer === 'string' ? answer : answer.status}`, signature: 'hang: the API stopped answering' }
}

type Problem = { what: string, signature: string, detail: string }

/** What is wrong with one answer, if anything. */
function judge (g: GeneratedRequest, answer: Answer | 'timeout' | 'refused'): Problem | undefined {
  if (answer === 'timeout') return { what: 'hang', signature: `hang: ${g.request.method} ${g.api} ${g.route}`, detail: `no answer within ${REQUEST_DEADLINE_MS} ms` }
  if (answer === 'refused' || answer.status !== 500 || DOCUMENTED_500.has(g.route)) return undefined
  let message = answer.body
  try { message = String((JSON.parse(answer.body) as { message?: unknown }).message) } catch { /* not JSON: the body itself */ }
  return { what: '500', signature: `500: ${g.request.method} ${g.api} ${g.route}: ${message.replace(/\d+/g, 'N').slice(0, 200)}`, detail: answer.body }
}

const entryOf = (g: GeneratedRequest, p: Problem, seed: number): ApiEntry =>
  ({ kind: 'api', what: p.what, signature: p.signature, found: new Date().toISOString().slice(0, 10), note: `seed ${seed}; route ${g.route}; ${p.detail.slice(0, 500)}`, request: g.request })

async function startTarget (rssLimitMiB: number): Promise<{ target: Target, world: ApiWorld }> {
  const target = await Target.start({ api: true, rssLimitMiB })
  return { target, world: await setUp(target) }
}

/** Replays a batch that broke the process, one request at a time on fresh processes. */
async function triage (batch: GeneratedRequest[], first: Exclude<Verdict, { ok: true }>, rssLimitMiB: number): Promise<Array<{ g: GeneratedRequest, p: Problem }>> {
  const culprits: Array<{ g: GeneratedRequest, p: Problem }> = []
  let { target, world } = await startTarget(rssLimitMiB)
  try {
    for (const g of batch) {
      await send(target.apiUrl, g.request)
      const verdict = await checkApi(target, world)
      if (verdict.ok) continue
      culprits.push({ g, p: verdict })
      await target.stop();
      ({ target, world } = await startTarget(rssLimitMiB))
    }
  } finally {
    await target.stop()
  }
  if (culprits.length === 0 && batch.length > 0) culprits.push({ g: batch[0], p: { ...first, detail: `only with the whole batch (not one request alone; the first is kept); ${first.detail}` } })
  return culprits
}

export async function apiCampaign (options: CampaignOptions): Promise<ApiReport> {
  const report: ApiReport = { requests: 0, skipped: 0, batches: 0, byStatus: {}, byRoute: {}, findings: [] }
  const found = (g: GeneratedRequest, p: Problem, seed: number): void => {
    const isNew = !options.known.has(p.signature)
    options.known.add(p.signature)
    report.findings.push({ entry: entryOf(g, p, seed), isNew })
    options.log(`  api ${isNew ? 'NEW' : 'known'}: ${p.signature}`)
  }
  let { target, world } = await startTarget(options.rssLimitMiB)
  try {
    for (let batch = 0; Date.now() < options.until; batch++) {
      const seed = batchSeed(options.seed, batch)
      const generated = fc.sample(apiRequest(world), { seed, numRuns: options.batchSize })
      const requests = generated.filter((g) => !spoilsHarness(g, world))
      report.skipped += generated.length - requests.length
      await inPool(requests, options.concurrency, async (g) => {
        const answer = await send(target.apiUrl, g.request)
        report.byStatus[typeof answer === 'string' ? answer : answer.status] = (report.byStatus[typeof answer === 'string' ? answer : answer.status] ?? 0) + 1
        report.byRoute[`${g.api} ${g.route}`] = (report.byRoute[`${g.api} ${g.route}`] ?? 0) + 1
        const problem = judge(g, answer)
        if (problem !== undefined && target.alive) found(g, problem, seed)
      })
      report.requests += requests.length
      report.batches++
      const verdict = await checkApi(target, world)
      if (verdict.ok) continue
      options.log(`api batch seed ${seed}: ${verdict.signature}; replaying its ${requests.length} requests one by one`)
      await target.stop()
      for (const { g, p } of await triage(requests, verdict, options.rssLimitMiB)) found(g, p, seed);
      ({ target, world } = await startTarget(options.rssLimitMiB))
    }
  } finally {
    await target.stop()
  }
  return report
}

/** Replays each API entry on one broker (a fresh one after a failure): undefined when it passed, else what went wrong. */
export async function replayApi (entries: ApiEntry[], rssLimitMiB: number): Promise<Array<string | undefined>> {
  const results: Array<string | undefined> = []
  let { target, world } = await startTarget(rssLimitMiB)
  try {
    for (const entry of entries) {
      const answer = await send(target.apiUrl, entry.request)
      const problem = judge({ api: '', route: entry.signature, params: {}, request: entry.request }, answer)
      const verdict = await checkApi(target, world)
      results.push(problem?.signature ?? (verdict.ok ? undefined : verdict.signature))
      if (!verdict.ok) {
        await target.stop();
        ({ target, world } = await startTarget(rssLimitMiB))
      }
    }
  } finally {
    await target.stop()
  }
  return results
}
