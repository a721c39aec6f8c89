// perf_hooks' gc entry codes named as Node defines them (sysmon's long_gc text and recon's by_kind figures)
import t from 'tap'
import { constants } from 'node:perf_hooks'
import { gcKind } from '../../lib/plugin-kit/runtime.js'

t.test('each perf_hooks gc kind code has its name; other codes have none', async (t) => {
  t.equal(gcKind(constants.NODE_PERFORMANCE_GC_MINOR), 'minor')
  t.equal(gcKind(constants.NODE_PERFORMANCE_GC_MAJOR), 'major')
  t.equal(gcKind(constants.NODE_PERFORMANCE_GC_INCREMENTAL), 'incremental')
  t.equal(gcKind(constants.NODE_PERFORMANCE_GC_WEAKCB), 'weakcb')
  t.equal(gcKind(2), undefined, 'not a kind code (a flag value)')
  t.equal(gcKind(undefined), undefined)
})
