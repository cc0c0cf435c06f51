#!/usr/bin/env node
// kiln's speed and size, against the targets and against peers measured in the same run.
// `npm run bench`. Prints a table; nothing here asserts, because these machines are noisy.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { getQuickJS } from 'quickjs-emscripten';
import { openArtifact } from '../dist/host/artifact.js';
import { Engine } from '../dist/host/engine/engine.js';
import { GuestInstance } from '../dist/host/engine/instance.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const kiln = join(root, 'bin/kiln.js');
const out = join(root, 'build/bench');
mkdirSync(out, { recursive: true });
const artifactFile = join(out, 'hello.wasm');
execFileSync(process.execPath, [kiln, 'build', join(root, 'extensions/hello.ts'), '-o', artifactFile], { stdio: 'ignore' });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const fmtMs = (ms) => (ms >= 1 ? `${ms.toFixed(1)} ms` : `${(ms * 1000).toFixed(0)} µs`);
const fmtUs = (us) => `${us.toFixed(1)} µs`;
const fmtBytes = (b) => `${(b / 1024 / 1024).toFixed(2)} MB`;
const rows = [];
const row = (metric, value, target, peers = '') => rows.push([metric, value, target, peers]);
const noopHost = { op: async () => null, vars: { get() {}, set() {}, delete: () => false, keys: () => [] }, log() {} };

/** Per-iteration time of `fn` in µs: median of several batches. */
async function perCall(fn, batch = 2000, batches = 9) {
  for (let i = 0; i < batch; i++) await fn(); // warm up
  const results = [];
  for (let b = 0; b < batches; b++) {
    const t = performance.now();
    for (let i = 0; i < batch; i++) await fn();
    results.push(((performance.now() - t) * 1000) / batch);
  }
  return median(results);
}

// ---- sizes ---------------------------------------------------------------------------------------
const engineSize = statSync(join(root, 'build/engine/engine.wasm')).size;
const artifactSize = statSync(artifactFile).size;
row('engine component', fmtBytes(engineSize), '');
row('artifact (hello, self-contained)', fmtBytes(artifactSize), '≤ 1.20 MB');

// ---- cold start: a fresh process per sample ------------------------------------------------------
const colds = [];
for (let i = 0; i < 7; i++) {
  colds.push(JSON.parse(execFileSync(process.execPath, [join(here, 'cold-start.mjs'), artifactFile], { encoding: 'utf8' })));
}
const cold = median(colds.map((c) => c.total));
const pick = colds.find((c) => c.total === cold);
row('cold start: artifact file → first result', fmtMs(cold), '≤ 25 ms',
  `imports ${fmtMs(pick.imports)}, engine ${fmtMs(pick.engine)}, open ${fmtMs(pick.open)}, first call ${fmtMs(pick.firstCall)}`);

// ---- in-process: new session and no-op call --------------------------------------------------------
const engine = await Engine.load();
const artifact = await openArtifact(artifactFile, readFileSync(artifactFile), engine);
const newSession = async () => (await GuestInstance.create(engine, artifact.module, noopHost)).load({ host: 'mcp' });
const sessionUs = await perCall(newSession, 50, 7);
const quickjs = await getQuickJS();
const qjsSessionUs = await perCall(() => { const rt = quickjs.newRuntime(); const ctx = rt.newContext(); ctx.dispose(); rt.dispose(); }, 50, 7);
const vmSessionUs = await perCall(() => vm.createContext({}), 50, 7);
row('new session on a loaded artifact', fmtMs(sessionUs / 1000), '≤ 3 ms',
  `quickjs-emscripten runtime+context ${fmtMs(qjsSessionUs / 1000)}; node:vm context ${fmtMs(vmSessionUs / 1000)}`);

const instance = await GuestInstance.create(engine, artifact.module, noopHost);
instance.load({ host: 'mcp' });
const noopUs = await perCall(() => instance.invoke('hello.noop', {}));
const qrt = quickjs.newRuntime();
const qctx = qrt.newContext();
const qfn = qctx.unwrapResult(qctx.evalCode('(function noop(a) { return null; })'));
const qjsCallUs = await perCall(() => {
  const arg = qctx.newString('{}');
  qctx.unwrapResult(qctx.callFunction(qfn, qctx.undefined, arg)).dispose();
  arg.dispose();
});
const vmFn = vm.runInContext('(function noop(a) { return null; })', vm.createContext({}));
const vmCallUs = await perCall(async () => vmFn({}));
row('no-op tool call, in-process', fmtUs(noopUs), '≤ 20 µs',
  `quickjs-emscripten sync call ${fmtUs(qjsCallUs)}; node:vm call ${fmtUs(vmCallUs)}`);

// ---- over MCP stdio ----------------------------------------------------------------------------------
async function mcpLatencies(command, args, tool) {
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(new StdioClientTransport({ command, args, cwd: root, stderr: 'ignore' }));
  for (let i = 0; i < 300; i++) await client.callTool({ name: tool, arguments: {} });
  const lat = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    await client.callTool({ name: tool, arguments: {} });
    lat.push((performance.now() - t) * 1000);
  }
  await client.close();
  return lat;
}
/** A `kiln mcp` (or any) server driven with no SDK on the client side: JSON-RPC lines written and read by hand. */
async function rawServer(args, command = [kiln, 'mcp']) {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [...command, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = '';
  const waiting = new Map();
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      waiting.get(msg.id)?.(msg);
    }
  });
  let id = 0;
  const request = (method, params) => new Promise((resolve) => {
    const n = ++id;
    waiting.set(n, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }) + '\n');
  });
  await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  const callIn = (session, name) => request('tools/call', { name, arguments: {}, _meta: { session } });
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024;
  return { callIn, rss, close: () => child.stdin.end() };
}

async function rawLatencies(srv, tool) {
  for (let i = 0; i < 300; i++) await srv.callIn('default', tool);
  const lat = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    await srv.callIn('default', tool);
    lat.push((performance.now() - t) * 1000);
  }
  srv.close();
  return lat;
}
const kilnLat = await mcpLatencies(process.execPath, [kiln, 'mcp', artifactFile], 'hello.noop');
const kilnRaw = await rawLatencies(await rawServer([artifactFile]), 'hello.noop');
const sdkRaw = await rawLatencies(await rawServer([], [join(here, 'peers/mcp-noop-server.mjs')]), 'noop');
const sdkLat = await mcpLatencies(process.execPath, [join(here, 'peers/mcp-noop-server.mjs')], 'noop');
row('no-op tool call over MCP stdio, SDK client (p50)', fmtUs(median(kilnLat)), '≤ 300 µs',
  `bare MCP SDK server ${fmtUs(median(sdkLat))}; kiln p99 ${fmtUs(pct(kilnLat, 0.99))}`);
row('no-op tool call over MCP stdio, raw JSON-RPC client (p50)', fmtUs(median(kilnRaw)), '≤ 300 µs',
  `bare MCP SDK server ${fmtUs(median(sdkRaw))}; kiln p99 ${fmtUs(pct(kilnRaw, 0.99))}`);

// ---- sessions (over MCP stdio, raw JSON-RPC client; the server's guests run on a worker per session) ----
const sessionsArtifact = join(out, 'sessions.wasm');
execFileSync(process.execPath, [kiln, 'build', join(here, 'sessions.ts'), '-o', sessionsArtifact], { stdio: 'ignore' });

{
  const srv = await rawServer([sessionsArtifact]);
  await srv.callIn('warm', 'bench.noop');
  const before = srv.rss();
  const N = 100;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await srv.callIn(`s${i}`, 'bench.noop');
  const perSec = N / ((performance.now() - t0) / 1000);
  await new Promise((r) => setTimeout(r, 300));
  const perSession = (srv.rss() - before) / N;
  row('new sessions per second (first call in each)', perSec.toFixed(0), '', 'sessions share a pool of worker threads; each gets its own guest');
  row('RSS per idle session', fmtBytes(perSession), '', `server RSS ${fmtBytes(srv.rss())} with ${N + 1} sessions`);
  // p50/p99 of a no-op call with 100 sessions calling concurrently
  const lat = [];
  for (let round = 0; round < 20; round++) {
    await Promise.all(Array.from({ length: N }, async (_, i) => {
      const t = performance.now();
      await srv.callIn(`s${i}`, 'bench.noop');
      lat.push((performance.now() - t) * 1000);
    }));
  }
  row('no-op call, 100 concurrent sessions (p50 / p99)', `${fmtUs(median(lat))} / ${fmtMs(pct(lat, 0.99) / 1000)}`, '', '2,000 calls in rounds of 100');
  // another session's latency while one session spins until its 2 s deadline
  const spin = srv.callIn('spinner', 'bench.spin');
  await new Promise((r) => setTimeout(r, 100));
  const during = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    await srv.callIn('s1', 'bench.noop');
    during.push((performance.now() - t) * 1000);
  }
  await spin;
  row('no-op call in another session while one spins (p50 / max)', `${fmtUs(median(during))} / ${fmtMs(Math.max(...during) / 1000)}`, '≤ 50 ms', 'the spinning session is stopped at its 2 s deadline');
  srv.close();
}

// ---- the table -------------------------------------------------------------------------------------
const widths = [0, 1, 2, 3].map((i) => Math.max(...[['metric', 'kiln', 'target', 'peers, same run'], ...rows].map((r) => r[i].length)));
const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(`kiln bench — node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log(line(['metric', 'kiln', 'target', 'peers, same run']));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));
