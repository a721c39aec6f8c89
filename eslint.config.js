// Lint: ESLint's recommended rules and typescript-eslint's, over our own code;
// and for plugins (contract v2): they reach the core only through the plugin
// kit, and keep no state in their modules (eslint-rules/no-module-state.js).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import noModuleState from './eslint-rules/no-module-state.js'

/** no-restricted-imports: any path under lib/ except the kit modules named. */
function onlyKit (...allowed) {
  const message = `plugins import from the core only lib/plugin-kit/${allowed.join(', lib/plugin-kit/')} (plugin contract v2)`
  return ['error', { patterns: [{ regex: `^(\\.\\./)+lib/(?!plugin-kit/(${allowed.join('|').replaceAll('.', '\\.')})$)`, message }] }]
}

const PLUGIN_TESTS = ['plugins/*/test/**']

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.tap/', 'plugins/*/ui/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', AbortSignal: 'readonly', NodeJS: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off'
    }
  },
  {
    files: ['plugins/**'],
    ignores: PLUGIN_TESTS,
    plugins: { local: { rules: { 'no-module-state': noModuleState } } },
    rules: {
      'no-restricted-imports': onlyKit('index.js'),
      'local/no-module-state': 'error'
    }
  },
  // a plugin's browser front end (built by scripts/build-dashboard.mjs, served as files): not plugin code
  {
    files: ['plugins/*/ui/**'],
    languageOptions: { globals: { window: 'readonly', document: 'readonly', location: 'readonly', fetch: 'readonly', Response: 'readonly', Event: 'readonly', HTMLInputElement: 'readonly', HTMLSelectElement: 'readonly', HTMLTextAreaElement: 'readonly', HTMLDivElement: 'readonly', ResizeObserver: 'readonly', TextDecoder: 'readonly', addEventListener: 'readonly', removeEventListener: 'readonly' } },
    rules: { 'no-restricted-imports': 'off', 'local/no-module-state': 'off' }
  },
  { files: PLUGIN_TESTS, rules: { 'no-restricted-imports': onlyKit('index.js', 'testing.js') } },
  // the administration capability's side of the kit
  { files: ['plugins/broker_management/**', 'plugins/broker_dashboard/**'], ignores: PLUGIN_TESTS, rules: { 'no-restricted-imports': onlyKit('index.js', 'admin.js') } },
  { files: ['plugins/broker_management/test/**', 'plugins/broker_dashboard/test/**'], rules: { 'no-restricted-imports': onlyKit('index.js', 'testing.js', 'admin.js') } }
)
