// Regular-expression literals the guest's engine takes but the bundler cannot: rollup builds each literal's
// value with the builder's own `new RegExp` (Node's V8), so syntax newer than the builder's Node (pattern
// modifiers `(?i:…)`, duplicate named groups) failed the build with V8's message and no position, whichever
// rollup build runs. This plugin runs on each module's JavaScript (after TypeScript is stripped, before
// anything parses it): a literal that the specification allows (acorn, at the newest ECMAScript version, is
// the judge) but the builder's RegExp refuses is swapped for a placeholder literal of the same length, and
// renderChunk puts the author's literal back in the bundle. The guest runs the literal exactly as written,
// and nothing moves, so every source map stays true. A literal the specification refuses fails the build
// at its file:line:col (mapped through the earlier transforms' source map). Modules with nothing of the kind
// are passed through unread.
import { parse, tokTypes, type Token } from 'acorn';
import { originalPositionFor, TraceMap, type SourceMapInput } from '@jridgewell/trace-mapping';
import type { Plugin } from '@rollup/wasm-node';

/** Text a module must hold for one of its literals to possibly need this: a modifier group, or a group name
 *  used twice. Cheap, and never false for a module that needs the plugin. */
const MODIFIER = /\(\?(?:[a-zA-Z]+-?[a-zA-Z]*|-[a-zA-Z]*):/;
const GROUP_NAME = /\(\?<([^>=!]{1,200})>/g;
function mayNeed(code: string): boolean {
  if (MODIFIER.test(code)) return true;
  const seen = new Set<string>();
  for (const [, name] of code.matchAll(GROUP_NAME)) {
    if (seen.has(name)) return true;
    seen.add(name);
  }
  return false;
}

/** Whether the builder's RegExp (what rollup evaluates) takes this pattern and flags. */
function builderTakes(pattern: string, flags: string): boolean {
  try {
    new RegExp(pattern, flags);
    return true;
  } catch {
    return false;
  }
}

/** Where a position in the code this plugin was given (after TypeScript was stripped) is in the file itself:
 *  line 1-based, column 0-based, as rollup's this.error takes it. */
function sourcePosition(map: SourceMapInput, at: { line: number; column: number } | undefined) {
  if (!at) return undefined;
  const o = originalPositionFor(new TraceMap(map), at);
  return o.line === null || o.column === null ? undefined : { line: o.line, column: o.column };
}

/** Placeholder characters: a noncharacter (never in interchange text) opens and pads each placeholder, and its
 *  number is written in private-use characters, so no author's text holds one by chance. */
const PAD = '\uFDD0';
const DIGITS = 0x1900; // U+E000..U+F8FF
function placeholder(n: number, length: number): string {
  let digits = '';
  do {
    digits = String.fromCharCode(0xe000 + (n % DIGITS)) + digits;
    n = Math.floor(n / DIGITS);
  } while (n > 0);
  const body = PAD + digits;
  // The shortest literal the builder can refuse, /(?i:)/, leaves 5 characters between the slashes.
  return `/${body}${PAD.repeat(Math.max(0, length - 2 - body.length))}/`;
}

export function regexLiterals(): Plugin {
  const originals = new Map<string, string>(); // placeholder -> the author's literal
  return {
    name: 'kiln-regex-literals',
    transform(code, id) {
      if (id.startsWith('\0') || !mayNeed(code)) return null;
      const found: Token[] = [];
      try {
        parse(code, {
          ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true, allowReturnOutsideFunction: true,
          allowAwaitOutsideFunction: true, allowImportExportEverywhere: true,
          onToken: (t) => { if (t.type === tokTypes.regexp) found.push(t); },
        });
      } catch (e: any) {
        // A literal the specification refuses: its own position, which the builder's message lacks. Any other
        // syntax error is rollup's to report (its parser is the one the build relies on).
        if (typeof e?.pos === 'number' && /^Invalid regular expression/.test(e.message)) {
          // acorn points at the pattern; the literal begins at the slash before it.
          const back = code[e.pos - 1] === '/' ? 1 : 0;
          const at = e.loc && { line: e.loc.line, column: e.loc.column - back };
          this.error(String(e.message).replace(/ \(\d+:\d+\)$/, ''), sourcePosition(this.getCombinedSourcemap() as unknown as SourceMapInput, at) ?? e.pos - back);
        }
        return null;
      }
      let out = '';
      let at = 0;
      for (const t of found) {
        const { pattern, flags } = (t as Token & { value: { pattern: string; flags: string } }).value;
        if (builderTakes(pattern, flags)) continue;
        const literal = code.slice(t.start, t.end);
        const stand = placeholder(originals.size, literal.length);
        if (stand.length !== literal.length) continue; // cannot happen: see placeholder()
        originals.set(stand, literal);
        out += code.slice(at, t.start) + stand;
        at = t.end;
      }
      // Same length, same lines: the module's source map is unchanged (map: null keeps it).
      return at === 0 ? null : { code: out + code.slice(at), map: null };
    },
    renderChunk(code) {
      if (originals.size === 0) return null;
      let out = code;
      for (const [stand, literal] of originals) out = out.replace(stand, () => literal);
      return { code: out, map: null };
    },
  };
}
