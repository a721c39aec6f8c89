// Lua 5.4's pattern matching (lstrlib.c: match, classes, captures, %b, %f,
// back references), over bytes, in JavaScript. Lua's own matcher runs inside
// one C call, where the instruction-count hook never fires: a backtracking
// pattern on a long payload (`(.-),(.-),(.-)x` on a few hundred bytes) would
// hold the node for minutes. This one calls `tick` as it works, and `tick`
// throws past the deadline. Positions are 0-based offsets; -1 is no match.
const L_ESC = 0x25 // %
const MAXCAPTURES = 32
const MAXCCALLS = 200
const CAP_UNFINISHED = -1
const CAP_POSITION = -2
const c = (ch: string): number => ch.charCodeAt(0)

/** A malformed pattern: the message Lua gives. */
export class PatternError extends Error {}

/** The matcher's state for one subject and pattern (lstrlib's MatchState). */
export class MatchState {
  level = 0
  readonly capInit = new Int32Array(MAXCAPTURES)
  readonly capLen = new Int32Array(MAXCAPTURES)
  private depth = MAXCCALLS
  private steps = 0

  constructor (readonly src: Uint8Array, readonly pat: Uint8Array, private readonly tick: () => void) {}

  /** Ready for a new attempt (lstrlib's reprepstate). */
  reset (): void {
    this.level = 0
    this.depth = MAXCCALLS
  }

  /** Where a match of the pattern from `p` at `s` ends, or -1. */
  match (s: number, p: number): number {
    if ((++this.steps & 0xfff) === 0) this.tick()
    if (this.depth-- === 0) throw new PatternError('pattern too complex')
    const P = this.pat
    const pEnd = P.length
    for (;;) {
      if (p === pEnd) break
      const pc = P[p]
      if (pc === c('(')) {
        s = P[p + 1] === c(')') ? this.startCapture(s, p + 2, CAP_POSITION) : this.startCapture(s, p + 1, CAP_UNFINISHED)
        break
      }
      if (pc === c(')')) {
        s = this.endCapture(s, p + 1)
        break
      }
      if (pc === c('$') && p + 1 === pEnd) {
        s = s === this.src.length ? s : -1
        break
      }
      if (pc === L_ESC) {
        const next = P[p + 1]
        if (next === c('b')) {
          s = this.matchBalance(s, p + 2)
          if (s !== -1) { p += 4; continue }
          break
        }
        if (next === c('f')) {
          p += 2
          if (P[p] !== c('[')) throw new PatternError("missing '[' after '%f' in pattern")
          const ep = this.classEnd(p)
          const previous = s === 0 ? 0 : this.src[s - 1]!
          const current = s < this.src.length ? this.src[s]! : 0
          if (!this.matchBracketClass(previous, p, ep - 1) && this.matchBracketClass(current, p, ep - 1)) { p = ep; continue }
          s = -1
          break
        }
        if (next !== undefined && next >= c('0') && next <= c('9')) {
          s = this.matchCapture(s, next)
          if (s !== -1) { p += 2; continue }
          break
        }
      }
      // default: a single character class, maybe with a repetition suffix
      const ep = this.classEnd(p)
      const suffix = P[ep]
      if (!this.singleMatch(s, p, ep)) {
        if (suffix === c('*') || suffix === c('?') || suffix === c('-')) { p = ep + 1; continue }
        s = -1
        break
      }
      if (suffix === c('?')) {
        const res = this.match(s + 1, ep + 1)
        if (res !== -1) { s = res; break }
        p = ep + 1
        continue
      }
      if (suffix === c('+')) { s = this.maxExpand(s + 1, p, ep); break }
      if (suffix === c('*')) { s = this.maxExpand(s, p, ep); break }
      if (suffix === c('-')) { s = this.minExpand(s, p, ep); break }
      s++
      p = ep
    }
    this.depth++
    return s
  }

  /** Capture `i` as [start, length] (length CAP_POSITION for a position capture); the whole match when there is none. */
  capture (i: number, s: number, e: number): [number, number] {
    if (i >= this.level) {
      if (i !== 0) throw new PatternError(`invalid capture index %${i + 1}`)
      return [s, e - s]
    }
    const len = this.capLen[i]!
    if (len === CAP_UNFINISHED) throw new PatternError('unfinished capture')
    return [this.capInit[i]!, len]
  }

  private classEnd (p: number): number {
    const P = this.pat
    const pEnd = P.length
    const pc = P[p++]
    if (pc === L_ESC) {
      if (p >= pEnd) throw new PatternError("malformed pattern (ends with '%')")
      return p + 1
    }
    if (pc === c('[')) {
      if (P[p] === c('^')) p++
      do {
        if (p >= pEnd) throw new PatternError("malformed pattern (missing ']')")
        if (P[p++] === L_ESC && p < pEnd) p++
      } while (P[p] !== c(']'))
      return p + 1
    }
    return p
  }

  private singleMatch (s: number, p: number, ep: number): boolean {
    if (s >= this.src.length) return false
    const ch = this.src[s]!
    const pc = this.pat[p]!
    if (pc === c('.')) return true
    if (pc === L_ESC) return matchClass(ch, this.pat[p + 1]!)
    if (pc === c('[')) return this.matchBracketClass(ch, p, ep - 1)
    return pc === ch
  }

  /** `[...]` from `p` (the `[`) to `ec` (the `]`). */
  private matchBracketClass (ch: number, p: number, ec: number): boolean {
    const P = this.pat
    let sig = true
    if (P[p + 1] === c('^')) {
      sig = false
      p++
    }
    while (++p < ec) {
      if (P[p] === L_ESC) {
        p++
        if (matchClass(ch, P[p]!)) return sig
      } else if (P[p + 1] === c('-') && p + 2 < ec) {
        p += 2
        if (P[p - 2]! <= ch && ch <= P[p]!) return sig
      } else if (P[p] === ch) {
        return sig
      }
    }
    return !sig
  }

  private maxExpand (s: number, p: number, ep: number): number {
    let i = 0
    while (this.singleMatch(s + i, p, ep)) {
      i++
      if ((++this.steps & 0xfff) === 0) this.tick()
    }
    while (i >= 0) {
      const res = this.match(s + i, ep + 1)
      if (res !== -1) return res
      i--
    }
    return -1
  }

  private minExpand (s: number, p: number, ep: number): number {
    for (;;) {
      const res = this.match(s, ep + 1)
      if (res !== -1) return res
      if (this.singleMatch(s, p, ep)) s++
      else return -1
    }
  }

  private startCapture (s: number, p: number, what: number): number {
    const level = this.level
    if (level >= MAXCAPTURES) throw new PatternError('too many captures')
    this.capInit[level] = s
    this.capLen[level] = what
    this.level = level + 1
    const res = this.match(s, p)
    if (res === -1) this.level--
    return res
  }

  private endCapture (s: number, p: number): number {
    let l = -1
    for (let level = this.level - 1; level >= 0; level--) {
      if (this.capLen[level] === CAP_UNFINISHED) { l = level; break }
    }
    if (l < 0) throw new PatternError('invalid pattern capture')
    this.capLen[l] = s - this.capInit[l]!
    const res = this.match(s, p)
    if (res === -1) this.capLen[l] = CAP_UNFINISHED
    return res
  }

  private matchBalance (s: number, p: number): number {
    const P = this.pat
    if (p >= P.length - 1) throw new PatternError("malformed pattern (missing arguments to '%b')")
    const S = this.src
    if (s >= S.length || S[s] !== P[p]) return -1
    const open = P[p]!
    const close = P[p + 1]!
    let depth = 1
    while (++s < S.length) {
      if (S[s] === close) {
        if (--depth === 0) return s + 1
      } else if (S[s] === open) {
        depth++
      }
    }
    return -1
  }

  private matchCapture (s: number, digit: number): number {
    const l = digit - c('1')
    if (l < 0 || l >= this.level || this.capLen[l] === CAP_UNFINISHED) throw new PatternError(`invalid capture index %${l + 1}`)
    const len = this.capLen[l]!
    const S = this.src
    if (len < 0 || S.length - s < len) return -1
    const from = this.capInit[l]!
    for (let i = 0; i < len; i++) if (S[from + i] !== S[s + i]) return -1
    return s + len
  }
}

function matchClass (ch: number, cl: number): boolean {
  const lower = cl | 0x20
  let res: boolean
  switch (cl >= 0x41 && cl <= 0x5a ? lower : cl) {
    case c('a'): res = isAlpha(ch); break
    case c('c'): res = ch < 32 || ch === 127; break
    case c('d'): res = ch >= 0x30 && ch <= 0x39; break
    case c('g'): res = ch > 32 && ch < 127; break
    case c('l'): res = ch >= 0x61 && ch <= 0x7a; break
    case c('p'): res = ch > 32 && ch < 127 && !isAlnum(ch); break
    case c('s'): res = ch === 32 || (ch >= 9 && ch <= 13); break
    case c('u'): res = ch >= 0x41 && ch <= 0x5a; break
    case c('w'): res = isAlnum(ch); break
    case c('x'): res = (ch >= 0x30 && ch <= 0x39) || ((ch | 0x20) >= 0x61 && (ch | 0x20) <= 0x66); break
    case c('z'): res = ch === 0; break // deprecated in Lua, still matched
    default: return cl === ch
  }
  return cl >= 0x41 && cl <= 0x5a ? !res : res
}

const isAlpha = (ch: number): boolean => (ch | 0x20) >= 0x61 && (ch | 0x20) <= 0x7a
const isAlnum = (ch: number): boolean => isAlpha(ch) || (ch >= 0x30 && ch <= 0x39)

/** True when the pattern has none of Lua's special characters (a plain search will do). */
export function noSpecials (pat: Uint8Array): boolean {
  for (const ch of pat) if ('^$*+?.([%-'.includes(String.fromCharCode(ch))) return false
  return true
}

/**
 * The first match at or after `init` (0-based); `anchor`: only at `init`.
 * `lastMatch` (gmatch, gsub): a match ending there is not taken (an empty match right after the previous one).
 * Answers the match's start and end, or undefined.
 */
export function search (ms: MatchState, init: number, anchor: boolean, p = 0, lastMatch = -1): [number, number] | undefined {
  for (let s = init; s <= ms.src.length; s++) {
    ms.reset()
    const e = ms.match(s, p)
    if (e !== -1 && e !== lastMatch) return [s, e]
    if (anchor) return undefined
  }
  return undefined
}
