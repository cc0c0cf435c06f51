// Recursion shapes for test/stack-depth.test.mjs and test/wasmtime.test.mjs: each recurses through a different
// part of the engine (its interpreter, C built-ins calling back into JS, JSON, proxies, the parser).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Each body recurses N levels; it is run as `(N) => { body }`.
export const SHAPES = {
  'JS recursion': `const r = (n) => n === 0 ? 0 : 1 + r(n - 1); return r(N)`,
  'String() of nested arrays': `let a = []; for (let i = 0; i < N; i++) a = [a]; return String(a).length`,
  'JSON.stringify of nested arrays': `let a = []; for (let i = 0; i < N; i++) a = [a]; return JSON.stringify(a).length`,
  'JSON.stringify of nested objects': `let o = {}; for (let i = 0; i < N; i++) o = { a: o }; return JSON.stringify(o).length`,
  'JSON.parse with a reviver': `return JSON.parse('['.repeat(N) + ']'.repeat(N), (k, v) => v) && 1`,
  'Array.prototype.flat': `let a = []; for (let i = 0; i < N; i++) a = [a]; return a.flat(Infinity).length`,
  'a chain of proxies': `let p = {}; for (let i = 0; i < N; i++) p = new Proxy(p, {}); return p.x === undefined`,
  'a chain of getters': `let o = { x: 1 }; for (let i = 0; i < N; i++) { const inner = o; o = { get x() { return inner.x; } }; } return o.x`,
  'toString calling String()': `let o = { toString() { return 'x'; } }; for (let i = 0; i < N; i++) { const inner = o; o = { toString() { return String(inner); } }; } return String(o)`,
  'recursion through Array.prototype.map': `const r = (n) => n === 0 ? 0 : [n].map(() => r(n - 1))[0]; return r(N)`,
  'recursion through a sort comparator': `const r = (n) => { if (n > 0) [2, 1].sort((a, b) => (r(n - 1), a - b)); return 0; }; return r(N)`,
  'recursion through Function.prototype.call': `const r = (n) => n === 0 ? 0 : r.call(null, n - 1); return r(N)`,
  'eval of nested parentheses': `return (0, eval)('('.repeat(N) + '1' + ')'.repeat(N))`,
  'eval of nested blocks': `return (0, eval)('{'.repeat(N) + '}'.repeat(N)) ?? 0`,
  'eval of an else-if chain': `return (0, eval)('if (0) {} else '.repeat(N) + '{}') ?? 0`,
  'eval of nested arrow functions': `return typeof (0, eval)('x => '.repeat(N) + '1')`,
};

export const run = (body, n) => { try { new Function('N', body)(n); return 'ok'; } catch (e) { return e.name; } };
/** What Node does with every shape at `n` levels. */
export const nodeOutcomes = (n) => Object.fromEntries(Object.entries(SHAPES).map(([name, body]) => [name, run(body, n)]));
/** A guest script (its last expression the result) doing the same, for the shapes named in `only` if given. */
export const guestScript = (n, only = 'undefined') => `const shapes = ${JSON.stringify(SHAPES)};\nconst out = {};\nconst pick = ${only};\n` +
  `for (const [name, body] of Object.entries(shapes)) { if (pick && !pick.includes(name)) continue; try { new Function('N', body)(${n}); out[name] = 'ok'; } catch (e) { out[name] = e.name; } }\nout\n`;

/** An extension with one exposed tool, deep.run({ n, only? }), that runs the shapes in a guest. */
export function writeDeepExtension(dir) {
  const ext = join(dir, 'deep.ts');
  const body = guestScript('n', 'only').replace(/\nout\n$/, '\nreturn out;');
  const schema = { type: 'object', properties: { n: { type: 'integer' }, only: { type: 'array', items: { type: 'string' } } }, required: ['n'] };
  writeFileSync(ext, `defineTool({ name: 'deep.run', exposeAsTool: true, inputSchema: ${JSON.stringify(schema)}, handler: ({ args: { n, only } }: { args: { n: number; only?: string[] } }) => { ${body} } });\n`);
  return ext;
}
