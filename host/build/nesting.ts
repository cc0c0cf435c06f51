// How deeply code may nest before kiln refuses it, checked before any parser sees the code: QuickJS's parser
// overflows the guest's stack at a few hundred levels (the compiler instance traps), and a parser in native
// code (the bundler's) that overflows its stack ends the process. Pure functions.

/** How deep brackets may nest in a source file or script: deeper code is refused before any parser sees it.
 *  (QuickJS's parser overflows the guest's stack at a few hundred levels, and a native parser's overflow
 *  ends the process.) */
export const MAX_NESTING = 256;

/** How deep operators and the keywords that nest may chain in one expression, counted with the brackets
 *  around them: a parser recurses once per prefix operator, arrow, ternary, assignment, `else`..., so
 *  `!!!…1`, `a=>a=>…` or `if(x)x;else if…` a few thousand long overflows the bundler's native parser (which
 *  ends the process) with no bracket at all, and rolldown's passes take time cubic in a run of unary `-`. */
export const MAX_CHAIN = 1024;

/**
 * The deepest nesting of (), [] and {} in JavaScript `code`, skipping strings, comments, template text and
 * (approximately) regular expressions. Linear, and conservative: it may over-count inside an unusual regex,
 * never under-count real nesting.
 */
export function nestingDepth(code: string): number {
  return nestingDepths(code).brackets;
}

/** Operator characters: a run of them (`===`, `&&`, `=>`) counts once towards a chain, and each `!`, `~`, `+`
 *  and `-` in it once more (`!!x`, `+-+-x` are prefix operators, each a level of the parser's). */
const OPERATORS = new Set('!~?:+-*%<>=&|^');
/** Keywords that nest what follows them, and how much each counts. */
const NESTING_WORDS: Readonly<Record<string, number>> = { typeof: 2, void: 2, delete: 2, new: 2, await: 2, yield: 2, else: 4, in: 1, instanceof: 1 };
const word = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c === '_' || c === '$' || c > '\x7f';

/**
 * Both depths of `code`: `brackets`, as nestingDepth; `chain`, the most operator characters and nesting
 * keywords (NESTING_WORDS' weights) on one path into the code, with brackets counted too. A chain goes on into
 * a bracket, is back to where it was after it, and starts again after a `;` or `,` (the next statement or
 * element is beside the last, not in it), except for the `else`s of an `if … else if …` chain.
 */
export function nestingDepths(code: string): { brackets: number; chain: number } {
  let depth = 0, max = 0;
  let chain = 0, elses = 0, maxChain = 0; // in the current bracket: operators since its start or last `;`/`,`, elses
  const saved: number[] = []; // chain and elses at each open bracket, in pairs
  const count = (n: number) => { chain += n; maxChain = Math.max(maxChain, depth + chain + elses); };
  const open = () => { saved.push(chain, elses); max = Math.max(max, ++depth); count(0); };
  const close = () => {
    if (saved.length) { elses = saved.pop()!; chain = saved.pop()!; }
    depth = Math.max(0, depth - 1);
  };
  const templates: number[] = []; // depth at which each open template literal's `${` started
  let prev = ''; // last significant character, to tell a regex from a division
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') continue;
    if (c === '/' && code[i + 1] === '/') { const e = code.indexOf('\n', i); i = e < 0 ? code.length : e; continue; }
    if (c === '/' && code[i + 1] === '*') { const e = code.indexOf('*/', i + 2); i = e < 0 ? code.length : e + 1; continue; }
    if (c === '"' || c === "'") { i = skipQuoted(code, i, c); prev = c; continue; }
    if (c === '`' || (c === '}' && templates.length && templates[templates.length - 1] === depth)) {
      if (c === '}') { templates.pop(); close(); }
      const r = skipTemplate(code, i + 1);
      i = r.end;
      if (r.opensExpression) { open(); templates.push(depth); }
      prev = '`';
      continue;
    }
    if (c === '/' && (prev === '' || '(,=:[!&|?{};+-*%<>~^'.includes(prev))) { i = skipRegex(code, i); prev = '/'; continue; }
    if (word(c)) {
      let j = i;
      while (j + 1 < code.length && word(code[j + 1])) j++;
      const w = code.slice(i, j + 1);
      if (Object.hasOwn(NESTING_WORDS, w) && !(i > 0 && code[i - 1] === '.')) {
        if (w === 'else') { elses += NESTING_WORDS[w]; count(0); } else count(NESTING_WORDS[w]);
      }
      i = j;
      prev = code[j];
      continue;
    }
    if (c === '(' || c === '[' || c === '{') open();
    else if (c === ')' || c === ']' || c === '}') close();
    else if (c === ';' || c === ',') chain = saved.length ? saved[saved.length - 2] : 0;
    else if (OPERATORS.has(c) || c === '/') count(OPERATORS.has(code[i - 1]) && !'!~+-'.includes(c) ? 0 : 1);
    prev = c;
  }
  return { brackets: max, chain: maxChain };
}

function skipQuoted(code: string, i: number, q: string): number {
  for (let j = i + 1; j < code.length; j++) {
    if (code[j] === '\\') j++;
    else if (code[j] === q || code[j] === '\n') return j;
  }
  return code.length;
}

/** From inside a template literal: where its text ends, and whether it stops at a `${`. */
function skipTemplate(code: string, i: number): { end: number; opensExpression: boolean } {
  for (let j = i; j < code.length; j++) {
    if (code[j] === '\\') j++;
    else if (code[j] === '`') return { end: j, opensExpression: false };
    else if (code[j] === '$' && code[j + 1] === '{') return { end: j + 1, opensExpression: true };
  }
  return { end: code.length, opensExpression: false };
}

function skipRegex(code: string, i: number): number {
  let cls = false;
  for (let j = i + 1; j < code.length; j++) {
    const c = code[j];
    if (c === '\\') j++;
    else if (c === '[') cls = true;
    else if (c === ']') cls = false;
    else if ((c === '/' && !cls) || c === '\n') return j;
  }
  return code.length;
}

/** Throws when `code` nests deeper than MAX_NESTING, or chains longer than MAX_CHAIN. */
export function checkNesting(code: string, what: string): void {
  const { brackets, chain } = nestingDepths(code);
  if (brackets > MAX_NESTING) {
    throw new NestingError(`${what} nests brackets ${brackets} levels deep; kiln accepts at most ${MAX_NESTING}`);
  }
  if (chain > MAX_CHAIN) {
    throw new NestingError(`${what} chains ${chain} operators and brackets in one expression; kiln accepts at most ${MAX_CHAIN}`);
  }
}

export class NestingError extends Error {
  override name = 'NestingError';
}
