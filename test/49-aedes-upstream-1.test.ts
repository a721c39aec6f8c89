// Aedes' own test suite, part 1 of 4, against the patched engine (issue 15 #15):
// every changed outcome is listed, with why, in patches/aedes-upstream-tests.json.
import t from 'tap'
import { checkUpstreamPart } from './helpers/aedes-upstream.js'

t.test('Aedes upstream tests, part 1', async (t) => { await checkUpstreamPart(t, 0) })
