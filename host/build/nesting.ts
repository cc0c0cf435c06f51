// How deeply code may nest before kiln refuses it, checked before any parser sees the code: QuickJS's parser
// overflows the guest's stack at a few hundred levels (the compiler instance traps), and a parser in native
// code (the bundler's) that overflows its stack ends the process. Pure functions.

/** How deep brackets may nest in a source file or script: deeper code is refused before any parser sees it.
 *  (QuickJS's parser overflows the guest's stack at a few hundred levels, and a native parser's overflow
 *  ends the process.) */
export const MAX_NESTING = 256;

/**
 * The deepest nesting of (), [] and {} in JavaScript `code`, skipping strings, comments, template text and
 * (approximately) regular expressions. Linear, and conservative: it may over-count inside an unusual regex,
 * never under-count real nesting.
 */
export function nestingDepth(code: string): number {
  let depth = 0, max = 0;
  const templates: number[] = []; // depth at which each open template literal's `${` started
  let prev = ''; // last significant character, to tell a regex from a division
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') continue;
    if (c === '/' && code[i + 1] === '/') { const e = code.indexOf('\n', i); i = e < 0 ? code.length : e; continue; }
    if (c === '/' && code[i + 1] === '*') { const e = code.indexOf('*/', i + 2); i = e < 0 ? code.length : e + 1; continue; }
    if (c === '"' || c === "'") { i = skipQuoted(code, i, c); prev = c; continue; }
    if (c === '`' || (c === '}' && templates.length && templates[templates.length - 1] === depth)) {
      if (c === '}') { templates.pop(); depth--; }
      const r = skipTemplate(code, i + 1);
      i = r.end;
      if (r.opensExpression) { templates.push(++depth); max = Math.max(max, depth); }
      prev = '`';
      continue;
    }
    if (c === '/' && (prev === '' || '(,=:[!&|?{};+-*%<>~^'.includes(prev))) { i = skipRegex(code, i); prev = '/'; continue; }
    if (c === '(' || c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
    prev = c;
  }
  return max;
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

/** Throws when `code` nests deeper than MAX_NESTING. */
export function checkNesting(code: string, what: string): void {
  const depth = nestingDepth(code);
  if (depth > MAX_NESTING) {
    throw new NestingError(`${what} nests brackets ${depth} levels deep; kiln accepts at most ${MAX_NESTING}`);
  }
}

export class NestingError extends Error {
  override name = 'NestingError';
}
