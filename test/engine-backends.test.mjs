// The two engine backends (host/engine/backends.ts): which one runs, what each stops on its own, and that
// the wasmtime addon answers nothing itself. The rest of the suite runs on the default backend (wasmtime
// where its addon is built); test/engine-v8.test.mjs runs a chosen part of it on V8.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArtifact } from '../dist/host/extensions/artifact.js';
import { Builder } from '../dist/host/build/artifact.js';
import { Engine } from '../dist/host/engine/engine.js';
import { GuestInstance } from '../dist/host/engine/instance.js';
import { ADDON_FILE } from '../dist/host/engine/wasmtime.js';
import { call, kiln, mcp, root, tempDir, waitUntil } from './helpers.mjs';

const engineDir = join(root, 'build/engine');
const haveAddon = existsSync(join(engineDir, ADDON_FILE));
const PATIENT_MS = 600_000;

/** A guest of `source` (one file), loaded, on `engine`; `host` overrides the test host's parts. */
async function guestOf(t, engine, source, host = {}, config = {}) {
  const dir = tempDir(t);
  const file = join(dir, 'x.js');
  writeFileSync(file, source);
  const artifact = await openArtifact(file, (await new Builder(engine).build(file)).bytes, engine);
  const logs = [];
  const guest = await GuestInstance.create(engine, artifact.image, {
    op: async () => { throw new Error('no operations in this test'); },
    vars: { get: () => undefined, set() {}, delete: () => false, keys: () => [] },
    log: (level, message) => logs.push(`${level}: ${message}`),
    ...host,
  });
  guest.load({ host: 'mcp', memoryLimit: 64 << 20, ...config });
  return { guest, logs };
}

test('the default backend is wasmtime where the addon is built, and KILN_ENGINE=v8 chooses V8', { skip: !haveAddon && 'no wasmtime addon here (cargo missing)' }, async () => {
  const saved = process.env.KILN_ENGINE;
  try {
    delete process.env.KILN_ENGINE;
    const w = await Engine.load();
    assert.equal(w.backend, 'wasmtime');
    assert.equal(w.modules.length, 0, 'on wasmtime V8 compiles none of the engine');
    assert.match(w.wasmtime.precompiledFile, /engine\.[0-9a-f]{16}\.wasmtime-\d+\.\d+\.\d+\.linux-x64\.code\.cwasm$/);
    process.env.KILN_ENGINE = 'v8';
    const v = await Engine.load();
    assert.equal(v.backend, 'v8');
    assert.ok(v.modules.length > 0);
    process.env.KILN_ENGINE = 'spidermonkey';
    await assert.rejects(Engine.load(), /KILN_ENGINE="spidermonkey" is not an engine backend: use one of wasmtime, v8/);
  } finally {
    if (saved === undefined) delete process.env.KILN_ENGINE;
    else process.env.KILN_ENGINE = saved;
  }
});

test('a server says which backend runs its guests, at start and in kiln_extensions; [engine] backend = "v8" is obeyed', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const env = { KILN_ENGINE: '' };
  const w = await mcp(t, ['extensions/hello.ts'], { env });
  // stderr and stdout are separate pipes: the start line may arrive after the first answer.
  assert.ok(await waitUntil(() => /guests run on/.test(w.stderr())));
  assert.match(w.stderr(), /guests run on wasmtime \d+\.\d+\.\d+/);
  const report = (await call(w.client, 'kiln_extensions')).json;
  assert.equal(report.engine.backend, 'wasmtime');
  assert.match(report.engine.wasmtime, /^\d+\.\d+\.\d+$/);
  assert.equal((await call(w.client, 'hello.greet', { name: 'w' })).json.message, 'Hello, w!');

  const dir = tempDir(t);
  writeFileSync(join(dir, 'kiln.toml'), `extensions = ["${join(root, 'extensions/hello.ts')}"]\n[engine]\nbackend = "v8"\n`);
  const v = await mcp(t, ['--config', join(dir, 'kiln.toml')], { env });
  assert.ok(await waitUntil(() => /guests run on/.test(v.stderr())));
  assert.match(v.stderr(), /guests run on V8/);
  assert.equal((await call(v.client, 'kiln_extensions')).json.engine.backend, 'v8');
  assert.equal((await call(v.client, 'hello.greet', { name: 'v' })).json.message, 'Hello, v!');

  writeFileSync(join(dir, 'bad.toml'), `[engine]\nbackend = "wasm3"\n`);
  writeFileSync(join(dir, 'nothing.js'), '1');
  const bad = await kiln(['run', join(dir, 'nothing.js'), '--config', join(dir, 'bad.toml')], { env: { KILN_ENGINE: '' } });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /\[engine\] backend must be "wasmtime" or "v8" \(found "wasm3"\)/);
});

test('without the addon, the default falls back to V8 and says why; asking for wasmtime then is an error naming the way out', async (t) => {
  // An engine build directory with everything but the addon (and its precompiled files).
  const dir = tempDir(t);
  for (const f of readdirSync(engineDir)) {
    if (f === '.work' || f.startsWith('kiln-wasmtime.') || f.endsWith('.cwasm')) continue;
    cpSync(join(engineDir, f), join(dir, f), { recursive: true });
  }
  const saved = process.env.KILN_ENGINE;
  try {
    delete process.env.KILN_ENGINE;
    const e = await Engine.load(dir);
    assert.equal(e.backend, 'v8');
    assert.match(e.choice.fallback, /no wasmtime addon for linux-x64/);
    await assert.rejects(Engine.load(dir, undefined, 'wasmtime'), /no wasmtime addon for linux-x64 .*; choose the V8 backend with KILN_ENGINE=v8 or \[engine\] backend = "v8" in kiln\.toml/);
    const s = await kiln(['mcp', '--help'], { env: { KILN_ENGINE_DIR: dir, KILN_ENGINE: 'wasmtime' } });
    assert.equal(s.code, 0, 'a command that runs no guest does not need the backend');
  } finally {
    if (saved === undefined) delete process.env.KILN_ENGINE;
    else process.env.KILN_ENGINE = saved;
  }
});

test('a damaged or foreign precompiled engine is never used: it is compiled again and the guest runs', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const dir = tempDir(t);
  for (const f of readdirSync(engineDir)) if (f !== '.work') cpSync(join(engineDir, f), join(dir, f), { recursive: true });
  const cwasm = readdirSync(dir).find((f) => f.endsWith('.cwasm'));
  assert.ok(cwasm, 'setup precompiled the engine');
  const file = join(dir, cwasm);
  const good = readFileSync(file);
  // Truncated, then flipped past the header, then another wasm module entirely.
  for (const damage of [good.subarray(0, good.length >> 1), Buffer.concat([good.subarray(0, 64), Buffer.alloc(good.length - 64, 0xcc)]), readFileSync(join(dir, 'engine.core.wasm'))]) {
    writeFileSync(file, damage);
    const e = await Engine.load(dir, undefined, 'wasmtime');
    assert.equal(e.backend, 'wasmtime');
    const { guest } = await guestOf(t, e, `defineTool({ name: 'x', handler: () => 6 * 7 })`);
    assert.equal(await guest.invoke('x', {}, PATIENT_MS), 42);
    // What was used is an intact compile: this file compiled again, or the one in kiln's cache directory.
    const used = e.wasmtime.precompiledFile;
    assert.equal(createHash('sha256').update(readFileSync(used)).digest('hex'), readFileSync(`${used}.sha256`, 'utf8').trim());
    if (used === file) assert.equal(statSync(file).size, good.length, 'the file was compiled again');
  }
});

test('wasmtime stops a run at its deadline even inside one native call the interrupt never reaches (a huge sort)', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const engine = await Engine.load(undefined, undefined, 'wasmtime');
  // One Float64Array sort of 8M elements with a comparator-free native sort: seconds of C, no JS op boundary.
  const { guest } = await guestOf(t, engine, `defineTool({ name: 'sort', handler: () => {
    const a = new Float64Array(8_000_000);
    for (let i = 0; i < a.length; i++) a[i] = Math.sin(i) * 1e9;
    for (let k = 0; k < 20; k++) { a.reverse(); a.sort(); }
    return a[0];
  } })`);
  await assert.rejects(guest.invoke('sort', {}, 50), (e) => {
    assert.equal(e.name, 'TimeoutError');
    assert.match(e.message, /ran past its time limit and was stopped|did not finish within/);
    return true;
  });
  assert.equal(guest.alive, false, 'the stopped instance is discarded');
});

test('wasmtime holds linear memory to the guest\'s limit: growth past it is refused and reported as the memory limit', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const engine = await Engine.load(undefined, undefined, 'wasmtime');
  const { guest } = await guestOf(t, engine, `defineTool({ name: 'grow', handler: () => {
    const keep = [];
    for (let i = 0; i < 4096; i++) keep.push(new Uint8Array(1 << 20)); // 4 GiB asked for, 64 MiB allowed
    return keep.length;
  } })`, {}, { memoryLimit: 64 << 20 });
  await assert.rejects(guest.invoke('grow', {}, PATIENT_MS), (e) => e.name === 'MemoryLimitError');
  assert.ok(guest['native'].memoryBytes() <= (64 << 20) + (32 << 20), `linear memory stayed under the limit + slack (${guest['native'].memoryBytes()} bytes)`);
});

test('the addon answers no import itself: an import the host does not give fails instantiation by name, and a host throw reaches the host', { skip: !haveAddon && 'no wasmtime addon here' }, async () => {
  const engine = await Engine.load(undefined, undefined, 'wasmtime');
  assert.throws(() => engine.wasmtime.instantiate({}), /the host gives no function for the import kiln:extension\/commands#run/);
});

test('a host function that throws crashes the guest with the host\'s own error on both backends; a result-typed import\'s payload is the guest\'s error', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const seen = {};
  for (const backend of ['wasmtime', 'v8']) {
    const engine = await Engine.load(undefined, undefined, backend);
    const vars = { get: () => { throw new Error('the host says no'); }, set: () => { throw new Error('full'); }, delete: () => false, keys: () => [] };
    const { guest } = await guestOf(t, engine, `defineTool({ name: 'get', handler: () => vars.get('k') });
      defineTool({ name: 'set', handler: () => { try { vars.set('k', 'v'); } catch (e) { return e.name + ': ' + e.message; } } })`, { vars });
    seen[backend] = { set: await guest.invoke('set', {}, PATIENT_MS) };
    await assert.rejects(guest.invoke('get', {}, PATIENT_MS), (e) => {
      seen[backend].get = `${e.name}: ${e.message}`;
      return true;
    });
  }
  assert.deepEqual(seen.wasmtime, seen.v8);
  assert.match(seen.wasmtime.get, /^GuestCrashError: the guest crashed \(the host says no\)/);
  assert.match(seen.wasmtime.set, /full/);
});

test('the same guest code gives the same answers on wasmtime and on V8', { skip: !haveAddon && 'no wasmtime addon here' }, async (t) => {
  const source = `defineTool({ name: 'mix', handler: async () => {
    const out = {};
    out.json = JSON.stringify({ a: [1, 2.5, -0, 1e21], s: 'é\\u{1F600}' });
    out.regex = 'a1b22c333'.replace(/\\d+/g, (m) => m.length);
    out.date = new Date(Date.UTC(2020, 1, 29, 12)).toISOString();
    out.intl = new Intl.NumberFormat('de-DE').format(1234567.891);
    out.bytes = Array.from(new TextEncoder().encode('héllo'));
    out.digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode('kiln'))));
    out.url = new URL('../x?y=1#z', 'https://a.example/b/c').href;
    out.big = (2n ** 100n).toString();
    let depth = 0; const f = () => { depth++; f(); }; try { f(); } catch (e) { out.recursion = e.name; }
    out.timer = await new Promise((r) => setTimeout(() => r('fired'), 1));
    return out;
  } })`;
  const answers = {};
  for (const backend of ['wasmtime', 'v8']) {
    const engine = await Engine.load(undefined, undefined, backend);
    const { guest } = await guestOf(t, engine, source);
    answers[backend] = await guest.invoke('mix', {}, PATIENT_MS);
  }
  assert.deepEqual(answers.wasmtime, answers.v8);
  assert.equal(answers.wasmtime.recursion, 'RangeError');
  assert.equal(answers.wasmtime.timer, 'fired');
});
