// The lint rule that keeps state out of plugin modules (eslint-rules/no-module-state.js):
// what it reports at the top level, and what it leaves alone.
import t from 'tap'
import { RuleTester } from 'eslint'
import tseslint from 'typescript-eslint'
import rule from '../../eslint-rules/no-module-state.js'

// RuleTester asks for describe/it; each case becomes one tap subtest (it throws on a mismatch)
RuleTester.describe = (_text: string, cases: () => void) => cases()
RuleTester.it = (text: string, check: () => void) => t.test(text, async (t) => {
  check()
  t.pass('as expected')
})
RuleTester.itOnly = RuleTester.it

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module' } })

const binding = (kind: string) => ({ messageId: 'binding', data: { kind } })
const mutable = (what: string) => ({ messageId: 'mutable', data: { what } })

tester.run('no-module-state', rule, {
  valid: [
    'const NAME = \'broker_auth_x\'',
    'const LIMIT = 8 * 1024',
    'const PATTERN = /^auth\\.x\\.\\d+$/',
    'const PATTERN = new RegExp(`^${prefix}$`)',
    'const DENY = { result: \'deny\', reason: \'not_authorized\' } as const',
    'const TABLE = Object.freeze([[\'subscribe\', 1], [\'publish\', 2]] as const)',
    'const KEYS = Object.freeze(Object.keys(DEFAULTS))',
    'const schema = Joi.object({ \'auth.x.pool\': Joi.number().integer().min(1).default(8) })',
    'export const schema = Joi.object<Config>({}).pattern(/^a$/, Joi.string())',
    'const check = (value: string): boolean => value !== \'\'',
    'function load (ctx) { let count = 0; const seen = new Map(); const list = []; ctx.onUnload(() => { seen.clear() }) }',
    'export default definePlugin({ name: \'x\', load (ctx) { const table = new Set(); ctx.hooks.add(\'client.connected\', (c) => { table.add(c) }) } })',
    'const plugin = credentialPlugin(kind, \'Authentication\')',
    'for (let i = 0; i < 3; i++) f(i)',
    'declare let injected: string',
    'const { a, b } = CONSTANTS',
    'class Table { #rows = new Map() }'
  ],
  invalid: [
    { code: 'let slot', errors: [binding('let')] },
    { code: 'var count = 0', errors: [binding('var')] },
    { code: 'export let servers = []', errors: [binding('let')] },
    { code: 'const acls = new AclTable()', errors: [mutable('new AclTable')] },
    { code: 'const table = new Map<string, string>()', errors: [mutable('new Map')] },
    { code: 'export const seen = new Set()', errors: [mutable('new Set')] },
    { code: 'const http = new http.Agent({ keepAlive: true })', errors: [mutable('new http.Agent')] },
    { code: 'const servers: Server[] = []', errors: [mutable('an array literal')] },
    { code: 'const LISTS = [1, 2] as const', errors: [mutable('an array literal')] },
    { code: 'const cache = new Map() as ReadonlyMap<string, number>', errors: [mutable('new Map')] },
    { code: 'const FROZEN = Object.freeze(new Set([\'a\']))', errors: [mutable('a frozen Set (Object.freeze does not freeze its entries)')] },
    { code: 'const state = Object.create(null)', errors: [mutable('Object.create(…)')] },
    { code: 'const byId = Object.fromEntries(pairs)', errors: [mutable('Object.fromEntries(…)')] },
    { code: 'const ids = Array.from(source)', errors: [mutable('Array.from(…)')] },
    { code: 'const names = KEYS.map((k) => k.toUpperCase())', errors: [mutable('.map(…)')] },
    { code: 'const a = 1, b = new Map(), c = []', errors: [mutable('new Map'), mutable('an array literal')] }
  ]
})
