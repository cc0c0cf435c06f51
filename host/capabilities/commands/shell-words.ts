// A command template's words, as the shell reads them: the `${name}` placeholders, a word as its pieces
// (literal text, a placeholder, text the shell computes), argv-form arguments, and a lexer of POSIX sh lines
// into simple commands (those inside `$( )` included). Pure functions: what a template may do with its words is
// decided by the template rules (template.ts); commands.ts substitutes values into the same words.
//
// The lexer reads what sh reads: quotes, backslashes, `$(...)`, `${...}`, `$((...))`, backticks, comments,
// operators and redirections. With `strict` (a template with placeholders) it refuses every lexical place where
// kiln's quoting of a value would not hold (inside quotes, after a backslash, in backticks, `${...}`,
// arithmetic, comments, here-documents, and shell syntax it does not analyse), through the caller's `refuse`;
// with `positional` it marks the words that carry a shell script's positional parameters ("$1", $@ ...) as
// tainted, as it marks the words that hold a placeholder.

/** A placeholder, `${name}`, in a command template. */
export const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const PLACEHOLDER_AT = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}/;
/** A positional parameter: $0-$9, $@, $*, ${1}, ${10}, ${@}, ${1:-x}, … */
const POSITIONAL = /\$([0-9@*]|\{[#!]?[0-9@*])/;
export const hasPlaceholder = (text: string) => /\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(text);

/** A piece of a word: literal text, a placeholder, or text the shell computes (`$HOME`, `$(…)`, `"$x"`).
 *  An unquoted computed piece may expand to nothing (the word vanishes) or to several words. */
export type Piece = { lit: string } | { ph: string } | { dyn: string; quoted: boolean };

export interface Word {
  pieces: Piece[];
  /** A value can reach this word: a placeholder in it, or inside a `$( )` in it. */
  tainted: boolean;
}

/** The word holds an unquoted expansion: it may vanish or split, so the positions after it are unknown. */
export const unstable = (w: Word) => w.pieces.some((p) => 'dyn' in p && !p.quoted);

/** The word's text if it is all literal, else undefined. */
export const literal = (w: Word | undefined): string | undefined =>
  w && w.pieces.every((p) => 'lit' in p) ? w.pieces.map((p) => (p as { lit: string }).lit).join('') : undefined;

/** An argv-form argument as pieces (no quoting in argv form: the text is the argument). */
export function argvWord(arg: string): Word {
  const pieces: Piece[] = [];
  let last = 0;
  for (const m of arg.matchAll(PLACEHOLDER)) {
    if (m.index! > last) pieces.push({ lit: arg.slice(last, m.index) });
    pieces.push({ ph: m[1] });
    last = m.index! + m[0].length;
  }
  if (last < arg.length || pieces.length === 0) pieces.push({ lit: arg.slice(last) });
  return { pieces, tainted: pieces.some((p) => 'ph' in p) };
}

/** The names of the placeholders in `text`, in order. */
export function placeholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

type Token = { op: string } | { word: Word };

const BLANK = new Set([' ', '\t']);
const META = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

/** Where `$(` … `)` starting at `open` (the index of "(") ends, skipping quotes. */
function closingParen(s: string, open: number, refuse: (why: string) => never): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') { i++; continue; }
    if (c === "'") { const j = s.indexOf("'", i + 1); if (j < 0) break; i = j; continue; }
    if (c === '"') { i = closingDouble(s, i, refuse); continue; }
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return refuse('an unbalanced "$(" or "("');
}

function closingDouble(s: string, open: number, refuse: (why: string) => never): number {
  for (let i = open + 1; i < s.length; i++) {
    if (s[i] === '\\') { i++; continue; }
    if (s[i] === '"') return i;
    if (s.startsWith('$(', i)) i = closingParen(s, i + 1, refuse);
  }
  return refuse('an unterminated double quote');
}

function closingBrace(s: string, open: number, refuse: (why: string) => never): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '\\') { i++; continue; }
    if (s[i] === '{') depth++;
    else if (s[i] === '}' && --depth === 0) return i;
  }
  return refuse('an unterminated "${"');
}

/**
 * Split a shell line into tokens. Commands inside `$( )` are lexed too and appended to `nested`. With
 * `strict` (the template has placeholders) every context where kiln's quoting would not hold is refused.
 */
function lex(s: string, strict: boolean, nested: Token[][], refuse: (why: string) => never, positional = false): Token[] {
  const out: Token[] = [];
  const inside = (text: string, where: string) => {
    if (strict && hasPlaceholder(text)) refuse(`a placeholder ${where}, where kiln's quoting does not hold`);
  };
  // In a shell's inline script that receives values as positional parameters, "$1", $@ … carry values.
  const carries = (text: string) => positional && POSITIONAL.test(text);
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (BLANK.has(c)) { i++; continue; }
    if (c === '\\' && s[i + 1] === '\n') { i += 2; continue; }
    if (c === '#') {
      const end = s.indexOf('\n', i);
      inside(s.slice(i, end < 0 ? s.length : end), 'in a comment (a newline in the value would end it)');
      i = end < 0 ? s.length : end;
      continue;
    }
    const two = s.slice(i, i + 2);
    if (two === '&&' || two === '||' || two === ';;' || two === '|&') { out.push({ op: two }); i += 2; continue; }
    if (c === '\n' || c === ';' || c === '&' || c === '|' || c === '(' || c === ')') { out.push({ op: c === '\n' ? ';' : c }); i++; continue; }
    const redir = /^[0-9]*(<<-?|<<<|<>|>>|>&|<&|>\||<|>)/.exec(s.slice(i));
    if (redir && (redir[0].length > 1 || c === '<' || c === '>')) {
      if (redir[1].startsWith('<<') && strict) refuse('a here-document or here-string (its body is expanded by the shell)');
      out.push({ op: 'redirect' });
      i += redir[0].length;
      continue;
    }
    const pieces: Piece[] = [];
    let tainted = false;
    while (i < s.length && !META.has(s[i])) {
      const ch = s[i];
      if (ch === '\\') {
        if (s[i + 1] === '\n') { i += 2; continue; }
        if (strict && PLACEHOLDER_AT.test(s.slice(i + 1))) refuse('a backslash before a placeholder (it would break the quoting of the value)');
        pieces.push({ lit: s[i + 1] ?? '' });
        i += 2;
      } else if (ch === "'") {
        const j = s.indexOf("'", i + 1);
        if (j < 0) refuse('an unterminated single quote');
        inside(s.slice(i + 1, j), 'inside quotes');
        pieces.push({ lit: s.slice(i + 1, j) });
        i = j + 1;
      } else if (ch === '"') {
        const j = closingDouble(s, i, refuse);
        const body = s.slice(i + 1, j);
        inside(body, 'inside quotes');
        if (carries(body)) tainted = true;
        pieces.push(/[$`\\]/.test(body) ? { dyn: body, quoted: true } : { lit: body });
        i = j + 1;
      } else if (ch === '`') {
        let j = i + 1;
        while (j < s.length && s[j] !== '`') j += s[j] === '\\' ? 2 : 1;
        if (j >= s.length) refuse('an unterminated backtick');
        inside(s.slice(i + 1, j), 'inside backticks');
        if (carries(s.slice(i, j + 1))) tainted = true;
        pieces.push({ dyn: s.slice(i, j + 1), quoted: false });
        i = j + 1;
      } else if (ch === '$') {
        const ph = PLACEHOLDER_AT.exec(s.slice(i));
        if (ph) {
          pieces.push({ ph: ph[1] });
          tainted = true;
          i += ph[0].length;
        } else if (s.startsWith('$((', i)) {
          const j = closingParen(s, i + 1, refuse);
          inside(s.slice(i, j + 1), 'in arithmetic');
          pieces.push({ dyn: s.slice(i, j + 1), quoted: false });
          i = j + 1;
        } else if (s.startsWith('$(', i)) {
          const j = closingParen(s, i + 1, refuse);
          const body = s.slice(i + 2, j);
          nested.push(lex(body, strict, nested, refuse, positional));
          if (hasPlaceholder(body) || carries(body)) tainted = true;
          pieces.push({ dyn: s.slice(i, j + 1), quoted: false });
          i = j + 1;
        } else if (s.startsWith('${', i)) {
          const j = closingBrace(s, i + 1, refuse);
          inside(s.slice(i, j + 1), 'in a parameter expansion');
          if (carries(s.slice(i, j + 1))) tainted = true;
          pieces.push({ dyn: s.slice(i, j + 1), quoted: false });
          i = j + 1;
        } else {
          const m = /^\$([A-Za-z_][A-Za-z0-9_]*|[0-9?#@*$!-])?/.exec(s.slice(i))!;
          if (carries(m[0])) tainted = true;
          pieces.push(m[1] ? { dyn: m[0], quoted: false } : { lit: '$' });
          i += m[0].length;
        }
      } else {
        pieces.push({ lit: ch });
        i++;
      }
    }
    out.push({ word: { pieces: merge(pieces), tainted } });
  }
  return out;
}

function merge(pieces: Piece[]): Piece[] {
  const out: Piece[] = [];
  for (const p of pieces) {
    const last = out[out.length - 1];
    if ('lit' in p && last && 'lit' in last) last.lit += p.lit;
    else out.push({ ...p });
  }
  return out;
}

/** The simple commands of a shell line (and of every `$( )` in it), each as its words; redirection targets
 *  are left out (a value there names a file). What `strict` refuses goes to `refuse`, which throws. */
export function shellCommands(line: string, strict: boolean, refuse: (why: string) => never, positional = false): Word[][] {
  const nested: Token[][] = [];
  const top = lex(line, strict, nested, refuse, positional);
  const commands: Word[][] = [];
  for (const tokens of [top, ...nested]) {
    let cur: Word[] = [];
    let redirectNext = false;
    for (const [k, t] of tokens.entries()) {
      if ('op' in t) {
        if (t.op === 'redirect') { redirectNext = true; continue; }
        if (strict && t.op === '(' && (tokens[k + 1] as { op?: string })?.op === '(') refuse('an arithmetic command "(( ))"');
        if (strict && t.op === '(' && cur.length > 0) refuse('a function definition');
        if (strict && t.op === ';;') refuse('a case statement');
        if (cur.length) commands.push(cur);
        cur = [];
        continue;
      }
      if (redirectNext) { redirectNext = false; continue; }
      cur.push(t.word);
    }
    if (cur.length) commands.push(cur);
  }
  return commands;
}
