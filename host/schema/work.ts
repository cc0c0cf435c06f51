// What one validation of a tool's arguments may cost, counted in the code Ajv generates: a count, never a
// clock, so the same arguments pass or fail on any machine, busy or not.
//
// A step is one byte of validator code run, one character or property an O(size) helper looks at, or
// ERROR_STEPS for each error a validator creates or copies from a callee. Every function Ajv compiles is
// rewritten through `code.process` (instrument):
//  - on entry a function spends the size of its body outside its loops, and each iteration of a loop the size
//    of the loop's body outside its inner loops: straight-line code runs at most once per entry or iteration
//    (the only backward jumps are loops; calls are counted by the callee), so this bounds the code that runs;
//  - a `for…in` spends its object's property count before it starts (the engine lists them up front, even
//    when the body stops at the first);
//  - what costs more than its bytes of code spends by what it reads or writes: string lengths
//    (`minLength`/`maxLength`), formats, property counts (`minProperties`/`maxProperties`, the evaluated
//    properties `unevaluatedProperties` merges), deep equality (`const`/`enum`), the JSON pointer of a property
//    name, each `default` written into the arguments, uniqueItems' canonical texts (schema/ajv.ts);
//  - an error created or copied spends ERROR_STEPS, which also bounds the memory errors hold (at most
//    SCHEMA_WORK_LIMIT / ERROR_STEPS of them).
// Pattern matching has its own budget (PATTERN_WORK_LIMIT, schema/linear-regexp.ts). Past SCHEMA_WORK_LIMIT the
// validation throws SchemaWorkExceeded. Code kiln cannot parse (an Ajv whose output it does not know) throws
// at compile: a validator is never left uncounted. Outside a validation (Ajv checking a schema against its
// meta-schema at load) nothing is counted: that work is bounded by the schema's size (extensions/manifest.ts).
import { WorkBudget } from './work-budget.js';

/** Steps one validation may spend (see above): about a second of the server's thread at worst. Valid
 *  arguments spend 8 (a long string) to 120 (an array of numbers) steps per byte of JSON under common
 *  schemas, so 9–130 MB of them fit, more than a request may carry (8 MiB); a five-way oneOf of closed
 *  objects spends ~310 (3.5 MB). A schema with 16,000 inline checks on each item of an array is refused
 *  within its first 250 items. */
export const SCHEMA_WORK_LIMIT = 2 ** 30;

/** Steps per unit of each kind of work, about what it costs in nanoseconds on a server core (so the limit is
 *  about a second of the server's thread): a character a helper reads, a property listed (the most: keySteps),
 *  a character of uniqueItems' canonical text, an item deep equality compares, an error created or copied (its
 *  object and what it holds). A byte of validator code is a step. */
export const CHAR_STEPS = 8;
export const KEY_STEPS = 256;
export const TEXT_STEPS = 32;
export const ITEM_STEPS = 16;
/** Steps per value uniqueItems' canonical text of an object writes (a call into JavaScript for each, and what it
 *  keeps: ~100–200 bytes). */
export const NODE_STEPS = 256;
/** Steps per "~" or "/" escaped in a property name written as a JSON pointer (each is a match of a global
 *  replace: up to ~800 ns and a part kept until the result is built). */
export const POINTER_ESCAPE_STEPS = 1024;
export const ERROR_STEPS = 1024;
/** Steps per character a format reads (ajv-formats' expressions run on re2js at up to ~125 ns a character). */
export const FORMAT_CHAR_STEPS = 128;
/** Steps per byte of a `default` written into the arguments: each is a fresh copy, up to ~20 bytes of heap a
 *  byte of its JSON. */
export const DEFAULT_STEPS = 128;
/** The most validator code one schema may compile to (after counting is added): what V8 parses and keeps. */
export const MAX_VALIDATOR_BYTES = 8 * 1024 * 1024;

export class SchemaWorkExceeded extends Error {}

/** What explaining a refusal (the allErrors pass) may spend, after the deciding pass spent up to the limit. */
export const EXPLAIN_WORK_LIMIT = SCHEMA_WORK_LIMIT / 4;

const budget = new WorkBudget(SCHEMA_WORK_LIMIT, () => new SchemaWorkExceeded(`validating them against the schema needs more than ${SCHEMA_WORK_LIMIT} steps ` +
  '(bytes of validator code run, characters and properties examined, errors collected): the schema is too large for arguments this large, or a recursive anyOf/oneOf grows exponentially with how deep they nest'));

/** Run `f` (one validation) with a fresh budget of `limit` steps; nested calls share the outer one. */
export const withSchemaBudget = <T>(f: () => T, limit = SCHEMA_WORK_LIMIT): T => budget.run(f, limit);
export const spendSchemaWork = (steps: number): void => budget.spend(steps);
/** Steps the last validation spent. */
export const lastSchemaWork = (): number => budget.lastSpent;

/** Steps for listing `n` properties: V8 lists a small object's in a few nanoseconds each, a large one's (a
 *  dictionary, sorted on listing) in up to ~230. */
export const keySteps = (n: number): number => n * Math.min(KEY_STEPS, 8 + (n >> 3));

// Ajv's run-time helpers, known by the code Ajv writes to load them (`code`, set on each by Ajv): kiln run's
// cached validators load Ajv's helpers only when their schema uses them.
const UCS2LENGTH = 'require("ajv/dist/runtime/ucs2length").default';
const EQUAL = 'require("ajv/dist/runtime/equal").default';

/** `a` and `b` equal as JSON values (what Ajv's `const` and `enum` ask), spending a step per property and
 *  array item looked at. */
function countedEqual(a: unknown, b: unknown): boolean {
  if (typeof a === 'string' && typeof b === 'string' && a.length === b.length) spendSchemaWork(a.length); // compared character by character
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a !== a && b !== b; // NaN
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    spendSchemaWork(ITEM_STEPS);
    if (a.length !== bs.length) return false;
    for (let i = 0; i < a.length; i++) if (!countedEqual(a[i], bs[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  spendSchemaWork(keySteps(ka.length) + keySteps(kb.length));
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.prototype.hasOwnProperty.call(b, k) || !countedEqual((a as any)[k], (b as any)[k])) return false;
  return true;
}

/** What instrumented code calls as `self.kiln…` (`self` in Ajv's generated code is the Ajv instance). `regExp`:
 *  the pattern constructor given to Ajv (counted by its own budget). */
export function countingHelpers(regExp: unknown): Record<string, unknown> {
  const func = (f: unknown): unknown => {
    const code = String((f as { code?: unknown })?.code);
    if (code === UCS2LENGTH) return (s: string): number => (spendSchemaWork(s.length * CHAR_STEPS), (f as (s: string) => number)(s));
    if (code === EQUAL) return countedEqual;
    if (f === regExp || f === Object.prototype.hasOwnProperty) return f; // counted by its own budget; O(1)
    throw new Error('kiln cannot count the work of a helper the validator Ajv generated uses');
  };
  const format = (f: any): unknown => {
    const read = (s: unknown) => typeof s === 'string' && spendSchemaWork(s.length * FORMAT_CHAR_STEPS);
    const count = (v: (s: string) => unknown) => (s: unknown) => (read(s), v(s as string));
    if (typeof f === 'function') return count(f);
    if (f && typeof f.validate === 'function') {
      // formatMinimum and its kin (ajv-formats) compare two values of the format
      const compare = typeof f.compare === 'function' ? (a: unknown, b: unknown) => (read(a), read(b), f.compare(a, b)) : f.compare;
      return { ...f, validate: count(f.validate.bind(f)), compare };
    }
    if (f && typeof f.test === 'function') return { ...f, test: count(f.test.bind(f)) };
    return f;
  };
  return {
    kilnWork: spendSchemaWork,
    kilnFunc: func,
    kilnFormat: format,
    kilnIn: (o: object) => (spendSchemaWork(2 * keySteps(Object.keys(o).length)), o), // listed twice: here and by the loop
    kilnKeyCount: (o: object) => {
      const n = Object.keys(o).length;
      spendSchemaWork(keySteps(n));
      return n;
    },
    kilnPointer: (key: string) => {
      spendSchemaWork(key.length * CHAR_STEPS);
      let escapes = 0;
      for (let i = key.indexOf('~'); i >= 0; i = key.indexOf('~', i + 1)) escapes++;
      for (let i = key.indexOf('/'); i >= 0; i = key.indexOf('/', i + 1)) escapes++;
      spendSchemaWork(escapes * POINTER_ESCAPE_STEPS);
      return escapes ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
    },
    kilnErrors: (errors: unknown[], into: unknown[]) => (spendSchemaWork(errors.length * ERROR_STEPS + into.length), errors),
  };
}

// The head of every function Ajv generates (its destructured validation context, with `dynamicAnchors` in
// drafts 2019-09 and 2020-12).
const FUNCTION_HEAD = /function \w+\(data, \{instancePath="", parentData, parentDataProperty, rootData=data(?:, dynamicAnchors=\{\})?\}=\{\}\)\{/g;

// The comment Ajv writes at the start of a schema's function when it has a $id: the $id as a JSON string.
const SOURCE_URL = /^\/\*# sourceURL="(?:[^"\\]|\\.)*" \*\/$/;

// An error created where it is found (Ajv's reportError): its object, stored and counted. A string in it that
// holds this text can only end the match early (fewer bytes left uncounted); an error of more than 4 KiB of
// code is counted by its bytes as well (more counted, never less), and no match looks further than that.
const ERROR_CODE = /const (err\d+) = \{instancePath[^]{0,4096}?\};if\(vErrors === null\)\{vErrors = \[\1\];\}else \{vErrors\.push\(\1\);\}errors\+\+;/g;

/** Rewrites at fixed offsets of the source, outside string literals. */
type Edit = { at: number; end: number; text: string };

/** A function's or a loop's body: `open` and `close` are its braces. */
interface Body {
  open: number;
  close: number;
  inner: Body[];
}

/** A rewrite: the text that replaces each match of `re` outside string literals; with `back`, the match is
 *  widened back over the characters `back` matches (handed to `to` as `name`). Every pattern starts with fixed
 *  text, so finding them is linear in the source. */
const REWRITES: { re: RegExp; back?: RegExp; to: (m: RegExpExecArray, name: string) => string }[] = [
  // a callee's errors appended to the caller's (Ajv's addErrorsFrom)
  { re: /vErrors\.concat\(([\w.]+)\)/g, to: (m) => `vErrors.concat(self.kilnErrors(${m[1]}, vErrors))` },
  // an error created (reportError/addError)
  { re: /errors\+\+;/g, to: () => `errors++;self.kilnWork(${ERROR_STEPS});` },
  // the properties a callee evaluated merged into the caller's (unevaluatedProperties): listed like a for…in
  { re: /Object\.assign\(([\w.]+), ([\w.]+)\)/g, to: (m) => `Object.assign(${m[1]}, self.kilnIn(${m[2]}))` },
  // minProperties / maxProperties
  { re: /Object\.keys\(([\w.]+)\)\.length/g, to: (m) => `self.kilnKeyCount(${m[1]})` },
  // the JSON pointer of a property name in an error's instancePath
  // (the name before it is found by looking back: a pattern that starts with it would try every run of word
  // characters in the source, quadratic in their length)
  { re: /\.replace\(\/~\/g, "~0"\)\.replace\(\/\\\/\/g, "~1"\)/g, back: /\w/, to: (_m, name) => `self.kilnPointer(${name})` },
  // a `default` written into the arguments (Ajv's assignDefault): a fresh copy of its JSON each time
  {
    re: /if\((data\d*(?:\.[A-Za-z_$][\w$]*|\[(?:"(?:[^"\\]|\\.)*"|\d+)\]))(?: === undefined| === undefined \|\| \1 === null \|\| \1 === "")\)\{\1 = /g,
    to: (m) => `${m[0].slice(0, m[0].length - m[1].length - 3)}self.kilnWork(${jsonLength(m.input, m.index! + m[0].length) * DEFAULT_STEPS});${m[1]} = `,
  },
  // helpers and formats from the scope
  { re: /const (func\d+) = (scope\.func\[\d+\]|require\("ajv\/dist\/runtime\/\w+"\)\.default);/g, to: (m) => `const ${m[1]} = self.kilnFunc(${m[2]});` },
  { re: /const (formats\d+) = (scope\.formats\[\d+\]);/g, to: (m) => `const ${m[1]} = self.kilnFormat(${m[2]});` },
];

/** Ajv's `code.process`: `source` (compiled schema functions and their scope) rewritten to spend its work
 *  (see the header). Throws on code it cannot parse. */
export function instrument(source: string): string {
  if (source.length > MAX_VALIDATOR_BYTES) throw new Error(`it compiles to ${source.length} bytes of validator code, more than ${MAX_VALIDATOR_BYTES}`);
  const edits: Edit[] = [];
  const strings: [number, number][] = []; // [start, end) of string literals and comments
  const heads = new Set<number>();
  for (const m of source.matchAll(FUNCTION_HEAD)) heads.add(m.index! + m[0].length - 1);
  if (!heads.size) throw new Error('kiln cannot count the work of the validator Ajv generated (unknown function head)');
  // `$async: true`: the validator would return a promise; kiln decides arguments synchronously. (A JSON string
  // cannot hold this text: its quotes would be escaped.)
  if (/async function \w+\(data, \{instancePath=""/.test(source)) throw new Error('asynchronous schemas ($async) are not supported: kiln validates arguments synchronously');

  const unknown = (what: string) => new Error(`kiln cannot count the work of the validator Ajv generated (${what})`);
  const top: Body[] = [];
  // open braces: a function or loop body, or a plain block (null)
  const stack: (Body | null)[] = [];
  const counted = (): Body | undefined => {
    for (let j = stack.length - 1; j >= 0; j--) if (stack[j]) return stack[j]!;
    return undefined;
  };
  let loopBrace = -1;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '"' || c === "'" || c === '`') {
      const start = i;
      for (i++; i < source.length && source[i] !== c; i++) if (source[i] === '\\') i++;
      if (i >= source.length) throw unknown('an unterminated string');
      strings.push([start, i + 1]);
    } else if (c === '/' && source[i + 1] === '*') {
      // Ajv's only comment names the schema's $id (`/*# sourceURL="…" */`); a $id holding "*/" would end it early
      // and its rest would be code (extensions/manifest.ts refuses such a $id; this refuses what gets past)
      const end = source.indexOf('*/', i + 2);
      if (end < 0) throw unknown('an unterminated comment');
      if (!SOURCE_URL.test(source.slice(i, end + 2))) throw unknown('a comment that is not its sourceURL');
      strings.push([i, end + 2]);
      i = end + 1;
    } else if (c === '\\') i++; // in a regular expression literal
    else if (c === 'f' && source.startsWith('for(', i) && !/[\w$]/.test(source[i - 1] ?? '')) {
      const close = matchingParen(source, i + 3);
      if (source[close + 1] !== '{') throw unknown('a loop without a block');
      const head = source.slice(i + 4, close);
      const forIn = /^((?:const|let|var) \w+ in )([\w.]+)$/.exec(head);
      if (forIn) edits.push({ at: i + 4, end: close, text: `${forIn[1]}self.kilnIn(${forIn[2]})` });
      // for…of over a list in the schema (an enum or a required of 200 or more: Ajv's loopEnum, loopRequired),
      // counted per iteration like any loop
      else if (/ (in|of) /.test(head) && !/^\s*(?:(?:const|let|var) )?\w+ of [\w$]+(?:\.[\w$]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*$/.test(head)) throw unknown(`the loop "for(${head})"`);
      loopBrace = close + 1;
      i = close;
    } else if (c === '{') {
      if (heads.has(i) || i === loopBrace) {
        if (heads.has(i) && stack.some((b) => b !== null)) throw unknown('a function inside a function');
        stack.push({ open: i, close: -1, inner: [] });
      } else stack.push(null);
    } else if (c === '}') {
      if (!stack.length) throw unknown('an unbalanced brace');
      const body = stack.pop();
      if (body) {
        body.close = i;
        (counted()?.inner ?? top).push(body);
      }
    }
  }
  if (stack.length) throw unknown('an unbalanced brace');
  if (top.length !== heads.size) throw unknown('a function head it could not find the body of');

  const inString = (at: number): boolean => {
    let lo = 0;
    let hi = strings.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (strings[mid][1] <= at) lo = mid + 1;
      else if (strings[mid][0] > at) hi = mid - 1;
      else return true;
    }
    return false;
  };
  // An error's construction is counted as ERROR_STEPS where it runs (REWRITES), not by its bytes (one written
  // inside a string literal is text, counted as such).
  const errorCode: number[] = [0]; // prefix sums of the lengths of the errors' code, by where each starts
  const errorAt: number[] = [];
  for (const m of source.matchAll(ERROR_CODE)) {
    if (inString(m.index!)) continue;
    errorAt.push(m.index!);
    errorCode.push(errorCode[errorCode.length - 1] + m[0].length);
  }
  const firstAtOrAfter = (at: number): number => {
    let lo = 0;
    let hi = errorAt.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (errorAt[mid] < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const errorBytes = (b: Body): number => errorCode[firstAtOrAfter(b.close)] - errorCode[firstAtOrAfter(b.open)];
  const spend = (b: Body) => {
    const own = b.close - b.open + 1 - errorBytes(b) - b.inner.reduce((n, x) => n + x.close - x.open + 1 - errorBytes(x), 0);
    edits.push({ at: b.open + 1, end: b.open + 1, text: `self.kilnWork(${own});` });
    b.inner.forEach(spend);
  };
  top.forEach(spend);

  for (const { re, back, to } of REWRITES) {
    for (const m of source.matchAll(re)) {
      let at = m.index!;
      if (back) while (at > 0 && back.test(source[at - 1])) at--;
      if (!inString(at)) edits.push({ at, end: m.index! + m[0].length, text: to(m, source.slice(at, m.index!)) });
    }
  }

  edits.sort((a, b) => a.at - b.at || a.end - b.end);
  let out = '';
  let from = 0;
  for (const e of edits) {
    if (e.at < from) throw unknown('overlapping rewrites');
    out += source.slice(from, e.at) + e.text;
    from = e.end;
  }
  out += source.slice(from);
  if (out.length > MAX_VALIDATOR_BYTES) throw new Error(`it compiles to ${out.length} bytes of validator code, more than ${MAX_VALIDATOR_BYTES}`);
  return out;
}

/** The length of the JSON literal Ajv wrote at `at` (a default's value). */
function jsonLength(source: string, at: number): number {
  const c = source[at];
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let i = at; i < source.length; i++) {
      const d = source[i];
      if (d === '"') {
        for (i++; i < source.length && source[i] !== '"'; i++) if (source[i] === '\\') i++;
      } else if (d === '{' || d === '[') depth++;
      else if ((d === '}' || d === ']') && --depth === 0) return i + 1 - at;
    }
    throw new Error('kiln cannot count the work of the validator Ajv generated (an unterminated default)');
  }
  if (c === '"') {
    let i = at + 1;
    for (; i < source.length && source[i] !== '"'; i++) if (source[i] === '\\') i++;
    return i + 1 - at;
  }
  const end = source.indexOf(';', at);
  return (end < 0 ? source.length : end) - at;
}

/** The index of the `)` matching the `(` at `open`, skipping string literals. */
function matchingParen(source: string, open: number): number {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    const c = source[i];
    if (c === '"' || c === "'") {
      for (i++; i < source.length && source[i] !== c; i++) if (source[i] === '\\') i++;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  throw new Error('kiln cannot count the work of the validator Ajv generated (an unbalanced parenthesis)');
}
