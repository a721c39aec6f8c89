// The Lua VM on its own: calls with bytes in and out, Lua errors, the
// instruction-count deadline (infinite loops, also behind pcall and inside a
// coroutine), the memory limit, and the sandbox.
import t from 'tap'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LuaVm, type CallOutcome } from '../lua-vm.js'

const MB = 1024 * 1024

async function vmWith (source: string, memoryMax = 8 * MB): Promise<{ vm: LuaVm, printed: string[], fn: (name: string) => number }> {
  const printed: string[] = []
  const vm = await LuaVm.create({ chunkName: '@test.lua', memoryMax, print: (line) => printed.push(line) })
  t.teardown(() => vm.close())
  const loaded = vm.run(Buffer.from(source), 1000)
  if (!loaded.ok) throw new Error(loaded.message)
  const getter = vm.reference('local rawget, G = rawget, _G return function (name) return rawget(G, name) end', 1000)!
  return {
    vm,
    printed,
    fn: (name) => {
      const ref = vm.functionRef(getter, name, 1000)
      if (ref === undefined) throw new Error(`no function ${name}`)
      return ref
    }
  }
}

const values = (outcome: CallOutcome): unknown[] => {
  if (!outcome.ok) throw new Error(`${outcome.kind}: ${outcome.message}`)
  return outcome.values.map((v) => Buffer.isBuffer(v) ? v.toString('latin1') : v)
}

t.test('arguments and answers cross as bytes (NUL and non-UTF-8 kept), numbers and booleans', async (t) => {
  const { vm, fn } = await vmWith('function f(a, b, n, flag, missing) return #a, a .. b, n + 1, not flag, missing == nil, {}, f end')
  const payload = Buffer.from([0, 1, 0xff, 0xfe, 0])
  t.same(values(vm.call(fn('f'), ['x', payload, 41, true, undefined], 100)),
    [1, 'x\u0000\u0001\u00ff\u00fe\u0000', 42, false, true, { type: 'table' }, { type: 'function' }])
  const big = Buffer.alloc(200_000, 0x61)
  t.same(values(vm.call(fn('f'), [big, '', 0, false], 100)).slice(0, 1), [200_000], 'an argument larger than the scratch buffer')
})

t.test('a Lua error is an error outcome and the VM goes on', async (t) => {
  const { vm, fn } = await vmWith('function bad() error("boom") end function good() return "fine" end function obj() error({}) end')
  const outcome = vm.call(fn('bad'), [], 100)
  t.match(outcome, { ok: false, kind: 'error', message: /test\.lua:1: boom/ })
  t.match(vm.call(fn('obj'), [], 100), { ok: false, kind: 'error', message: '(error object is a table value)' })
  t.same(values(vm.call(fn('good'), [], 100)), ['fine'])
  t.ok(vm.alive)
})

t.test('an infinite loop is stopped at the deadline, even behind pcall or in a coroutine; the VM is then dead', async (t) => {
  for (const body of [
    'while true do end',
    'while true do pcall(function () while true do end end) end',
    'local co = coroutine.wrap(function () while true do end end) while true do pcall(co) end',
    'local function r() return r() end r()'
  ]) {
    const { vm, fn } = await vmWith(`function spin() ${body} end`)
    const started = performance.now()
    const spin = fn('spin')
    const outcome = vm.call(spin, [], 50)
    t.match(outcome, { ok: false, kind: 'timeout' }, body)
    t.ok(performance.now() - started < 10_000, 'it returned')
    t.notOk(vm.alive)
    t.match(vm.call(spin, [], 50), { ok: false, kind: 'crash' }, 'a dead VM refuses calls')
  }
})

t.test('a script that allocates without end hits the memory limit (or the deadline), never the process', async (t) => {
  const { vm, fn } = await vmWith('t = {} function grow() local i = 0 while true do i = i + 1 t[i] = string.rep("x", 100) .. i end end function huge() return #string.rep("x", 64 * 1024 * 1024) end', 4 * MB)
  const outcome = vm.call(fn('huge'), [], 1000)
  t.match(outcome, { ok: false, kind: 'error', message: /not enough memory/ })
  const grown = vm.call(fn('grow'), [], 60_000)
  t.match(grown, { ok: false, kind: 'error', message: /not enough memory/ }, 'the endless allocation ends at the limit')
  t.ok(vm.alive, 'a memory error is a Lua error: the VM goes on')
  t.ok(vm.memoryUsed > 2 * MB && vm.memoryUsed <= 4 * MB, `memory used ${vm.memoryUsed} is at the limit, not past it`)
  t.match(vm.call(fn('huge'), [], 1000), { ok: false, message: /not enough memory/ }, 'still refused while the table holds the memory')
})

t.test('the sandbox: no os.execute, io, require, dofile, debug, string.dump; load takes text only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lua-sandbox-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const marker = join(dir, 'PWNED')
  const { vm, fn, printed } = await vmWith(`
    function probe()
      return os.execute, io, require, dofile, loadfile, debug, package, string.dump
    end
    function probe2() return warn, os.getenv, os.remove, os.exit end
    function execute() return os.execute("touch ${marker}") end
    function bytecode()
      return load("\\27Lua\\84\\0")
    end
    function text() return load("return 1 + 1")() end
    function stop() return collectgarbage("stop") end
    function clock() print("time", type(os.time()), type(os.clock()), os.date("!%Y", 0)) end
    function long() print(string.rep("x", 5000)) end`)
  t.same(values(vm.call(fn('probe'), [], 100)), [null, null, null, null, null, null, null, null])
  t.same(values(vm.call(fn('probe2'), [], 100)), [null, null, null, null])
  t.match(vm.call(fn('execute'), [], 100), { ok: false, kind: 'error', message: /attempt to call a nil value \(field 'execute'\)/ })
  t.notOk(existsSync(marker), 'no command ran')
  t.match(values(vm.call(fn('bytecode'), [], 100)), [null, /attempt to load a binary chunk \(mode is 't'\)/])
  t.same(values(vm.call(fn('text'), [], 100)), [2])
  t.match(vm.call(fn('stop'), [], 100), { ok: false, message: /option 'stop' is not allowed/ })
  values(vm.call(fn('clock'), [], 100))
  values(vm.call(fn('long'), [], 100))
  t.same(printed, ['time\tnumber\tnumber\t1970', `${'x'.repeat(2000)}… (5000 characters)`], 'print goes to the sink; a long line is cut')
})
