// Browser globals a bundled package uses that an extension does not have: a reference to `document` or
// `window` that no scope of the bundle declares (found by scope analysis of the bundle itself, after
// tree-shaking, so code tree-shaking dropped says nothing), attributed through the bundle's source map to the package
// whose file it came from. `typeof document` is not a use: it is how a package asks whether it has one.
// Each package is named once, with the globals it uses and what to do. Never throws: a bundle it cannot read is no note.
// periscopic and is-reference are ES-only packages: loaded with import() (the command line is CommonJS:
// scripts/bundle-cli.mjs), and only for a bundle that names one of the globals at all.
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping';
import type { Scope } from 'periscopic';
import { parseAst } from '@rollup/wasm-node/parseAst';

/** The globals looked for: what a package made for browsers reaches for first. */
export const BROWSER_GLOBALS = ['document', 'window'] as const;

/** Where docs/extensions.md says what to do. */
export const FREE_GLOBALS_DOC = 'docs/extensions.md, "Packages that need a browser"';

export interface FreeGlobal {
  /** name@version, or the name */
  pkg: string;
  /** The globals it uses, in the order of their first use. */
  globals: string[];
  /** The package's file and line of its first use, relative to the extension's directory. */
  at: string;
}

type Node = { type: string; start: number; [k: string]: unknown };

/** The browser globals a `typeof` in `node`'s subtree tests (at most 256 nodes looked at: a guard is short). */
function typeofTested(node: Node): Set<string> {
  const names = new Set<string>();
  const todo: Node[] = [node];
  for (let seen = 0; todo.length && seen < 256; seen++) {
    const n = todo.pop()!;
    if (n.type === 'UnaryExpression' && n.operator === 'typeof' && (n.argument as Node)?.type === 'Identifier') {
      const name = (n.argument as Node).name as string;
      if ((BROWSER_GLOBALS as readonly string[]).includes(name)) names.add(name);
    }
    for (const v of Object.values(n)) {
      if (Array.isArray(v)) { for (const c of v) if (c && typeof c.type === 'string') todo.push(c); }
      else if (v && typeof v === 'object' && typeof (v as Node).type === 'string') todo.push(v as Node);
    }
  }
  return names;
}

/** Every use of a browser global in `code` no scope declares: its offset. A use guarded by a `typeof` test of
 *  the same name (`typeof document === 'object' && document.all`, or a branch of an `if` or `?:` whose test
 *  has it) is not one: that code runs only where the global exists. Iterative, so a deep bundle cannot
 *  exhaust the stack (nesting.ts bounds its depth anyway). */
async function uses(code: string): Promise<{ global: (typeof BROWSER_GLOBALS)[number]; offset: number }[]> {
  const [{ analyze }, { default: isReference }] = await Promise.all([import('periscopic'), import('is-reference')]);
  const ast = parseAst(code) as unknown as Node;
  const { map, scope: top } = analyze(ast as never);
  const found: { global: (typeof BROWSER_GLOBALS)[number]; offset: number }[] = [];
  const none = new Set<string>();
  const stack: [Node, Node | null, Scope, Set<string>][] = [[ast, null, top, none]];
  while (stack.length) {
    const [node, parent, outer, guarded] = stack.pop()!;
    const scope = map.get(node as never) ?? outer;
    if (node.type === 'Identifier' && parent) {
      const name = node.name as string;
      if ((BROWSER_GLOBALS as readonly string[]).includes(name) && isReference(node as never, parent as never) && !scope.find_owner(name) &&
        !(parent.type === 'UnaryExpression' && parent.operator === 'typeof') && !guarded.has(name)) {
        found.push({ global: name as (typeof BROWSER_GLOBALS)[number], offset: node.start });
      }
      continue;
    }
    // What a typeof test guards: the right of `&&`, both branches of `if` and `?:` (feature detection).
    const guard = node.type === 'LogicalExpression' && node.operator === '&&' ? ['left', 'right']
      : node.type === 'IfStatement' || node.type === 'ConditionalExpression' ? ['test', 'consequent', 'alternate'] : undefined;
    const tested = guard ? typeofTested(node[guard[0]] as Node) : none;
    for (const key of Object.keys(node)) {
      const v = node[key];
      const inner = guard && key !== guard[0] && guard.includes(key) && tested.size ? new Set([...guarded, ...tested]) : guarded;
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) if (v[i] && typeof v[i].type === 'string') stack.push([v[i], node, scope, inner]);
      } else if (v && typeof v === 'object' && typeof (v as Node).type === 'string') stack.push([v as Node, node, scope, inner]);
    }
  }
  return found.sort((a, b) => a.offset - b.offset);
}

/** Whether `code` may use one of the globals: a mention that is not surely a comment (after a `//` with no
 *  quote before it on its line, or on a line of a block comment starting with `*`), a `typeof` test or a
 *  property name. Parsing a large bundle costs about a second, and most mentions are in comments. */
function mayUse(code: string): boolean {
  for (const m of code.matchAll(/\b(?:document|window)\b/g)) {
    const start = code.lastIndexOf('\n', m.index) + 1;
    if (m.index - start > 4096) return true; // a minified line: the parse decides
    const before = code.slice(start, m.index);
    const comment = before.indexOf('//');
    if (comment >= 0 && !/['"`/]/.test(before.slice(0, comment))) continue;
    if (/^\s*(?:\*|\/\*)/.test(before)) continue;
    if (/(?:typeof\s+|\.\s*)$/.test(before)) continue;
    return true;
  }
  return false;
}

/**
 * The browser globals `code` uses undeclared, one entry per package: `map` is the bundle's source map
 * (sources relative to the extension's directory), `packageOf` names the package of a source (undefined for the
 * author's own files, which are not reported: running them says where).
 */
export async function freeGlobals(code: string, map: object, packageOf: (source: string) => string | undefined): Promise<FreeGlobal[]> {
  if (!mayUse(code)) return [];
  try {
    const hits = await uses(code);
    if (!hits.length) return [];
    const trace = new TraceMap(map as never);
    const lineStarts = [0];
    for (let i = code.indexOf('\n'); i >= 0; i = code.indexOf('\n', i + 1)) lineStarts.push(i + 1);
    const out: FreeGlobal[] = [];
    for (const { global, offset } of hits) {
      let lo = 0;
      for (let hi = lineStarts.length - 1; lo < hi;) {
        const mid = (lo + hi + 1) >> 1;
        if (lineStarts[mid] <= offset) lo = mid; else hi = mid - 1;
      }
      const pos = originalPositionFor(trace, { line: lo + 1, column: offset - lineStarts[lo] });
      const pkg = pos.source ? packageOf(pos.source) : undefined;
      if (!pkg) continue;
      const seen = out.find((f) => f.pkg === pkg);
      if (!seen) out.push({ pkg, globals: [global], at: `${pos.source}:${pos.line}` });
      else if (!seen.globals.includes(global)) seen.globals.push(global);
    }
    return out;
  } catch {
    return [];
  }
}

export function describeFreeGlobal(f: FreeGlobal): string {
  return `${f.pkg} uses ${f.globals.map((g) => `\`${g}\``).join(' and ')} (first at ${f.at}), which extensions do not have (there is no DOM in kiln), so that code throws ` +
    `a ReferenceError when it runs: where the package takes a document or DOM node as an argument, pass one built by a ` +
    `pure-JavaScript DOM (linkedom's parseHTML gives a document and window that work in kiln; cheerio and htmlparser2 ` +
    `parse HTML); otherwise use a package made for servers (see ${FREE_GLOBALS_DOC})`;
}
