// Fixture plugins written to a test's temporary folder (given to the node
// as `pluginDirs`), each version a rewrite of their files. `ext` is `ts` for
// a node running from sources (this process under tap), `js` for a node
// running from dist/ (a child process). They import the same plugin kit as
// the node (by absolute URL) and Joi from the install's node_modules.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

export type Ext = 'ts' | 'js'

const kit = (ext: Ext): string => pathToFileURL(join(INSTALL_ROOT, ext === 'ts' ? 'lib/plugin-kit/index.js' : 'dist/lib/plugin-kit/index.js')).href

/** The fixtures are plain JS in either form: not type-checked (tap with TAP_TYPECHECK=1 would refuse them). */
const NO_CHECK: Record<Ext, string> = { ts: '// @ts-nocheck\n', js: '' }

export const CODE_PLUGIN = 'broker_fixture_code'
export const GATE_PLUGIN = 'broker_fixture_gate'

export interface CodeVersion {
  /** the plugin's version (its manifest) */
  version?: string
  /** what lib/answer returns: the ctl command, the route and the hook answer it */
  answer?: string
  /** the schema of `fixture.greeting` (default any string) */
  greetingSchema?: string
  /** a line at the start of load (e.g. a throw) */
  loadPrelude?: string
  /** text appended to lib/answer (e.g. a syntax error) */
  answerTail?: string
  /** the name the module exports (default the folder's) */
  name?: string
}

/**
 * broker_fixture_code: a hook (publishes `fixture/connected/<id>` with the
 * answer), two routes (`GET /fixture/version`, `GET /fixture/refuse` throwing
 * the kit's RouteError), a ctl command `fixture` and a 20 ms timer counting
 * ticks per answer in `globalThis.__fixtureTicks`; no version loads while
 * `globalThis.__fixtureRefuseLoads` is set. The answer comes from a
 * second module, lib/answer, so a change of that file alone is a change of
 * the plugin.
 */
export async function writeCodePlugin (dir: string, ext: Ext, v: CodeVersion = {}): Promise<void> {
  const folder = join(dir, CODE_PLUGIN)
  await mkdir(join(folder, 'lib'), { recursive: true })
  await writeAnswer(dir, ext, v.answer ?? 'v1', v.answerTail)
  await writeFile(join(folder, `index.${ext}`), `${NO_CHECK[ext]}import Joi from 'joi'
import { definePlugin, RouteError } from '${kit(ext)}'
import { answer } from './lib/answer.js'

const ticks = (globalThis.__fixtureTicks ??= {})

export default definePlugin({
  name: '${v.name ?? CODE_PLUGIN}',
  version: '${v.version ?? '1.0.0'}',
  description: 'code reload fixture',
  schema: Joi.object({ 'fixture.greeting': ${v.greetingSchema ?? "Joi.string().default('hi')"} }),
  load (ctx) {
    if (globalThis.__fixtureRefuseLoads) throw new Error('no load now')
    ${v.loadPrelude ?? ''}
    ctx.hooks.add('client.connected', (client) => {
      ctx.broker.publish({ topic: 'fixture/connected/' + client.clientId, payload: answer() }).catch(() => {})
    })
    ctx.routes.add({ method: 'GET', path: '/fixture/version', handler: () => ({ answer: answer(), greeting: ctx.config['fixture.greeting'] }) })
    ctx.routes.add({ method: 'GET', path: '/fixture/refuse', handler: () => { throw new RouteError(115, 'refused by ' + answer(), 409) } })
    ctx.commands.add({ name: 'fixture', usage: [['fixture', 'the answer of the code running']], run: () => ({ text: answer(), data: answer() }) })
    ctx.timers.setInterval(() => { ticks[answer()] = (ticks[answer()] ?? 0) + 1 }, 20)
  }
})
`)
}

/** Rewrites only lib/answer of broker_fixture_code. */
export async function writeAnswer (dir: string, ext: Ext, answer: string, tail = ''): Promise<void> {
  await writeFile(join(dir, CODE_PLUGIN, 'lib', `answer.${ext}`), `export const answer = () => '${answer}'\n${tail}\n`)
}

/**
 * broker_fixture_gate, an auth and ACL plugin: admits only user name `good`
 * (others: not_authorized), denies every `secret/…` topic, ignores the rest
 * (so without it mqtt.allow_anonymous and acl_nomatch would let all in).
 * Its first registration is an onUnload that awaits
 * `globalThis.__fixtureGate()` when set: it runs last, after its hooks are
 * gone, so a test can hold the swap in the middle. Answers of user names
 * ending in `-async` come in a promise.
 */
export async function writeGatePlugin (dir: string, ext: Ext, version = '1.0.0'): Promise<void> {
  const folder = join(dir, GATE_PLUGIN)
  await mkdir(folder, { recursive: true })
  await writeFile(join(folder, `index.${ext}`), `${NO_CHECK[ext]}import Joi from 'joi'
import { definePlugin } from '${kit(ext)}'

export default definePlugin({
  name: '${GATE_PLUGIN}',
  version: '${version}',
  description: 'auth reload fixture',
  schema: Joi.object({}),
  load (ctx) {
    ctx.onUnload(async () => { if (globalThis.__fixtureGate) await globalThis.__fixtureGate() })
    ctx.hooks.add('client.authenticate', ({ client }) => {
      const answer = client.username === 'good' || client.username === 'good-async' ? 'allow' : { result: 'deny', reason: 'not_authorized' }
      return client.username?.endsWith('-async') ? new Promise((resolve) => setImmediate(() => resolve(answer))) : answer
    })
    ctx.hooks.add('client.check_acl', ({ topic }) => topic.startsWith('secret/') ? 'deny' : 'ignore')
  }
})
`)
}

/** Resolves once `check` is true, looking every 20 ms; fails after a generous deadline (a loaded CI box is slow). */
export async function until (what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
