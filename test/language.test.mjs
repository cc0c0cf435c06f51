// The language level: each ES2021–ES2025 feature, and two later proposals quickjs-ng ships, runs in a guest and
// in Node on the same code, and both are compared with what the specification says. Node 20 lacks some of the
// newest features: there the guest is compared with the specification alone (the test says which).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { kiln, tempDir } from './helpers.mjs';

// [name, edition (or 'proposal'), code (an async function body returning a JSON-serialisable value), expected,
// what Node gives where a sandbox must differ (optional)]
const FEATURES = [
  ['String.prototype.replaceAll', 2021, `return 'a-b-c'.replaceAll('-', '+');`, 'a+b+c'],
  ['Promise.any / AggregateError', 2021, `try { await Promise.any([Promise.reject(1)]); } catch (e) { return [e.constructor.name, e.errors]; }`, ['AggregateError', [1]]],
  ['logical assignment', 2021, `let a = null, b = 0, c = 1; a ??= 1; b ||= 2; c &&= 3; return [a, b, c];`, [1, 2, 3]],
  ['numeric separators', 2021, `return 1_000_000;`, 1000000],
  ['WeakRef / FinalizationRegistry', 2021, `const o = {}; return [new WeakRef(o).deref() === o, typeof FinalizationRegistry];`, [true, 'function']],
  // KeepDuringJob: a target nothing else holds stays alive until the job ends, for deref() in the same job.
  ['WeakRef keeps its target during the job', 2021, `const w = new WeakRef({ a: 1 }); const d = (() => new WeakRef({ b: 2 }))().deref(); return [w.deref()?.a, d?.b, new WeakRef({ c: 3 }).deref()?.c];`, [1, 2, 3]],
  ['Atomics on ArrayBuffer and SharedArrayBuffer', 2017, `const i = new Int32Array(new ArrayBuffer(16)), s = new Int32Array(new SharedArrayBuffer(8)), g = new BigInt64Array(new SharedArrayBuffer(8));
    const r = [Atomics.add(i, 0, 5), Atomics.load(i, 0), Atomics.store(i, 1, 7), Atomics.compareExchange(i, 1, 7, 9), Atomics.exchange(i, 2, 3), Atomics.sub(i, 0, 2), Atomics.and(i, 0, 1), Atomics.or(i, 0, 6), Atomics.xor(i, 0, 1), [...i], Atomics.add(s, 0, 2), Atomics.load(s, 0), Atomics.notify(s, 0, 1), String(Atomics.add(g, 0, 5n) + Atomics.load(g, 0)), Object.prototype.toString.call(Atomics)];
    for (const f of [() => Atomics.load(i, 4), () => Atomics.add(new Float64Array(1), 0, 1), () => Atomics.wait(i, 0, 0, 0)]) { try { r.push(f()); } catch (e) { r.push(e.name); } }
    return r;`, [0, 5, 7, 7, 0, 5, 3, 1, 7, [6, 9, 3, 0], 0, 2, 0, '5', '[object Atomics]', 'RangeError', 'TypeError', 'TypeError']],
  // A guest is an agent that cannot suspend (as a browser's main thread): Atomics.wait throws before it compares
  // or waits, so no call blocks its instance. Node's main thread may block: there it answers.
  ['Atomics.wait on a SharedArrayBuffer', 2017, `const s = new Int32Array(new SharedArrayBuffer(8)); const r = [];
    for (const f of [() => Atomics.wait(s, 0, 1, 10), () => Atomics.wait(s, 0, 0, 0)]) { try { r.push(f()); } catch (e) { r.push(e.name); } }
    return r;`, ['TypeError', 'TypeError'], ['not-equal', 'timed-out']],
  ['class fields and private methods', 2022, `class A { x = 1; #y = 2; #m() { return this.#y; } get() { return this.x + this.#m(); } } return new A().get();`, 3],
  ['class static blocks', 2022, `class A { static s; static { A.s = 'set'; } } return A.s;`, 'set'],
  ['#x in obj', 2022, `class A { #p; static has(o) { return #p in o; } } return [A.has(new A()), A.has({})];`, [true, false]],
  ['Array.prototype.at', 2022, `return [[1, 2, 3].at(-1), 'abc'.at(-2)];`, [3, 'b']],
  ['Object.hasOwn', 2022, `return [Object.hasOwn({ a: 1 }, 'a'), Object.hasOwn({}, 'toString')];`, [true, false]],
  ['Error cause', 2022, `return new Error('m', { cause: 'c' }).cause;`, 'c'],
  ['RegExp d flag (indices)', 2022, `return /a(?<x>b)/d.exec('zab').indices.groups.x;`, [2, 3]],
  ['top-level await in a script', 2022, `return await Promise.resolve(42);`, 42],
  ['findLast / findLastIndex', 2023, `return [[1, 2, 3, 4].findLast((x) => x % 2), [1, 2, 3, 4].findLastIndex((x) => x > 9)];`, [3, -1]],
  ['change array by copy', 2023, `const a = [3, 1, 2]; return [a.toSorted(), a.toReversed(), a.toSpliced(0, 1), a.with(0, 9), a];`, [[1, 2, 3], [2, 1, 3], [1, 2], [9, 1, 2], [3, 1, 2]]],
  ['symbols as WeakMap keys', 2023, `const w = new WeakMap(); const s = Symbol('k'); w.set(s, 1); return w.get(s);`, 1],
  ['Object.groupBy / Map.groupBy', 2024, `return [Object.groupBy([1, 2, 3], (x) => (x % 2 ? 'odd' : 'even')), [...Map.groupBy([1, 2, 3], (x) => x % 2).keys()]];`, [{ odd: [1, 3], even: [2] }, [1, 0]]],
  ['Promise.withResolvers', 2024, `const { promise, resolve } = Promise.withResolvers(); resolve(5); return await promise;`, 5],
  ['RegExp v flag', 2024, `return [/[\\p{L}--[a-z]]/v.test('A'), /[\\p{L}--[a-z]]/v.test('a')];`, [true, false]],
  ['a u-flag class with an escaped dash', 2015, `return new RegExp('[\\\\-]', 'u').test('-');`, true],
  ['String isWellFormed / toWellFormed', 2024, `return ['a\\uD800'.isWellFormed(), 'a\\uD800'.toWellFormed()];`, [false, 'a\uFFFD']],
  ['resizable ArrayBuffer', 2024, `const b = new ArrayBuffer(2, { maxByteLength: 8 }); b.resize(6); return [b.byteLength, b.resizable];`, [6, true]],
  ['Set methods', 2025, `const a = new Set([1, 2, 3]), b = new Set([2, 3, 4]); return [[...a.union(b)], [...a.intersection(b)], [...a.difference(b)], a.isSubsetOf(new Set([1, 2, 3, 4]))];`, [[1, 2, 3, 4], [2, 3], [1], true]],
  ['iterator helpers', 2025, `return [1, 2, 3, 4].values().filter((x) => x % 2 === 0).map((x) => x * 10).toArray();`, [20, 40]],
  ['Promise.try', 2025, `return await Promise.try(() => 7);`, 7],
  // new RegExp: where Node lacks the syntax, a literal would fail the whole script at parse time.
  ['duplicate named capture groups', 2025, `return new RegExp('(?<y>\\\\d{4})-x|x-(?<y>\\\\d{4})').exec('x-2025').groups.y;`, '2025'],
  ['RegExp modifiers', 2025, `return [new RegExp('(?i:a)b').test('Ab'), new RegExp('(?i:a)b').test('AB')];`, [true, false]],
  ['Float16Array / Math.f16round', 2025, `return [Math.f16round(1.337), new Float16Array([1.5])[0]];`, [1.3369140625, 1.5]],
  ['RegExp.escape', 2025, `return RegExp.escape('a.b');`, '\\x61\\.b'],
  // Past ES2025: proposals quickjs-ng ships and Node 20 lacks. They are the language, not the web platform, so
  // they are held here (test/web-platform.test.mjs compares only web APIs with Node).
  ['Array.fromAsync', 'proposal', `return await Array.fromAsync([1, Promise.resolve(2)], async (x) => x * 10);`, [10, 20]],
  ['JSON.rawJSON / JSON.isRawJSON', 'proposal', `const r = JSON.rawJSON('12345678901234567890'); return [JSON.stringify({ n: r }), JSON.isRawJSON(r), JSON.parse('[1.0]', (k, v, ctx) => (k === '0' ? ctx.source : v))];`, ['{"n":12345678901234567890}', true, ['1.0']]],
  ['toFixed / toPrecision rounding', 2015, `return [(2.5).toFixed(0), (1.005).toFixed(2), (1.45).toFixed(1), (123.456).toPrecision(4), (0.000001234).toPrecision(2)];`, ['3', '1.00', '1.4', '123.5', '0.0000012']],
  ['stack overflow is a RangeError', 2015, `const f = () => f(); try { f(); } catch (e) { return e instanceof RangeError; }`, true],
];

/** One script that runs every case and returns {name: {value} | {error}}; the same text runs in Node. */
function script() {
  const cases = FEATURES.map(([name, , code]) => `[${JSON.stringify(name)}, async () => { ${code} }]`).join(',\n');
  return `const cases = [${cases}];\nconst out = {};\nfor (const [name, fn] of cases) {\n  try { out[name] = { value: await fn() }; } catch (e) { out[name] = { error: String(e) }; }\n}\nout\n`;
}

test(`the ES2021–ES2025 features and later proposals (${FEATURES.length}) behave in a guest as the specification says, and as in Node where Node has them`, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'features.js'), script());
  const r = await kiln(['run', join(dir, 'features.js')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const guest = JSON.parse(r.stdout);
  const node = await new Function(`return (async () => { ${script().replace(/\nout\n$/, '\nreturn out;\n')} })()`)();
  const notInNode = [];
  for (const [name, edition, , expected, inNode = expected] of FEATURES) {
    const label = `${name} (${typeof edition === 'number' ? `ES${edition}` : edition})`;
    assert.deepEqual(guest[name], { value: expected }, `${label} in the guest`);
    if ('error' in node[name]) notInNode.push(label);
    else assert.deepEqual(node[name], { value: inNode }, `${label} in Node: the expectation itself is checked`);
  }
  t.diagnostic(`Node ${process.version} lacks: ${notInNode.join(', ') || 'nothing'}`);
});

test('an extension module may await at top level; import.meta.url names its source file', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'tla.ts'), `const config = await Promise.resolve({ greeting: 'hi' });
const helpers = await import('./helper.ts');
defineTool({ name: 'tla.get', exposeAsTool: true, handler: () => ({ greeting: config.greeting, twice: helpers.twice(2), url: import.meta.url }) });`);
  writeFileSync(join(dir, 'helper.ts'), 'export const twice = (n: number) => n * 2;\n');
  writeFileSync(join(dir, 'waits.ts'), `await new Promise((r) => setTimeout(r, 10));\ndefineTool({ name: 'waits.x', handler: () => 1 });`);
  writeFileSync(join(dir, 'fetches.ts'), `const n = 1;\nconst page = await fetch('https://example.com/');\ndefineTool({ name: 'fetches.x', handler: () => n });`);
  writeFileSync(join(dir, 'call.js'), "await plugins['tla.get']({})");
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'tla.ts')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { greeting: 'hi', twice: 4, url: 'file:///tla.ts' });
  // Top-level await on a timer cannot finish while the top level runs: a clear build error, not a hang.
  const w = await kiln(['build', 'waits.ts', 'fetches.ts', '--out-dir', join(dir, 'out')], { cwd: dir });
  assert.equal(w.code, 1);
  assert.match(w.stderr, /error: waits\.ts: .*top-level await may wait on promises and imports, not on timers or host operations/);
  // A host operation the top level awaits: the build names the line that started it, mapped to the source.
  assert.match(w.stderr, /error: fetches\.ts: fetches\.ts:2:20: Error: the extension's top level is still awaiting after it ran: .*\n\s+at <anonymous> \(fetches\.ts:2:20\)/);
});

test('the author\'s code runs as written: the bundler does not drop loops, busy-waits or side effects it thinks are dead', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'sem.ts'), `
defineTool({ name: 'sem.spin', exposeAsTool: true, timeoutMs: 300, handler: () => { for (;;) {} } });
defineTool({ name: 'sem.grow', exposeAsTool: true, timeoutMs: 10000, handler: () => { const a: number[] = []; for (;;) a.push(1); } });
defineTool({ name: 'sem.busy', exposeAsTool: true, handler: () => { const t = Date.now(); while (Date.now() - t < 30) {} return Date.now() - t; } });
defineTool({ name: 'sem.tostr', exposeAsTool: true, handler: () => { let n = 0; const o = { toString() { n++; return 'x'; } }; \`\${o}\`; return n; } });`);
  writeFileSync(join(dir, 'call.js'), `const out = {};
for (const n of ['sem.spin', 'sem.grow', 'sem.busy', 'sem.tostr']) { try { out[n] = await plugins[n]({}); } catch (e) { out[n] = e.name; } }
out`);
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'sem.ts')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out['sem.spin'], 'TimeoutError', 'an empty infinite loop runs until its deadline');
  assert.equal(out['sem.grow'], 'MemoryLimitError', 'an ever-growing array reaches the memory limit');
  assert.ok(out['sem.busy'] >= 30, `a busy-wait waits (${out['sem.busy']} ms)`);
  assert.equal(out['sem.tostr'], 1, 'a template literal calls toString');
});

test('a tool that fails inside plugins[...] shows the callee\'s own frames, mapped to its source', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'callee.ts'), `function deep(n: number): number {\n  if (n > 1) throw new RangeError('callee failed');\n  return deep(n + 1);\n}\ndefineTool({ name: 'callee.fail', handler: () => deep(0) });\n`);
  writeFileSync(join(dir, 'caller.ts'), `defineTool({ name: 'caller.go', allow: { tools: ['callee.fail'] }, handler: async () => {\n  try { return await plugins['callee.fail']({}); } catch (e: any) { return { name: e.name, message: e.message, stack: e.stack }; }\n} });\n`);
  writeFileSync(join(dir, 's.js'), "await plugins['caller.go']({})");
  const r = await kiln(['run', join(dir, 's.js'), join(dir, 'callee.ts'), join(dir, 'caller.ts')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  assert.deepEqual([e.name, e.message], ['RangeError', 'callee failed']);
  assert.match(e.stack, /^\s+at deep \(callee\.ts:2:\d+\)\n\s+at deep \(callee\.ts:3:\d+\)/);
  assert.match(e.stack, /at handler \(callee\.ts:5:\d+\)/);
  assert.doesNotMatch(e.stack, /<null>|bundle:/);
});

// The engine's own fast paths (scripts/engine/quickjs-patches.mjs) against Node on the same script: each
// fixture's cases sit on both sides of what the fast path takes.
// Where quickjs-ng's order of evaluation differs from V8's (it converts a computed key with toString even when
// the object is null, and before the value), the guest's answer is written here: the one quickjs-ng gave
// before kiln's change to indexed stores, so the change is held to the engine's own semantics there.
const QUICKJS_ORDER = {
  'null[key] = 1': ['key:k', 'threw:TypeError'],
  "null[key] = 'x'": ['key:k', 'threw:TypeError'],
  'null[key] = local': ['key:k', 'threw:TypeError'],
  'null[key] = call()': ['value', 'key:k', 'threw:TypeError'],
  'undefined[key] = 1': ['key:k', 'threw:TypeError'],
  "undefined[key] = 'x'": ['key:k', 'threw:TypeError'],
  'undefined[key] = local': ['key:k', 'threw:TypeError'],
  'undefined[key] = call()': ['value', 'key:k', 'threw:TypeError'],
  'obj[key] = call()': ['key:k', 'value', 'ok:{"k":1}'],
  'chained: o[a] = o[b] = 2': ['key:a', 'key:b', 'ok:{"b":2,"a":2}'],
  'compound: o[k] += 1': ['key:k', 'ok:{"k":2}'],
  'logical: o[k] ??= 1': ['key:k', 'ok:{"k":1}'],
  'key changes a variable the value reads': ['ok:{"k":2}'],
  'key changes a var the value reads': ['ok:{"k":2}'],
  'key changes an argument the value reads': ['ok:{"k":2}'],
  'key changes a closure variable the value reads': ['ok:{"k":2}'],
};

for (const [fixture, what, differences = {}] of [
  ['typed-array-elements.js', 'typed-array element reads and stores by index, for every element kind, value and index'],
  ['number-parsing.js', 'text to number (Number, unary +, parseInt, parseFloat, JSON.parse, literals, keys)'],
  ['indexed-stores.js', 'indexed stores obj[key] = value: what runs when, what is thrown, what is stored', QUICKJS_ORDER],
  ['let-assignments.js', 'assignments and increments of let and const variables, in and out of their dead zone'],
]) {
  test(`${what}: a guest gives what Node gives`, async () => {
    const file = fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url));
    const r = await kiln(['run', file]);
    assert.equal(r.code, 0, r.stderr);
    const guest = JSON.parse(r.stdout);
    const node = (0, eval)(readFileSync(file, 'utf8'));
    assert.deepEqual(Object.keys(guest), Object.keys(node));
    for (const [name, expected] of Object.entries(differences)) {
      assert.notDeepEqual(node[name], expected, `${name}: Node agrees now; move it out of the differences`);
      node[name] = expected;
    }
    assert.deepEqual(guest, node);
  });
}

test('a store to an immutable buffer\'s typed array leaves the element as it was', async (t) => {
  // Not in Node 20. The fast path must leave this store to quickjs-ng's own path, which drops it.
  const dir = tempDir(t);
  writeFileSync(join(dir, 'imm.js'), 'const u = new Uint8Array(new ArrayBuffer(4).transferToImmutable()); for (let i = 0; i < 3; i++) u[1] = 5; [u[1], u.length]');
  const imm = await kiln(['run', join(dir, 'imm.js')]);
  assert.equal(imm.code, 0, imm.stderr);
  assert.deepEqual(JSON.parse(imm.stdout), [0, 4]);
});

test('an error thrown by an indexed store points where quickjs-ng pointed before the store was compiled shorter', async (t) => {
  // The value's column for the store, and the following expression's own column after it (found by a
  // differential fuzzer against the previous engine: the first version of the change pointed at the key).
  const dir = tempDir(t);
  writeFileSync(join(dir, 'pos.js'), `const r = [];
function f(o, k, v) { o[k] = v; }
try { f(null, 'p', 1); } catch (e) { r.push(e.stack.split('\\n')[0]); }
function g(o, v) { o[0] = v, null.p; }
try { g({}, 1); } catch (e) { r.push(e.stack.split('\\n')[0]); }
r`);
  const r = await kiln(['run', join(dir, 'pos.js')]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['    at f (pos.js:2:30)', '    at g (pos.js:4:27)']);
});
