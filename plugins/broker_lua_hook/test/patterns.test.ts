// The sandbox's string.find/match/gmatch/gsub (a JavaScript matcher that
// checks the deadline) against Lua's own C functions, in a plain Lua VM of
// the same wasmoon build: same answers, same failures. And the reason for
// it: a backtracking pattern on a few hundred bytes, which keeps Lua's C
// matcher busy for minutes, is stopped at the deadline.
import t from 'tap'
import { LuaFactory } from 'wasmoon'
import { LuaVm } from '../lua-vm.js'

const SERIALIZE = `
local function ser (...)
  local out = { tostring(select('#', ...)) }
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    if type(v) == 'string' then
      local bytes = {}
      for j = 1, #v do bytes[j] = string.byte(v, j) end
      out[#out + 1] = '"' .. table.concat(bytes, ',') .. '"'
    else
      out[#out + 1] = (math.type(v) or '') .. tostring(v)
    end
  end
  return table.concat(out, ' ')
end
local function iter (...) local all = {} for a, b, c in ... do all[#all + 1] = ser(a, b, c) end return table.concat(all, ';') end
`

const CASES = [
  `string.find("hello world", "o w")`, `string.find("hello world", "o", 6)`, `string.find("hello", "l+")`,
  `string.find("hello", "")`, `string.find("hello", "", 10)`, `string.find("hello", "", 6)`, `string.find("hello", "xyz")`,
  `string.find("a.b", ".", 1, true)`, `string.find("a.b", "%.")`, `string.find("hello", "h", -10)`, `string.find("hello", "l", -2)`,
  `string.find("hello", "()ll()")`, `string.find("key=val", "(%w+)=(%w+)")`, `string.find("aaa", "^a")`, `string.find("baaa", "^a")`,
  `string.match("2024-01-02", "(%d+)-(%d+)-(%d+)")`, `string.match("  trim  ", "^%s*(.-)%s*$")`, `string.match("hello", ".-")`,
  `string.match("hello", "h(.*)")`, `string.match("f(a(b)c)d", "%b()")`, `string.match("THE (quick) fox", "%f[%a]%a+")`,
  `string.match("hello", "(h)(e)(l)(l)(o)")`, `string.match("abcabc", "(abc)%1")`, `string.match("x = 10", "(%w+)%s*=%s*(%w+)")`,
  `string.match("[tag]", "%[(.-)%]")`, `string.match("a-b", "[%w-]+")`, `string.match("A1_z", "[A-Za-z0-9_]+")`, `string.match("xyz", "[^x]+")`,
  `string.match("tab\\there", "%c")`, `string.match("$100", "%$(%d+)")`, `string.match("end$", "d%$$")`, `string.match("a$b", "a$b")`,
  `string.match("hello", "l?lo")`, `string.match("aXb", "%u")`, `string.match("aXb", "%U+")`, `string.match("0x1F", "0x(%x+)")`,
  `string.match("!?", "%p+")`, `string.match("a b", "%S+%s%S+")`, `string.match("\\0a\\0", "%z")`, `string.match("héllo", "h(.)")`,
  `string.match(12345, "3(4)")`, `string.match("hello", "l", 4)`, `string.match("hello", "(l)(l)", -3)`, `string.match("devices/7/status", "^devices/([^/]+)/status$")`,
  `iter(string.gmatch("one two  three", "%a+"))`, `iter(string.gmatch("k1=v1, k2=v2", "(%w+)=(%w+)"))`, `iter(string.gmatch("abc", ""))`,
  `iter(string.gmatch("abc", "()"))`, `iter(string.gmatch("hello", "l*"))`, `iter(string.gmatch("^a^a", "^a"))`, `iter(string.gmatch("abcd", "%a", 3))`,
  `string.gsub("hello world", "o", "0")`, `string.gsub("hello world", "(%w+)", "<%1>")`, `string.gsub("hello", "", "-")`, `string.gsub("abc", "%w", "%0%0")`,
  `string.gsub("hello world", "%w+", "%0 %0", 1)`, `string.gsub("$name is $age", "%$(%w+)", { name = "bob", age = 42 })`,
  `string.gsub("a b c", "%w", function (c) if c == "b" then return false end return c:upper() end)`, `string.gsub("x", "x", "%%")`,
  `string.gsub("abc", "^a", "A")`, `string.gsub("aaa", "^a", "A")`, `string.gsub("hello", "l+", function () return 7 end)`,
  `string.gsub("abc", "(a)(b)(c)", "%3%2%1")`, `string.gsub("abc", "()b()", "%1%2")`, `string.gsub("a,b,,c", ",", ";", 2)`, `string.gsub("abc", "b*", "-")`,
  `("x"):rep(3):gsub("x", "y")`, `("topic/a/b"):find("/", 1, true)`, `("a+b"):find("+", 1, true)`, `string.gsub("abc", ".", { a = 1, b = true })`,
  // failures
  `pcall(string.find, "a", "%")`, `pcall(string.find, "a", "[a")`, `pcall(string.find, "a", "(a")`, `pcall(string.find, "a", "a)")`,
  `pcall(string.match, "a", "%1")`, `pcall(string.match, "a", "%f")`, `pcall(string.match, "a", "%b")`, `pcall(string.gsub, "a", "a", "%2")`,
  `pcall(string.gsub, "a", "a", "%x")`, `pcall(string.gsub, "a", "a", {a = {}})`, `pcall(string.gsub, "a", "a")`, `pcall(string.find, nil, "a")`,
  `pcall(string.find, "a", "a", 1.5)`, `pcall(string.match, "a", "(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))")`,
  `pcall(string.match, string.rep("a", 300), string.rep("a?", 300))`, `pcall(string.gsub, "abc", "b", "%")`, `pcall(string.gmatch("a", "%"))`
]

t.test('the sandbox string functions answer as Lua 5.4 does', async (t) => {
  const native = await new LuaFactory().createEngine()
  t.teardown(() => native.global.close())
  const vm = await LuaVm.create({ chunkName: '@patterns.lua', memoryMax: 64 * 1024 * 1024, print: () => {} })
  t.teardown(() => vm.close())
  const strip = (text: string): string => text.replace(/^(\[string "[^"]*"\]|\S+):\d+: /, '')
  for (const expr of CASES) {
    const code = `${SERIALIZE} return ser(${expr})`
    let want: string
    try {
      want = String(native.doStringSync(code))
    } catch (err) {
      want = `error: ${strip((err as Error).message.split('\n')[0]!)}`
    }
    const outcome = vm.run(Buffer.from(code), 5000)
    const got = outcome.ok ? String(outcome.values[0]) : `error: ${strip(outcome.message)}`
    t.equal(got, want, expr)
  }
})

t.test('a catastrophic pattern on a payload is stopped at the deadline', async (t) => {
  const vm = await LuaVm.create({ chunkName: '@slow.lua', memoryMax: 16 * 1024 * 1024, print: () => {} })
  t.teardown(() => vm.close())
  const started = performance.now()
  const outcome = vm.run(Buffer.from('local s = string.rep("a,", 400) return s:match("(.-),(.-),(.-),(.-),(.-)x")'), 200)
  t.match(outcome, { ok: false, kind: 'timeout' })
  t.ok(performance.now() - started < 20_000, 'it came back')
  const gsub = await LuaVm.create({ chunkName: '@slow.lua', memoryMax: 16 * 1024 * 1024, print: () => {} })
  t.teardown(() => gsub.close())
  t.match(gsub.run(Buffer.from('return (string.rep("a", 5000)):gsub(".-.-.-b", "x")'), 200), { ok: false, kind: 'timeout' })
  const find = await LuaVm.create({ chunkName: '@slow.lua', memoryMax: 16 * 1024 * 1024, print: () => {} })
  t.teardown(() => find.close())
  const plain = find.run(Buffer.from('local s = string.rep("a", 1000000) return s:find(string.rep("a", 100000) .. "b", 1, true)'), 2000)
  t.match(plain, { ok: true, values: [null] }, 'a plain search of a long needle is linear (no C memcmp loop)')
})
