// A boundary fuzzer. An engine whose prelude is attacker code (built with `build-engine.mjs --prelude`: what
// crafted bytecode that broke out of JavaScript's rules could do) holds the raw natives (guest/glue.c) and
// calls every WIT import with random values: forged and stale invocation ids, random body
// and op ids, invalid JSON, huge and binary strings, `finish` twice or for another invocation. And random
// JSON arguments go through tools/call against a set of schemas. Nothing may crash the server, hang a call
// past its deadline, or leave a process behind; the server answers normally afterwards.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { Builder } from '../dist/host/build/artifact.js';
import { Engine, IMAGE_SECTION } from '../dist/host/engine/engine.js';
import { concat, customSection } from '../dist/host/engine/wasm-binary.js';
import { ADDON_FILE } from '../dist/host/engine/wasmtime.js';
import { call, mcp, root, tempDir, waitUntil } from './helpers.mjs';

// The attacker's prelude: the raw natives, and a fuzz loop driven by a seeded generator.
const PRELUDE = `(function (native, configJson) {
  let seed = 1;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const str = () => {
    const n = pick([0, 1, 5, 40, 300, 3000]);
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(Math.floor(rnd() * pick([128, 0x10000])));
    return pick([s, '{', 'null', '{"name":"x","vars":{}}', '{"url":"http://127.0.0.1:1/","method":"GET","headers":[["a","b"]]}', '[]', '"', '{"tool":"fuzz.go","args":{}}']);
  };
  let inv = 0;
  const num = () => pick([inv, inv + 1, 0, 1, -1, 4294967295, 2147483648, NaN, 1e300, Math.floor(rnd() * 100)]);
  const calls = [
    () => native.commandsRun(num(), str()), () => native.commandsStart(num(), str()), () => native.commandsStatus(num(), str()),
    () => native.commandsStop(num(), str()), () => native.browserCall(num(), str()), () => native.pluginsCall(num(), str()),
    () => native.httpFetch(num(), str(), pick([undefined, new ArrayBuffer(0), new ArrayBuffer(1 << 16)])),
    () => native.httpRead(num(), num()), () => native.httpAbort(num()), () => native.httpDiscard(num()),
    () => native.parseUrl(str(), pick([undefined, str(), 'http://x/'])), () => native.sleep(num()), () => native.clearTimer(num()), () => native.drainJobs(),
    () => native.log(num(), str()),
    () => native.varsGet(str()), () => native.varsSet(str(), str()), () => native.varsDelete(str()), () => native.varsKeys(),
    () => native.hrtime(), () => native.memoryUsage(), () => native.progress(num(), pick([str(), '{"progress":1}', '{"progress":1e309}', '[]'])),
    () => native.intl(pick([str(), '["DateTimeFormat",null,null]', '["NumberFormat",["de"],{"style":"currency"}]', '["Segmenter",null,{"granularity":"word"}]', '["Locale",[' + JSON.stringify(str()) + '],null]', '["Intl",null,null]']),
      pick([str(), 'format', 'formatToParts', 'resolvedOptions', 'segment', 'compare', 'supportedValuesOf', 'info', 'constructor', '__proto__']),
      pick([str(), '[]', '[1]', '[{"n":"NaN"}]', '[{"b":"' + '9'.repeat(5000) + '"}]', '["timeZone"]', '[' + JSON.stringify(str()) + ']'])),
    () => native.finish(num(), rnd() < 0.5, pick([str(), '{"ok":1}', 'not json'])),
  ];
  // fuzz.clear: runtime.clear-timer given a timer and an op that is not one (a plugins call, which fails): only
  // the timer is dropped. It reports which of its ops completed once a later timer has fired.
  let clearing = null;
  return {
    manifest() { return JSON.stringify({ tools: [{ name: 'fuzz.go', exposeAsTool: true }, { name: 'fuzz.clear', exposeAsTool: true }], steps: 0 }); },
    invoke(id, name, argsJson) {
      if (name === 'fuzz.clear') {
        const timer = native.sleep(5), other = native.pluginsCall(id, '{"tool":"no.such","args":{}}'), last = native.sleep(60);
        native.clearTimer(other);
        native.clearTimer(timer);
        native.clearTimer(last + 1000); // no such op
        clearing = { id, names: { [timer]: 'cleared timer', [other]: 'plugins call', [last]: 'later timer' }, last, completed: [] };
        return;
      }
      inv = id;
      let n = 0;
      try { seed = JSON.parse(argsJson).seed; n = JSON.parse(argsJson).ops; } catch {}
      let errors = 0;
      for (let i = 0; i < n; i++) { try { pick(calls)(); } catch { errors++; } }
      native.finish(id, true, JSON.stringify({ ops: n, errors }));
    },
    complete(op) {
      if (!clearing) return;
      clearing.completed.push(clearing.names[op] || 'op ' + op);
      if (op === clearing.last) native.finish(clearing.id, true, JSON.stringify(clearing.completed));
    },
    completeBytes() {}, beginScript() {}, endScript() {},
  };
})`;

/** The attacker's engine (built once, then cached like kiln's own) and an artifact for it. */
async function craftedArtifact(dir) {
  const engineDir = join(root, 'build/fuzz-engine');
  writeFileSync(join(dir, 'prelude.js'), PRELUDE);
  execFileSync(process.execPath, [join(root, 'scripts/build-engine.mjs'), '--out', engineDir, '--prelude', join(dir, 'prelude.js')], { stdio: 'ignore' });
  // kiln's wasmtime addon beside it, so the fuzzer runs on the backend the rest of the suite does.
  if (existsSync(join(root, 'build/engine', ADDON_FILE))) copyFileSync(join(root, 'build/engine', ADDON_FILE), join(engineDir, ADDON_FILE));
  const engine = await Engine.load(engineDir);
  const module = await new Builder(engine).compileSource('', 'fuzz.js', true);
  const manifest = {
    format: 1, engine: engine.info.id, source: { name: 'fuzz.js', sha256: '0'.repeat(64) }, steps: 0,
    tools: [{ name: 'fuzz.go', exposeAsTool: true, inputSchema: { type: 'object' }, allow: {} }, { name: 'fuzz.clear', exposeAsTool: true, inputSchema: { type: 'object' }, allow: {} }],
  };
  const file = join(dir, 'fuzz.wasm');
  const enc = new TextEncoder();
  writeFileSync(file, concat([engine.component, customSection('kiln-manifest', enc.encode(JSON.stringify(manifest))), customSection(IMAGE_SECTION, module)]));
  return { file, engineDir };
}

const SEEDS = 60;
const OPS = 400;

test(`random values through every WIT import from a replaced prelude (${SEEDS} × ${OPS} calls)`, async (t) => {
  const dir = tempDir(t);
  const { file, engineDir } = await craftedArtifact(dir);
  const { client, transport, stderr } = await mcp(t, [file], { env: { KILN_ENGINE_DIR: engineDir } });
  const expected = process.env.KILN_ENGINE === 'v8' || !existsSync(join(engineDir, ADDON_FILE)) ? 'V8' : 'wasmtime';
  // stderr and stdout are separate pipes: the start line may arrive after the first answer.
  assert.ok(await waitUntil(() => /guests run on/.test(stderr())), 'the server said which backend runs its guests');
  assert.match(stderr(), new RegExp(`guests run on ${expected}`), 'the fuzzer runs on the backend the suite is testing');
  let results = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = await call(client, 'fuzz.go', { seed, ops: OPS }, { session: `fuzz-${seed % 4}` });
    results++;
    // A result is whatever the fuzz reported (it may finish its own call early with random JSON); an error
    // must be one of kiln's own, never an internal failure of the host.
    if (r.isError) assert.doesNotMatch(r.text, /internal error/, r.text.slice(0, 300));
  }
  t.diagnostic(`${results} fuzz calls answered, ${SEEDS * OPS} random import calls`);
  // runtime.clear-timer drops the guest's own timer and nothing else: the plugins call still completes.
  assert.deepEqual((await call(client, 'fuzz.clear', {}, { session: 'clear' })).json, ['plugins call', 'later timer']);
  assert.deepEqual((await call(client, 'fuzz.go', { seed: 1, ops: 0 }, { session: 'after' })).json, { ops: 0, errors: 0 });
  assert.ok((await client.listTools()).tools.some((x) => x.name === 'fuzz.go'));
  assert.equal(transport.pid > 0 && process.kill(transport.pid, 0), true, 'the server is alive');
});

test('random JSON arguments against a set of schemas: every call answers, the server stays up (600 cases)', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 's.ts'), `
    const schemas: any = {
      num: { type: 'object', properties: { n: { type: 'number', minimum: 0 } }, required: ['n'] },
      nested: { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: { b: { type: 'string', maxLength: 10 } } } } } },
      enum: { type: 'object', properties: { e: { enum: ['x', 'y', 1, null] } }, additionalProperties: false },
      anyOf: { type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } },
      pattern: { type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]+$' } } },
    };
    for (const k of Object.keys(schemas)) defineTool({ name: 's.' + k, exposeAsTool: true, inputSchema: schemas[k], handler: ({ args }: any) => Object.keys(args).length });`);
  const { client } = await mcp(t, [dir]);
  let answered = 0;
  await fc.assert(fc.asyncProperty(fc.constantFrom('num', 'nested', 'enum', 'anyOf', 'pattern'), fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 4 })), async (tool, args) => {
    const r = await call(client, `s.${tool}`, args);
    answered++;
    if (!r.isError) assert.equal(typeof r.json, 'number');
    else assert.match(r.text, /InvalidArgumentsError|do not match/);
  }), { numRuns: 600 });
  t.diagnostic(`${answered} calls answered`);
  assert.equal((await call(client, 's.num', { n: 1 })).json, 1);
});
