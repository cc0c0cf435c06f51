// Regular-expression literals the specification refuses, found in the bundle before the guest compiles it.
// The bundler's parser does not check a pattern, and the guest's compiler refuses it without a position; this
// check gives the literal's own file:line:col (through the bundle's source map) and the specification's
// reason. acorn, at the newest ECMAScript version, is the judge, so pattern modifiers (`(?i:…)`) and duplicate
// named groups in alternatives build and run as written. A bundle with nothing of the kind is passed unread.
// Pure: no file is read.
import { parse } from 'acorn';
import { originalPositionFor, TraceMap, type SourceMapInput } from '@jridgewell/trace-mapping';

/** Text a bundle must hold for one of its literals to possibly be refused where the builder's own RegExp
 *  would take it: a modifier group, or a group name used twice. Cheap, and never false for such a bundle. */
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

export interface RegexLiteralError {
  /** acorn's reason: "Invalid regular expression: /…/: …" */
  message: string;
  /** The source as the map names it, 1-based line, 0-based column; undefined when the map says nothing. */
  source?: string;
  line?: number;
  column?: number;
}

/** The first literal of `code` (an ES module) that the specification refuses, where it is in its own file. */
export function regexLiteralError(code: string, map: SourceMapInput): RegexLiteralError | undefined {
  if (!mayNeed(code)) return undefined;
  try {
    parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true, allowAwaitOutsideFunction: true });
    return undefined;
  } catch (e: any) {
    // Any other syntax error is the guest compiler's to report (its parser is the one that runs the code).
    if (typeof e?.pos !== 'number' || !/^Invalid regular expression/.test(String(e.message))) return undefined;
    const message = String(e.message).replace(/ \(\d+:\d+\)$/, '');
    // acorn points at the pattern; the literal begins at the slash before it.
    const back = code[e.pos - 1] === '/' ? 1 : 0;
    if (!e.loc) return { message };
    const o = originalPositionFor(new TraceMap(map), { line: e.loc.line, column: e.loc.column - back });
    return o.source === null || o.line === null || o.column === null ? { message } : { message, source: o.source, line: o.line, column: o.column };
  }
}
