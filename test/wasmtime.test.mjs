// Portability: a kiln artifact is a standard WebAssembly component. A second host, written in Python on
// wasmtime (test/wasmtime/host.py), loads the artifacts this test builds and gets the manifest and the
// results the Node host gets; every artifact, and the engine, passes `wasm-tools validate`.
// build/py (wasmtime and wasm-tools, pinned and hash-checked) comes from scripts/setup-python.sh.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { concat, customSection } from '../dist/host/engine/wasm-binary.js';
import { fixtures, kiln, root } from './helpers.mjs';
import { checkMoreShapes, nodeOutcomes, splitOutcomes, writeDeepExtension } from './stack-shapes.mjs';

const python = join(root, 'build/py/bin/python');
const wasmTools = join(root, 'build/py/bin/wasm-tools');
const hostPy = join(root, 'test/wasmtime/host.py');

function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { cwd: root, maxBuffer: 1 << 24, timeout: opts.timeout ?? 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }));
    child.stdin.end();
  });
}

/** The Python host on one call: its JSON line, exit code and stderr. */
async function pyCall(artifact, tool, args) {
  const r = await run(python, [hostPy, artifact, tool, JSON.stringify(args)]);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 1, `host.py prints exactly one line on stdout; got:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return { ...r, out: JSON.parse(lines[0]) };
}

/** The Node host on the same call: `kiln run` with a one-line script that calls the tool. */
async function nodeCall(dir, artifact, tool, args) {
  const script = join(dir, `call-${tool}.js`);
  writeFileSync(script, `plugins[${JSON.stringify(tool)}](${JSON.stringify(args)})\n`);
  const r = await kiln(['run', script, artifact]);
  if (r.code === 0) return { result: JSON.parse(r.stdout) };
  const m = /^error: (.*)/m.exec(r.stderr);
  assert.ok(m, `kiln run failed without an error line: ${r.stderr}`);
  return { error: m[1] };
}

/** The manifest the Node host reads from an artifact. */
const manifests = new Map();
const nodeManifest = (artifact) => {
  if (!manifests.has(artifact)) manifests.set(artifact, inspect(artifact));
  return manifests.get(artifact);
};
async function inspect(artifact) {
  const r = await kiln(['inspect', '--json', artifact]);
  assert.equal(r.code, 0, r.stderr);
  const { file: _f, sha256: _s, ...manifest } = JSON.parse(r.stdout);
  return manifest;
}

let dir;
after(() => dir && rmSync(dir, { recursive: true, force: true }));
const built = {}; // name -> artifact path
before(async () => {
  const setup = await run('bash', [join(root, 'scripts/setup-python.sh')], { timeout: 300_000 });
  assert.equal(setup.code, 0, `scripts/setup-python.sh failed:\n${setup.stderr}`);
  dir = mkdtempSync(join(tmpdir(), 'kiln-wasmtime-'));
  const sources = [join(root, 'extensions/hello.ts'), join(root, 'extensions/notes.ts'), join(fixtures, 'wasmtime/portable.ts')];
  const r = await kiln(['build', ...sources, '--out-dir', dir]);
  assert.equal(r.code, 0, r.stderr);
  for (const name of ['hello', 'notes', 'portable']) built[name] = join(dir, `${name}.wasm`);
});

/** Both hosts on the same call: the same manifest, the tools the guest registers match it, the same result. */
async function sameOnBothHosts(artifact, tool, args) {
  const [py, node, manifest] = await Promise.all([pyCall(artifact, tool, args), nodeCall(dir, artifact, tool, args), nodeManifest(artifact)]);
  assert.equal(py.out.error, undefined, `host.py failed: ${py.out.error}\n${py.stderr}`);
  assert.equal(py.code, 0);
  assert.deepEqual(py.out.manifest, manifest);
  // What the guest's top level registered in wasmtime is what was recorded at build time (allow is normalised there).
  const fields = ({ name, description, inputSchema, exposeAsTool, timeoutMs }) => JSON.parse(JSON.stringify({ name, description, inputSchema, exposeAsTool, timeoutMs }));
  assert.deepEqual(py.out.loaded.tools.map(fields), manifest.tools.map(fields));
  assert.deepEqual(node, { result: py.out.result });
  return py.out.result;
}

test('hello.ts: wasmtime gets the manifest and results the Node host gets', async () => {
  assert.deepEqual(await sameOnBothHosts(built.hello, 'hello.greet', { name: 'wasmtime' }), { message: 'Hello, wasmtime!', host: 'script' });
  assert.equal(await sameOnBothHosts(built.hello, 'hello.noop', {}), null);
});

test('notes.ts: a plugins-only helper tool gives the same result on wasmtime', async () => {
  assert.equal(await sameOnBothHosts(built.notes, 'notes.slug', { text: 'Portable: Wasmtime & Node!' }), 'portable-wasmtime-node');
});

test('timers, vars and URL parsing behave the same on wasmtime (runtime.sleep, vars.*, runtime.parse-url)', async () => {
  const result = await sameOnBothHosts(built.portable, 'portable.timers', { label: 'py' });
  assert.deepEqual(result.order, ['fast', 'last']);
  assert.deepEqual(result.vars, [['count', '1'], ['label', 'py']]);
  assert.equal(result.url.href, 'https://user@example.com/a/c/d?q=1#frag');
});

test('a capability the Python host does not grant fails the call with a CapabilityError, not the guest', async () => {
  const uncaught = await pyCall(built.portable, 'portable.command', {});
  assert.equal(uncaught.code, 1);
  assert.equal(uncaught.out.error.split('\n')[0], 'CapabilityError: commands.run is not available in this host');
  assert.ok(uncaught.out.manifest, 'the artifact loaded');
  const caught = await pyCall(built.portable, 'portable.commandCaught', {});
  assert.equal(caught.code, 0, caught.out.error);
  assert.deepEqual(caught.out.result, { refused: 'CapabilityError: commands.run is not available in this host', after: 'still alive' });
});

test('the Python host enforces the limits the Node host does: a deadline (runtime.interrupted) and the heap limit', async () => {
  const started = Date.now();
  const [py, node] = await Promise.all([pyCall(built.portable, 'portable.spin', {}), nodeCall(dir, built.portable, 'portable.spin', {})]);
  assert.match(py.out.error, /^TimeoutError: /);
  assert.match(node.error, /^TimeoutError: /);
  assert.ok(Date.now() - started < 20_000, 'stopped near its 300 ms deadline, not at the 30 s default');
  const [pyHog, nodeHog] = await Promise.all([pyCall(built.portable, 'portable.hog', {}), nodeCall(dir, built.portable, 'portable.hog', {})]);
  assert.match(pyHog.out.error, /^MemoryLimitError: tool "portable.hog" ran out of its memory limit/);
  assert.match(nodeHog.error, /^MemoryLimitError: /);
});

test('a lone surrogate crosses to either host well-formed: the same error text, one U+FFFD each, and a result keeps it', async () => {
  assert.deepEqual(await sameOnBothHosts(built.portable, 'portable.lone', { fail: false }), { kept: 'a\uD800b', raw: 'c\uFFFDd' });
  const [py, node] = await Promise.all([pyCall(built.portable, 'portable.lone', { fail: true }), nodeCall(dir, built.portable, 'portable.lone', { fail: true })]);
  assert.equal(py.out.error.split('\n')[0], 'Error: lone \uFFFD and \uFFFD error', py.stderr);
  assert.equal(node.error, 'Error: lone \uFFFD and \uFFFD error');
});

test('deep recursion on wasmtime is a catchable RangeError too, with the stack limit docs/embedding.md gives', async () => {
  const artifact = join(dir, 'deep.wasm');
  const r = await kiln(['build', writeDeepExtension(dir), '-o', artifact]);
  assert.equal(r.code, 0, r.stderr);
  built.deep = artifact;
  for (const n of [100_000, 150]) {
    const py = await pyCall(artifact, 'deep.run', { n });
    assert.equal(py.out.error, undefined, `host.py failed: ${py.out.error}\n${py.stderr}`);
    const { compared, more } = splitOutcomes(py.out.result);
    assert.deepEqual(compared, nodeOutcomes(n), `${n} levels`);
    checkMoreShapes(assert, more, n);
  }
});

test('wasm-tools validates the engine and every artifact this test built', async () => {
  const files = [join(root, 'build/engine/engine.wasm'), ...Object.values(built)];
  assert.ok(files.length >= 4, `artifacts built: ${Object.keys(built).join(', ')}`);
  for (const f of files) {
    const r = await run(wasmTools, ['validate', '--features', 'all', f]);
    assert.equal(r.code, 0, `${f}: ${r.stderr}`);
  }
});
