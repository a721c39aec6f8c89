// A plugin keeps no state in its module: everything a load makes belongs to
// that load (plugin contract v2), so a second load, or a load after an
// unload, starts clean. Reported at the top level of a module: `let` and
// `var`, and a `const` holding something that can change — a `new …`
// (Map, Set, a class instance; a RegExp is allowed), an array literal, or
// a call known to return a fresh array or object. Functions, regexes,
// Joi schemas, object literals used as constant tables and anything wrapped
// in `Object.freeze(…)` are allowed — except a Map or Set, whose entries
// Object.freeze does not freeze.

/** Calls that return a new mutable array or object (`Object.freeze(…)` around them is fine). */
const MUTABLE_CALLS = Object.freeze([
  'Array', 'Array.from', 'Array.of', 'Object.create', 'Object.fromEntries', 'Object.assign',
  'Object.keys', 'Object.values', 'Object.entries', 'Object.groupBy', 'Map.groupBy', 'structuredClone'
])

/** Array methods that return a new array. */
const ARRAY_METHODS = Object.freeze(['map', 'filter', 'slice', 'concat', 'flat', 'flatMap', 'toSorted', 'toReversed', 'toSpliced', 'split'])

/** Collections Object.freeze leaves changeable. */
const COLLECTIONS = Object.freeze(['Map', 'Set', 'WeakMap', 'WeakSet'])

/** The expression under TypeScript's `as`, `satisfies`, `!` and `<T>`. */
function unwrap (node) {
  let inner = node
  while (['TSAsExpression', 'TSSatisfiesExpression', 'TSNonNullExpression', 'TSTypeAssertion'].includes(inner.type)) inner = inner.expression
  return inner
}

/** `a.b.c` of a member chain of identifiers, or undefined. */
function dottedName (node) {
  if (node.type === 'Identifier') return node.name
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier') {
    const object = dottedName(node.object)
    return object === undefined ? undefined : `${object}.${node.property.name}`
  }
  return undefined
}

/** What makes the initial value mutable, or undefined when it is not (known to be). */
function mutableKind (init) {
  const value = unwrap(init)
  if (value.type === 'NewExpression') return dottedName(value.callee) === 'RegExp' ? undefined : `new ${dottedName(value.callee) ?? '…'}`
  if (value.type === 'ArrayExpression') return 'an array literal'
  if (value.type === 'CallExpression') {
    const name = dottedName(value.callee)
    if (name === 'Object.freeze') {
      const frozen = value.arguments[0] === undefined ? undefined : unwrap(value.arguments[0])
      const collection = frozen?.type === 'NewExpression' ? dottedName(frozen.callee) : undefined
      return COLLECTIONS.includes(collection) ? `a frozen ${collection} (Object.freeze does not freeze its entries)` : undefined
    }
    if (MUTABLE_CALLS.includes(name)) return `${name}(…)`
    const method = value.callee.type === 'MemberExpression' && !value.callee.computed ? value.callee.property.name : undefined
    if (ARRAY_METHODS.includes(method)) return `.${method}(…)`
  }
  return undefined
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'problem',
    docs: { description: 'disallow mutable state at the top level of a plugin module' },
    schema: [],
    messages: {
      binding: 'Top-level `{{kind}}` in a plugin: state belongs to a load; make it a local of `load` (plugin contract v2).',
      mutable: 'Top-level const holding {{what}}: state belongs to a load; make it a local of `load`, or `Object.freeze` a constant table.'
    }
  },
  create (context) {
    function check (declaration) {
      if (declaration.declare === true) return // TypeScript `declare`: no value at run time
      if (declaration.kind !== 'const') {
        context.report({ node: declaration, messageId: 'binding', data: { kind: declaration.kind } })
        return
      }
      for (const declarator of declaration.declarations) {
        const what = declarator.init == null ? undefined : mutableKind(declarator.init)
        if (what !== undefined) context.report({ node: declarator, messageId: 'mutable', data: { what } })
      }
    }
    return {
      'Program > VariableDeclaration': check,
      'Program > ExportNamedDeclaration > VariableDeclaration': check
    }
  }
}
