// Sessions (serialised within, concurrent across, idle TTL, explicit close, reclaiming guests) and scripts
// (run_script over MCP, kiln run).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { buildFixture, call, kiln, serveArtifact, tempDir } from './helpers.mjs';

let artifact;
before(async () => {
  artifact = await buildFixture('sessions/sess.ts');
});

const serve = (t, toml) => serveArtifact(t, artifact, toml);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const script = (client, code, extra = {}) => call(client, 'run_script', { code, ...extra }).then((r) => r.json);

test('calls in one session run one at a time; different sessions run concurrently', async (t) => {
  const client = await serve(t);
  const [a, b] = await Promise.all([call(client, 'sess.slow', {}, { session: 's' }), call(client, 'sess.slow', {}, { session: 's' })]);
  const [first, second] = [a.json, b.json].sort((x, y) => x.start - y.start);
  assert.ok(second.start >= first.end, `same session overlapped: ${JSON.stringify([first, second])}`);
  const [c, d] = await Promise.all([call(client, 'sess.slow', {}, { session: 'x' }), call(client, 'sess.slow', {}, { session: 'y' })]);
  assert.ok(Math.abs(c.json.start - d.json.start) < 200, 'different sessions ran in parallel');
});

test('an idle session is closed after its TTL: globals and vars go', async (t) => {
  const client = await serve(t, '[sessions]\nidleTtlMs = 300\n');
  await call(client, 'sess.set', { v: 'remember' });
  assert.deepEqual((await call(client, 'sess.state')).json, { globals: 1, vars: 'remember' });
  assert.deepEqual((await call(client, 'sess.state')).json, { globals: 2, vars: 'remember' }, 'kept while in use');
  await sleep(900);
  assert.deepEqual((await call(client, 'sess.state')).json, { globals: 1, vars: null }, 'a new session after the TTL');
});

test('kiln_close_session ends a session now', async (t) => {
  const client = await serve(t);
  await call(client, 'sess.set', { v: 'a' }, { session: 'doomed' });
  await call(client, 'sess.set', { v: 'b' }, { session: 'kept' });
  assert.deepEqual((await call(client, 'kiln_close_session', { session: 'doomed' })).json, { session: 'doomed', closed: true });
  assert.equal((await call(client, 'sess.state', {}, { session: 'doomed' })).json.vars, null);
  assert.equal((await call(client, 'sess.state', {}, { session: 'kept' })).json.vars, 'b');
});

test('past maxInstances the server frees idle sessions’ guests; their vars stay', async (t) => {
  const client = await serve(t, '[sessions]\nmaxInstances = 1\n');
  await call(client, 'sess.set', { v: 'A' }, { session: 'a' });
  assert.equal((await call(client, 'sess.state', {}, { session: 'a' })).json.globals, 1);
  assert.equal((await call(client, 'sess.state', {}, { session: 'b' })).json.globals, 1);
  assert.deepEqual((await call(client, 'sess.state', {}, { session: 'a' })).json, { globals: 1, vars: 'A' }, "a's guest was reclaimed; its vars were not");
});

test('run_script: last expression (awaited), plugins, vars and globals shared in the session, logs', async (t) => {
  const client = await serve(t);
  assert.deepEqual(await script(client, '1 + 2'), { status: 'ok', result: 3, logs: [], error: null });
  const r = await script(client, `
    const n: number = 21;
    console.log('doubling', n);
    vars.set('k', 'from-script');
    globalThis.kept = 'still here';
    plugins['sess.double']({ n }).then((d) => ({ d, host: kiln.host }))`);
  assert.equal(r.status, 'ok', JSON.stringify(r.error));
  assert.deepEqual(r.result, { d: 42, host: 'script' });
  assert.deepEqual(r.logs, [{ level: 'info', message: 'doubling 21' }]);
  // vars are per (session, extension file); a script is its own store: it calls tools, it does not read theirs.
  assert.equal((await call(client, 'sess.state')).json.vars, null, 'a tool does not see the vars a script set');
  assert.equal((await script(client, "vars.get('k')")).result, 'from-script', 'a script keeps its own vars between scripts');
  assert.equal((await script(client, 'globalThis.kept')).result, 'still here', 'globals persist between scripts of a session');
  assert.equal((await script(client, 'typeof globalThis.kept', { session: 'other' })).result, 'undefined');
});

test('run_script always succeeds at the protocol level; errors, timeouts and missing capabilities are in the result', async (t) => {
  const client = await serve(t);
  const thrown = await script(client, 'const a = 1;\nfunction boom() {\n  throw new RangeError("no " + a);\n}\nboom();');
  assert.equal(thrown.status, 'error');
  assert.deepEqual([thrown.error.name, thrown.error.message], ['RangeError', 'no 1']);
  assert.match(thrown.error.stack, /at boom \(script:3:\d+\)\n\s+at <eval> \(script:5:1\)/);
  assert.doesNotMatch(thrown.error.stack, /<null>/);
  const syntax = await script(client, 'let = ;');
  assert.equal(syntax.status, 'error');
  assert.equal(syntax.error.name, 'SyntaxError');
  const spin = await script(client, 'for (;;) globalThis.x = (globalThis.x ?? 0) + 1', { timeoutMs: 300 });
  assert.equal(spin.status, 'error');
  assert.match(`${spin.error.name}: ${spin.error.message}`, /^TimeoutError: the script did not finish within its timeoutMs \(300 ms\)/);
  const net = await script(client, 'fetch("http://127.0.0.1:9/")');
  assert.equal(net.status, 'error');
  assert.match(net.error.message, /tool "run_script" declares no allow\.net/);
  const cmd = await script(client, "plugins['no.such.tool']({})");
  assert.match(cmd.error.message, /no tool named "no.such.tool" is loaded/);
  const bad = await call(client, 'run_script', { code: 42 });
  assert.equal(bad.isError, false);
  assert.equal(bad.json.status, 'error');
});

test('kiln run prints the script value, or fails with the error and its line', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'ok.ts'), "const x: number = 2;\nplugins['sess.double']({ n: x })\n");
  writeFileSync(join(dir, 'bad.ts'), 'const y = 1;\nnull.boom;\n');
  const ok = await kiln(['run', join(dir, 'ok.ts'), artifact]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout.trim(), '4');
  const bad = await kiln(['run', join(dir, 'bad.ts')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /error: TypeError: cannot read property 'boom' of null\n\s+at <eval> \(bad\.ts:2:\d+\)/);
});

test('vars never cross between sessions, though sessions share worker threads', async (t) => {
  const client = await serve(t);
  const names = Array.from({ length: 6 }, (_, i) => `v${i}`);
  await Promise.all(names.map((s) => call(client, 'sess.set', { v: `value-of-${s}` }, { session: s })));
  const seen = await Promise.all(names.map((s) => call(client, 'sess.state', {}, { session: s })));
  assert.deepEqual(seen.map((r) => r.json.vars), names.map((s) => `value-of-${s}`));
  assert.equal((await call(client, 'sess.state', {}, { session: 'fresh' })).json.vars, null);
});
