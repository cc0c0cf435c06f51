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
  'eval of a class extends chain': `return typeof (0, eval)('(' + 'class extends '.repeat(N) + 'Object' + ' {}'.repeat(N) + ')')`,
  // A caller in the parser must report the nested level's RangeError, not a SyntaxError of its own.
  'eval of nested function declarations': `return (0, eval)('function f(){'.repeat(N) + '}'.repeat(N)) ?? 0`,
  'eval of nested with statements': `return (0, eval)('with ({}) '.repeat(N) + ';') ?? 0`,
};

// Shapes Node cannot be compared on: V8 does them without recursion (a proxy's defineProperty), or Node 20
// lacks them (iterator helpers). Deep, each must be a RangeError the code can catch, never a crash; shallow,
// each runs.
export const MORE_SHAPES = {
  'Object.defineProperty through proxies': [`let p = {}; for (let i = 0; i < N; i++) p = new Proxy(p, {}); Object.defineProperty(p, 'x', { value: 1 }); return 1`, ['RangeError']],
  'a class field defined on a proxy': [`let p = {}; for (let i = 0; i < N; i++) p = new Proxy(p, {}); class B { constructor() { return p; } } class C extends B { f = 1; } new C(); return 1`, ['RangeError']],
  'a chain of iterator helpers': [`let it = [1].values(); for (let i = 0; i < N; i++) it = it.map((x) => x); return [...it].length`, ['RangeError']],
  'a chain of Iterator.concat': [`let it = [1].values(); for (let i = 0; i < N; i++) it = Iterator.concat(it); return it.next().value`, ['RangeError']],
  // Node parses it (a TypeError when run) up to a depth between 3,000 and 10,000.
  'eval of a new chain': [`try { (0, eval)('new '.repeat(N) + 'Object'); } catch (e) { if (!(e instanceof TypeError)) throw e; } return 1`, ['RangeError']],
};

export const run = (body, n) => { try { new Function('N', body)(n); return 'ok'; } catch (e) { return e.name; } };
/** What Node does with every shape at `n` levels. */
export const nodeOutcomes = (n) => Object.fromEntries(Object.entries(SHAPES).map(([name, body]) => [name, run(body, n)]));
/** A guest script (its last expression the result) running every shape, or the ones named in `only`. */
const ALL_BODIES = { ...SHAPES, ...Object.fromEntries(Object.entries(MORE_SHAPES).map(([name, [body]]) => [name, body])) };
export const guestScript = (n, only = 'undefined') => `const shapes = ${JSON.stringify(ALL_BODIES)};\nconst out = {};\nconst pick = ${only};\n` +
  `for (const [name, body] of Object.entries(shapes)) { if (pick && !pick.includes(name)) continue; try { new Function('N', body)(${n}); out[name] = 'ok'; } catch (e) { out[name] = e.name; } }\nout\n`;

/** Split a guest's outcomes (every shape) into the ones compared with Node and the MORE_SHAPES ones. */
export function splitOutcomes(guest) {
  const compared = {}, more = {};
  for (const [name, outcome] of Object.entries(guest)) (name in MORE_SHAPES ? more : compared)[name] = outcome;
  return { compared, more };
}

/** Check the MORE_SHAPES outcomes at `n` levels: each allowed error deep, 'ok' shallow. */
export function checkMoreShapes(assert, more, n) {
  for (const [name, [, deep]] of Object.entries(MORE_SHAPES)) {
    if (n > 1000) assert.ok(deep.includes(more[name]), `${name} at ${n}: ${more[name]}, expected one of ${deep.join(', ')}`);
    else assert.equal(more[name], 'ok', `${name} at ${n}`);
  }
}

/** An extension with one exposed tool, deep.run({ n, only? }), that runs the shapes in a guest. */
export function writeDeepExtension(dir) {
  const ext = join(dir, 'deep.ts');
  const body = guestScript('n', 'only').replace(/\nout\n$/, '\nreturn out;');
  const schema = { type: 'object', properties: { n: { type: 'integer' }, only: { type: 'array', items: { type: 'string' } } }, required: ['n'] };
  writeFileSync(ext, `defineTool({ name: 'deep.run', exposeAsTool: true, inputSchema: ${JSON.stringify(schema)}, handler: ({ args: { n, only } }: { args: { n: number; only?: string[] } }) => { ${body} } });\n`);
  return ext;
}
