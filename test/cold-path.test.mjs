// What a one-shot `kiln run` loads (required or imported): its own bundled modules (scripts/bundle-cli.mjs) and nothing a script that
// calls an artifact's tool does not use — not the MCP SDK, the bundler, the TypeScript stripper, the schema
// compiler (once its validator is cached), the HTTP client, the process runner, the source-map reader — and no
// ES module at all.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { ADDON_FILE } from '../dist/host/engine/wasmtime.js';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixtures, kiln, kilnBin, root, tempDir } from './helpers.mjs';

const loaded = (args) => new Promise((resolve, reject) => {
  execFile(process.execPath, ['--no-warnings', '--require', join(fixtures, 'trace-requires.cjs'), '--loader', join(fixtures, 'trace-loads.mjs'), kilnBin, ...args], { cwd: root, timeout: 60_000 }, (err, stdout, stderr) => {
    if (err) return reject(new Error(`kiln ${args.join(' ')} failed: ${stderr}`));
    resolve({ stdout, urls: [...stderr.matchAll(/^kiln-test-load (\S+)$/gm)].map((m) => m[1]), esm: [...stderr.matchAll(/^kiln-test-esm (\S+)$/gm)].map((m) => m[1]) });
  });
});

test('kiln run of a script calling an artifact loads the bundled CLI and none of the heavy modules it does not use', async (t) => {
  const bundle = statSync(join(root, 'dist/cli/cli.js'), { throwIfNoEntry: false });
  assert.ok(bundle && bundle.mtimeMs >= statSync(join(root, 'dist/host/cli.js')).mtimeMs,
    'dist/cli/ is missing or older than dist/host/: run `node scripts/bundle-cli.mjs` (npm test runs it)');
  const dir = tempDir(t);
  const artifact = join(dir, 'hello.wasm');
  assert.equal((await kiln(['build', join(root, 'extensions/hello.ts'), '-o', artifact])).code, 0);
  const script = join(dir, 'ping.js');
  writeFileSync(script, "await plugins['hello.greet']({ name: 'cold' })\n");
  await loaded(['run', script, artifact]); // the first run may compile and cache the tool's validator
  const { stdout, urls, esm } = await loaded(['run', script, artifact]);
  assert.match(stdout, /Hello, cold!/);
  assert.ok(urls.some((u) => u.endsWith('/dist/cli/cli.js')), 'the bundled CLI ran');
  // The first ES module a process imports starts Node's ES module loader (~6-10 ms): the engine's backend is
  // required (wasmtime's addon, or jco's CommonJS bindings on V8), and nothing on this path is an ES module.
  if (existsSync(join(root, 'build/engine', ADDON_FILE)) && process.env.KILN_ENGINE !== 'v8') {
    assert.ok(urls.some((u) => u.endsWith(`/build/engine/${ADDON_FILE}`)), 'the wasmtime addon was required');
    assert.ok(!urls.some((u) => u.endsWith('/bindings/engine.cjs')), 'on wasmtime jco\'s bindings are not loaded');
  } else {
    assert.ok(urls.some((u) => u.endsWith('/bindings/engine.cjs')), 'the engine\'s CommonJS bindings were required');
  }
  assert.deepEqual(esm, [], 'no ES module was loaded');
  assert.ok(!urls.some((u) => u.includes('/dist/host/')), 'no unbundled module ran');
  for (const heavy of ['@modelcontextprotocol', 'rollup', 'sucrase', '/ajv/', 'undici', 'tough-cookie', 'execa', 'trace-mapping', 'smol-toml', 'node:http', 'node:dns']) {
    assert.ok(!urls.some((u) => u.includes(heavy)), `${heavy} was loaded: ${urls.filter((u) => u.includes(heavy)).join(', ')}`);
  }
});

test('kiln run keeps a script\'s bytecode between runs, never serves it for changed text, and recompiles a damaged entry', async (t) => {
  const dir = tempDir(t);
  const env = { KILN_BUILD_CACHE: join(dir, 'cache') };
  const scripts = join(dir, 'cache', 'scripts');
  const script = join(dir, 'calc.js');
  writeFileSync(script, 'const a = 20; a + 1\n');
  const first = await kiln(['run', script], { env });
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout.trim(), '21');
  const kept = readdirSync(scripts).filter((f) => f.endsWith('.qjsbc'));
  assert.equal(kept.length, 1, 'one compiled script kept');
  // The same name with other text: another entry, the new result.
  writeFileSync(script, 'const a = 40; a + 2\n');
  const changed = await kiln(['run', script], { env });
  assert.equal(changed.stdout.trim(), '42', changed.stderr);
  assert.equal(readdirSync(scripts).filter((f) => f.endsWith('.qjsbc')).length, 2);
  // A damaged entry (bytes flipped after the checksum) is compiled again, not run.
  for (const f of readdirSync(scripts)) {
    const bytes = readFileSync(join(scripts, f));
    bytes[bytes.length - 5] ^= 0xff;
    writeFileSync(join(scripts, f), bytes);
  }
  const again = await kiln(['run', script], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout.trim(), '42');
  // The directory keeps at most 256 entries: the least recently written go first.
  for (let i = 0; i < 260; i++) {
    const f = join(scripts, `old-${i}.qjsbc`);
    writeFileSync(f, 'x');
    utimesSync(f, new Date(1e12 + i * 1000), new Date(1e12 + i * 1000));
  }
  writeFileSync(script, 'const a = 50; a + 3\n');
  assert.equal((await kiln(['run', script], { env })).stdout.trim(), '53');
  const left = readdirSync(scripts).filter((f) => f.endsWith('.qjsbc'));
  assert.equal(left.length, 256);
  assert.ok(!left.includes('old-0.qjsbc') && left.includes('old-259.qjsbc'), 'the oldest entries went first');
  // A cache that cannot be written is no cache, not a failure.
  const blocked = join(dir, 'file-not-dir');
  writeFileSync(blocked, '');
  const ro = await kiln(['run', script], { env: { KILN_BUILD_CACHE: blocked } });
  assert.equal(ro.code, 0, ro.stderr);
  assert.equal(ro.stdout.trim(), '53');
});

test('the bundled CLI runs from V8 code caches checked by their sha256, and a damaged one is compiled again, not used', async () => {
  const dir = join(root, 'build/cache/cli-v8'); // bin/code-cache.js: the checkout's cache directory
  const ours = () => readdirSync(dir).filter((f) => /^cli\.[0-9a-f]{32}\.other-f0\.v8$/.test(f));
  const sound = (bytes) => bytes.length > 32 && createHash('sha256').update(bytes.subarray(32)).digest().equals(bytes.subarray(0, 32));
  const first = await kiln(['--version']); // makes the caches it had none for
  assert.equal(first.code, 0, first.stderr);
  assert.equal(ours().length, 1, 'one cache for the entry chunk, named by its source');
  const file = join(dir, ours()[0]);
  assert.ok(sound(readFileSync(file)), 'the cache starts with the sha256 of its bytes');
  // Its recorded sha256 damaged, its bytecode not: only kiln's check refuses it (V8 would take the bytecode).
  const damaged = readFileSync(file);
  damaged[0] ^= 0xff;
  writeFileSync(file, damaged);
  const again = await kiln(['--version']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, first.stdout);
  assert.equal(again.stderr, '');
  // Refused (the chunk was compiled from source) and made again.
  const rewritten = readFileSync(file);
  assert.ok(sound(rewritten) && !rewritten.equals(damaged), 'the damaged cache was replaced by a sound one');
});
