// Regular expressions that match in linear time, for argument validation: the `pattern` and
// `patternProperties` of an extension's schemas and ajv-formats' regular-expression formats all run on RE2
// (re2js, a pure-JS port of RE2: no backtracking, no native code), wired into Ajv through `code.regExp`.
//
// Invariants:
//  - A schema pattern is first parsed by JavaScript with the `u` flag (JSON Schema patterns are ECMA-262, and
//    Ajv passes `u`), then translated token by token to RE2 syntax with JavaScript's meaning kept: `.` never
//    matches a line terminator, `\s`/`\S` are JavaScript's Unicode white space, `\uXXXX` (and surrogate pairs),
//    `\u{...}`, `\cX`, `\0` become `\x{...}`, `(?<name>` becomes `(?P<name>`, `[^]` and `[]` keep their meaning.
//    What RE2 cannot run — lookaround, backreferences, repeat counts over 1,000 — throws UnsupportedPattern
//    (the loader turns it into a ManifestError naming the tool and the pattern): never a silent change.
//  - Matching is bounded by work, not by a clock: every test() spends (program size × string length) from
//    the current validation's budget (PATTERN_WORK_LIMIT steps, started by withPatternBudget); past it the
//    validation throws PatternWorkExceeded. The bound is the same on a fast or a loaded machine.
//  - Compiling is bounded too: one extension's patterns may compile to PATTERN_PROGRAM_LIMIT RE2 instructions
//    in all (withProgramBudget), counted from the pattern before RE2 builds anything; past it, UnsupportedPattern.
//  - re2js is imported on first use (loadRE2, awaited by makeAjv): a process that validates nothing pays nothing.
import { WorkBudget } from './work-budget.js';
import type { RE2JS as RE2JSType } from 're2js';

/** Steps of pattern matching (RE2 program size × string length, summed) one validation may spend. */
export const PATTERN_WORK_LIMIT = 2 ** 25;
/** RE2 instructions the patterns of one extension's schemas may compile to in all (RE2 builds each program
 *  whole, at load: about 0.5 KB and 10 µs each). */
export const PATTERN_PROGRAM_LIMIT = 100_000;

export class UnsupportedPattern extends Error {}
export class PatternWorkExceeded extends Error {}

// JavaScript's \s: WhiteSpace and LineTerminator (ECMA-262), as RE2 class contents; and its complement.
const WS = '\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';
const NOT_WS = '\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}' +
  '\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}';
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';
const hex = (n: number) => `\\x{${n.toString(16).toUpperCase()}}`;
// Escapes with the same meaning in both engines (with `u`, without `i`: \d \w \b ASCII in both).
const SAME = new Set(['d', 'D', 'w', 'W', 't', 'n', 'r', 'f']);

// Unicode general categories' long names (ECMA-262 accepts both) as RE2's short ones.
const CATEGORY: Record<string, string> = {
  Letter: 'L', Cased_Letter: 'LC', Uppercase_Letter: 'Lu', Lowercase_Letter: 'Ll', Titlecase_Letter: 'Lt', Modifier_Letter: 'Lm',
  Other_Letter: 'Lo', Mark: 'M', Nonspacing_Mark: 'Mn', Spacing_Mark: 'Mc', Enclosing_Mark: 'Me', Number: 'N',
  Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl', Other_Number: 'No', Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc',
  Dash_Punctuation: 'Pd', Open_Punctuation: 'Ps', Close_Punctuation: 'Pe', Initial_Punctuation: 'Pi', Final_Punctuation: 'Pf',
  Other_Punctuation: 'Po', Symbol: 'S', Math_Symbol: 'Sm', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk', Other_Symbol: 'So',
  Separator: 'Z', Space_Separator: 'Zs', Line_Separator: 'Zl', Paragraph_Separator: 'Zp', Other: 'C', Control: 'Cc', cntrl: 'Cc',
  Format: 'Cf', Surrogate: 'Cs', Private_Use: 'Co', Unassigned: 'Cn',
};

// A quantifier at a position (sticky), with its lazy `?`: {min,max} in groups 1 and 3.
const QUANTIFIER = /(?:[*+?]|\{(\d+)(,(\d*))?\})\??/y;

/** `pattern` (ECMA-262 with the `u` flag) in RE2 syntax with the same meaning, and the size of the RE2
 *  program it compiles to (counted as RE2's parser counts it: a repeat `x{m,n}` is n copies of x); throws
 *  UnsupportedPattern. */
export function toRE2(pattern: string): { source: string; size: number } {
  try {
    new RegExp(pattern, 'u'); // parsed only (never executed): the syntax must be JavaScript's first
  } catch (e) {
    throw new UnsupportedPattern((e as Error).message);
  }
  let out = '';
  let inClass = false;
  const p = pattern;
  // The program size, per open group: its finished alternatives, the current one, and the last atom's size
  // (what a quantifier repeats). JavaScript has checked the syntax, so groups and quantifiers are well formed.
  const groups: { alts: number; cur: number; last: number }[] = [{ alts: 0, cur: 0, last: 0 }];
  const atom = (n: number) => {
    const g = groups[groups.length - 1];
    g.cur += n;
    g.last = n;
  };
  const repeat = (n: number) => {
    const g = groups[groups.length - 1];
    g.cur += n - g.last;
    g.last = n;
  };
  for (let i = 0; i < p.length; ) {
    const c = p[i];
    if (c === '\\') {
      const e = p[i + 1];
      i += 2;
      if (!inClass) atom(1);
      if (SAME.has(e)) out += `\\${e}`;
      else if (e === 'v') out += '\\x{0B}';
      else if (e === 'b') out += inClass ? '\\x{8}' : '\\b';
      else if (e === 'B') out += '\\B';
      else if (e === 's') out += inClass ? WS : `[${WS}]`;
      else if (e === 'S') out += inClass ? NOT_WS : `[${NOT_WS}]`;
      else if (e === '0') out += '\\x{0}';
      else if (e >= '1' && e <= '9') throw new UnsupportedPattern('backreferences (\\1 ...) cannot be matched in linear time');
      else if (e === 'k') throw new UnsupportedPattern('named backreferences (\\k<...>) cannot be matched in linear time');
      else if (e === 'c') out += hex(p.charCodeAt(i++) % 32);
      else if (e === 'x') {
        out += hex(parseInt(p.slice(i, i + 2), 16));
        i += 2;
      } else if (e === 'u' && p[i] === '{') {
        const end = p.indexOf('}', i);
        out += hex(parseInt(p.slice(i + 1, end), 16));
        i = end + 1;
      } else if (e === 'u') {
        let cp = parseInt(p.slice(i, i + 4), 16);
        i += 4;
        // with `u`, an escaped surrogate pair is one code point
        if (cp >= 0xd800 && cp <= 0xdbff && p.startsWith('\\u', i) && /^[dD][c-fC-F][0-9a-fA-F]{2}$/.test(p.slice(i + 2, i + 6))) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (parseInt(p.slice(i + 2, i + 6), 16) - 0xdc00);
          i += 6;
        }
        out += hex(cp);
      } else if (e === 'p' || e === 'P') {
        const end = p.indexOf('}', i);
        const name = p.slice(i + 1, end).replace(/^(?:General_Category|gc|Script|sc)=/, '');
        out += `\\${e}{${CATEGORY[name] ?? name}}`; // RE2 knows general categories by short name, scripts by name
        i = end + 1;
      } else out += `\\${e}`; // an escaped syntax character (with `u` nothing else may be escaped)
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c === '[' ? '\\[' : c;
      i++;
      continue;
    }
    if (c === '[') {
      atom(1);
      if (p.startsWith('[^]', i)) {
        out += '(?s:.)';
        i += 3;
      } else if (p.startsWith('[]', i)) {
        out += '[^\\x{0}-\\x{10FFFF}]';
        i += 2;
      } else {
        inClass = true;
        out += '[';
        i++;
        if (p[i] === '^') out += p[i++];
      }
      continue;
    }
    QUANTIFIER.lastIndex = i;
    const q = QUANTIFIER.exec(p);
    if (q) {
      const last = groups[groups.length - 1].last;
      const min = q[1] === undefined ? 0 : Number(q[1]);
      const max = q[1] === undefined ? -1 : q[2] === undefined ? min : q[3] === '' ? -1 : Number(q[3]);
      if (q[0][0] === '*') repeat(2 + last);
      else if (q[0][0] === '+' || q[0][0] === '?') repeat(1 + last);
      else if (max === -1) repeat(1 + min * last);
      else repeat(max * last + (max - min));
      out += q[0];
      i += q[0].length;
      continue;
    }
    if (c === '(') {
      if (p[i + 1] === '?' && (p[i + 2] === '=' || p[i + 2] === '!' || (p[i + 2] === '<' && (p[i + 3] === '=' || p[i + 3] === '!')))) {
        throw new UnsupportedPattern('lookahead and lookbehind ((?=, (?!, (?<=, (?<!) cannot be matched in linear time');
      }
      groups.push({ alts: 0, cur: 0, last: 0 });
      if (p.startsWith('(?<', i)) {
        out += '(?P<';
        i += 3;
        continue;
      }
    } else if (c === ')') {
      const g = groups.pop()!;
      atom(g.alts + g.cur + 2);
    } else if (c === '|') {
      const g = groups[groups.length - 1];
      g.alts += g.cur + 1;
      g.cur = 0;
      g.last = 0;
    } else atom(1);
    out += c === '.' ? DOT : c;
    i++;
  }
  return { source: out, size: Math.max(1, groups[0].alts + groups[0].cur) };
}

let RE2JS: typeof RE2JSType | undefined;
/** Load the RE2 engine; linearRegExp needs it loaded. */
export async function loadRE2(): Promise<void> {
  RE2JS ??= (await import('re2js')).RE2JS;
}

/** A compiled linear-time matcher; `flags` may hold `i` and `m` (for ajv-formats' own expressions). */
function compile(re2: string, flags = ''): { test(s: string): boolean } {
  if (!RE2JS) throw new Error('linear-regexp: loadRE2() was not awaited');
  let r: RE2JSType;
  try {
    r = RE2JS.compile(re2, (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0));
  } catch (e) {
    throw new UnsupportedPattern(String((e as Error).message).replace(/^error parsing regexp: /, ''));
  }
  return { test: (s: string) => r.test(s) };
}

/** What is left of one extension's PATTERN_PROGRAM_LIMIT. */
export type ProgramBudget = { left: number };
export const programBudget = (): ProgramBudget => ({ left: PATTERN_PROGRAM_LIMIT });
let program: ProgramBudget | undefined;

/** Compile a schema (`f`) charging its patterns' RE2 program sizes to `b`. */
export function withProgramBudget<T>(b: ProgramBudget, f: () => T): T {
  const outer = program;
  program = b;
  try {
    return f();
  } finally {
    program = outer;
  }
}

const patternWork = new WorkBudget(PATTERN_WORK_LIMIT, () => new PatternWorkExceeded(`matching the arguments against the schema's patterns needs more than ${PATTERN_WORK_LIMIT} steps ` +
      '(pattern size × string length)'));

/** Run `f` (one validation) with a fresh pattern-work budget; nested calls share the outer one. */
export const withPatternBudget = <T>(f: () => T): T => patternWork.run(f);
// Outside a validation (Ajv compiling a schema) nothing is counted: bounded by the schema's size.
const spend = (steps: number): void => patternWork.spend(steps);

/** A linear-time matcher with the meaning of `new RegExp(source, flags)`; a schema's (`charged`) is charged to
 *  the current validation's budget, kiln's own (the formats: fixed, trusted programs) is linear in the input. */
export function linearRegExp(source: string, flags = '', charged = true): { test(s: string): boolean; toString(): string } {
  const { source: re2, size } = toRE2(source);
  if (charged) {
    // checked before compiling: RE2 builds the whole program (memory and time in proportion) at once
    if (size > (program?.left ?? PATTERN_PROGRAM_LIMIT)) {
      throw new UnsupportedPattern(`the patterns of the extension's schemas would compile to more than ${PATTERN_PROGRAM_LIMIT} ` +
        `RE2 instructions (this one to ${size}: a repeat x{m,n} is n copies of x)`);
    }
    if (program) program.left -= size;
  }
  const m = compile(re2, flags.replace(/[ugys]/g, ''));
  const key = `/${source}/${flags}`;
  return {
    test(s: string) {
      s = String(s);
      if (charged) spend(size * Math.max(1, s.length));
      return m.test(s);
    },
    toString: () => key, // Ajv keys its compiled patterns by this
  };
}

/** Ajv's `code.regExp`: how every `pattern` and `patternProperties` key is matched. */
export const ajvRegExp = Object.assign((pattern: string, u: string) => {
  try {
    return linearRegExp(pattern, u);
  } catch (e) {
    if (!(e instanceof UnsupportedPattern)) throw e;
    throw new UnsupportedPattern(`pattern ${JSON.stringify(pattern)} cannot be used: ${e.message} (kiln matches patterns with RE2, in linear time)`);
  }
}, {
  // For ajv's standalone code, which kiln never generates for a schema with patterns (schema/validators.ts).
  code: 'kilnLinearRegExp',
});

/** ajv-formats' regular-expression formats, run on RE2 where RE2 can express them. Formats it cannot
 *  (lookaround) are linear in JavaScript as written: `hostname` bounds its length in its first lookahead,
 *  `duration` has no ambiguous repetition; `url`'s quadratic part is matched by RE2 and its lookaheads
 *  (no private IPv4 literal as the host) are checked as a second RE2 expression. */
export function linearFormats(formats: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(formats)) {
    const rx = f instanceof RegExp ? f : (f as { validate?: unknown })?.validate instanceof RegExp ? ((f as { validate: RegExp }).validate) : undefined;
    if (!rx) continue;
    let m: { test(s: string): boolean };
    try {
      m = linearRegExp(rx.source, rx.flags, false);
    } catch {
      continue; // kept as ajv-formats wrote it (see above)
    }
    const validate = (s: string) => m.test(s);
    out[name] = f instanceof RegExp ? validate : { ...(f as object), validate };
  }
  if (formats.url instanceof RegExp) {
    const source = formats.url.source;
    if (source.includes('(?!')) {
      const body = linearRegExp(source.replace(/\(\?!(?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)/g, ''), formats.url.flags, false);
      const privateHost = linearRegExp('^(?:https?|ftp)://(?:[^\\s@]+@)?(?:(?:10|127)(?:\\.\\d{1,3}){3}|(?:169\\.254|192\\.168)(?:\\.\\d{1,3}){2}|172\\.(?:1[6-9]|2\\d|3[0-1])(?:\\.\\d{1,3}){2})', 'i', false);
      out.url = (s: string) => body.test(s) && !privateHost.test(s);
    }
  }
  return out;
}
