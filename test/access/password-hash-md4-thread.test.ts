// PBKDF2-HMAC-MD4 (pure JS: OpenSSL 3 has no MD4) is computed on the hashing
// threads, like pbkdf2 and bcrypt: a check with many iterations leaves the
// event loop idle, so timers and other clients are served meanwhile (issue 14 #10).
import t from 'tap'
import { performance } from 'node:perf_hooks'
import { hashPassword, parseHashSpec, verifyPassword } from '../../lib/plugin-kit/hash/password-hash.js'

t.test('pbkdf2,md4 with many iterations: right answer, the event loop stays idle and a timer fires on time', async (t) => {
  // RFC 6070's inputs with HMAC-MD4; agrees with `openssl kdf` (legacy provider)
  t.equal(await hashPassword(parseHashSpec('pbkdf2,md4,4096,20'), 'password', 'salt'), '3fe119f73e5297311b6597423ccb31677de28fd3')

  const spec = parseHashSpec('pbkdf2,md4,150000,16')
  const stored = await hashPassword(spec, 'pw', 'nacl')
  const started = performance.now()
  const before = performance.eventLoopUtilization()
  let timerLate = -1
  const timer = new Promise<void>((resolve) => {
    const due = performance.now() + 20
    setTimeout(() => { timerLate = performance.now() - due; resolve() }, 20)
  })
  const [right, wrong] = await Promise.all([verifyPassword(spec, 'pw', stored, 'nacl'), verifyPassword(spec, 'nope', stored, 'nacl'), timer])
  const busy = performance.eventLoopUtilization(before)
  const took = performance.now() - started
  t.ok(right, 'the right password matches')
  t.notOk(wrong, 'a wrong one does not')
  t.ok(took > 100, `the checks took a while (${Math.round(took)} ms), so the measure means something`)
  t.ok(busy.utilization < 0.5, `the event loop was busy ${(busy.utilization * 100).toFixed(0)}% of the time (computing on it: ~100%)`)
  t.ok(timerLate < 1000, `a 20 ms timer fired ${Math.round(timerLate)} ms late`)
})
