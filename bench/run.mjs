#!/usr/bin/env node
// kiln's speed and size, against the targets and against peers measured in the same run.
// `npm run bench` runs every section; `node bench/run.mjs bdd peers` runs the named ones (`--list` names them).
// Prints a table; nothing here asserts, because these machines are noisy.
// Invariants: a section that fails is reported in its own row (FAILED, with the reason) and every other
// section still runs and is printed; each section's rows are saved as soon as it ends, in
// build/bench/results/<start time>.json (rewritten whole after each section), so a run cut short keeps what it
// measured; progress (each section's start and end, and the long loops' steps) goes to stderr.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { openArtifact } from '../dist/host/extensions/artifact.js';
import { Engine } from '../dist/host/engine/engine.js';
import { GuestInstance } from '../dist/host/engine/instance.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const kiln = join(root, 'bin/kiln.js');
const out = join(root, 'build/bench');
mkdirSync(out, { recursive: true });
const artifactFile = join(out, 'hello.wasm');
execFileSync(process.execPath, [kiln, 'build', join(root, 'extensions/hello.ts'), '-o', artifactFile], { stdio: 'ignore' });
const sessionsArtifact = join(out, 'sessions.wasm');
execFileSync(process.execPath, [kiln, 'build', join(here, 'sessions.ts'), '-o', sessionsArtifact], { stdio: 'ignore' });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const fmtMs = (ms) => (ms >= 1 ? `${ms.toFixed(1)} ms` : `${(ms * 1000).toFixed(0)} µs`);
const fmtUs = (us) => `${us.toFixed(1)} µs`;
const fmtBytes = (b) => `${(b / 1e6).toFixed(2)} MB`; // decimal megabytes, as the targets are written
const rows = [];
/** The backend the default engine runs on here (the rows name it; the V8 figures sit beside them). */
const backend = await Engine.load().then((e) => (e.backend === 'wasmtime' ? `wasmtime ${e.wasmtime.wasmtimeVersion}` : 'V8'));
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

/** Progress on stderr, with the time since the bench started. */
const started = performance.now();
const progress = (text) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${text}\n`);

const SECTIONS = ['sizes', 'cold', 'build', 'bodies', 'warm', 'peers', 'mcp', 'revisions', 'sessions', 'idle', 'browser', 'bdd'];
const args = process.argv.slice(2);
if (args.includes('--list')) {
  console.log(SECTIONS.join('\n'));
  process.exit(0);
}
const unknown = args.filter((a) => !SECTIONS.includes(a));
if (unknown.length) {
  process.stderr.write(`bench: no section ${unknown.join(', ')}; the sections: ${SECTIONS.join(', ')}\n`);
  process.exit(2);
}
const selected = args.length ? args : SECTIONS;
const resultsFile = join(out, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(resultsFile), { recursive: true });
const saved = { node: process.version, started: new Date().toISOString(), sections: [] };
progress(`sections: ${selected.join(', ')}; results in ${resultsFile}`);

/** Run one section: its rows, or one FAILED row with the reason; saved either way, before the next starts. */
async function section(name, fn) {
  if (!selected.includes(name)) return;
  progress(`${name} ...`);
  const t = performance.now();
  const first = rows.length;
  let error;
  try {
    await fn();
  } catch (e) {
    error = String(e?.stack ?? e);
    // the lines that say what failed (a child's stderr is inside the message of execFileSync's error)
    const lines = String(e?.message ?? e).split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('at '));
    const said = lines.filter((l) => /error|fail/i.test(l));
    row(`${name}: FAILED`, 'error', '', [...new Set([lines[0], ...said.slice(-2)])].join(' / ').slice(0, 300));
  }
  const seconds = (performance.now() - t) / 1000;
  progress(`${name} ${error ? 'FAILED' : 'done'} in ${seconds.toFixed(0)} s${error ? `: ${error.split('\n')[0]}` : ''}`);
  saved.sections.push({ name, ok: !error, seconds, error, rows: rows.slice(first).map(([metric, value, target, peers]) => ({ metric, value, target, peers })) });
  writeFileSync(resultsFile, JSON.stringify(saved, null, 2));
}

// ---- sizes ---------------------------------------------------------------------------------------
await section('sizes', () => {
  const engineSize = statSync(join(root, 'build/engine/engine.wasm')).size;
  const artifactSize = statSync(artifactFile).size;
  row('engine component (quickjs-ng + prelude snapshot)', fmtBytes(engineSize), '');
  row('artifact (hello, self-contained)', fmtBytes(artifactSize), '≤ 1.20 MB', `the engine plus ${artifactSize - engineSize} bytes of sections`);
});

// ---- cold start: whole processes, as a user waits for them (hyperfine) -------------------------------
await section('cold', () => {
  const ping = join(out, 'ping.js');
  writeFileSync(ping, "await plugins['hello.greet']({ name: 'cold' })\n");
  const hyperfine = (commands) => {
    const json = join(out, 'hyperfine.json');
    execFileSync('hyperfine', ['-N', '--warmup', '3', '--runs', '30', '--export-json', json, ...commands], { stdio: 'ignore' });
    return JSON.parse(readFileSync(json, 'utf8')).results.map((r) => r.times.map((t) => t * 1000));
  };
  // Three rounds (KILN_BENCH_ROUNDS), the commands' order rotating each round, as for the peers below: one
  // hyperfine run of each moved by up to 20 % here as the machine's speed drifted. Each row is the median of
  // the rounds' medians (and of their p99s); the rounds are in build/bench/cold.json.
  // kiln run on each backend: the default (wasmtime where the addon is built) and V8 (hyperfine -N runs
  // a command without a shell, so the backend is chosen by `env`).
  const coldCommands = [
    `${process.execPath} ${kiln} run ${ping} ${artifactFile}`,
    `env KILN_ENGINE=v8 ${process.execPath} ${kiln} run ${ping} ${artifactFile}`,
    `${process.execPath} ${join(here, 'cold-start.mjs')} ${artifactFile}`,
    `${process.execPath} ${join(here, 'peers/cold-quickjs.mjs')}`,
    `${process.execPath} -e 0`,
  ];
  const coldRounds = coldCommands.map(() => []);
  for (let round = 0; round < Math.max(1, Number(process.env.KILN_BENCH_ROUNDS ?? 3)); round++) {
    progress(`cold: round ${round + 1}`);
    const order = coldCommands.map((_, i) => (i + round) % coldCommands.length);
    const times = hyperfine(order.map((i) => coldCommands[i]));
    order.forEach((i, k) => coldRounds[i].push({ median: median(times[k]), p99: pct(times[k], 0.99) }));
  }
  writeFileSync(join(out, 'cold.json'), JSON.stringify(coldCommands.map((command, i) => ({ command, rounds: coldRounds[i] })), null, 2));
  const [coldRun, coldRunV8, coldApi, coldQjs, coldNode] = coldRounds.map((rs) => ({ median: median(rs.map((r) => r.median)), p99: median(rs.map((r) => r.p99)) }));
  const ms = (x) => `${x.median.toFixed(0)} ms (p99 ${x.p99.toFixed(0)})`;
  row(`cold start: \`kiln run\` of a script calling an artifact's tool (${backend})`, ms(coldRun), '≤ `node -e 0` + 30 ms, < quickjs-emscripten',
    `\`node -e 0\` ${ms(coldNode)} (+${(coldRun.median - coldNode.median).toFixed(0)} ms); on V8 ${ms(coldRunV8)}; quickjs-emscripten script ${ms(coldQjs)}`);
  row('cold start: a script on the host API (load, open, first call)', ms(coldApi), '', 'bench/cold-start.mjs, whole process');
});

// ---- build: a cold `kiln build` of a mathjs-sized extension, one whole process per run ---------------------
await section('build', () => {
  // `kiln build` keeps no cache (only `kiln mcp` and `kiln run` do), so every run bundles, compiles and loads
  // the extension from scratch, as the first build on a new machine does. Runs in series, median of
  // KILN_BENCH_BUILD_RUNS (5 by default); a run that fails throws, and the row says FAILED.
  const source = join(here, 'mathjs.ts');
  const artifact = join(out, 'mathjs.wasm');
  const runs = Math.max(1, Number(process.env.KILN_BENCH_BUILD_RUNS ?? 5));
  const walls = [];
  for (let i = 0; i < runs; i++) {
    progress(`build: run ${i + 1} of ${runs}`);
    const t = performance.now();
    execFileSync(process.execPath, [kiln, 'build', source, '-o', artifact], { stdio: 'pipe' });
    walls.push(performance.now() - t);
  }
  row('kiln build of a mathjs extension, cold (whole process)', `${(median(walls) / 1000).toFixed(1)} s`, '< 5 s',
    `median of ${runs}: ${walls.map((w) => (w / 1000).toFixed(1)).join(', ')} s; artifact ${fmtBytes(statSync(artifact).size)}`);
});

// ---- large bodies in a guest (bench/bodies.mjs: 10 MiB from 127.0.0.1, timed inside the guest) -------------
await section('bodies', () => {
  const b = JSON.parse(execFileSync(process.execPath, [join(here, 'bodies.mjs')], { encoding: 'utf8', maxBuffer: 1 << 24 }));
  const mib = (n) => `${(n / 1048576).toFixed(0)} MiB`;
  row(`response.text() of ${mib(b.bytes.text)} (kiln run)`, fmtMs(b.kiln.text), '< 1 s', `Node fetch: ${fmtMs(b.node.text)}`);
  row(`response.json() of ${mib(b.bytes.json)} (kiln run)`, fmtMs(b.kiln.json), '< 1 s', `Node fetch: ${fmtMs(b.node.json)}`);
  row('TextEncoder + TextDecoder over 10 MiB in a guest', fmtMs(b.kiln.decode), '', '');
});

// ---- a warm process: a new session, a second artifact --------------------------------------------------
await section('warm', async () => {
  const engine = await Engine.load();
  const artifact = await openArtifact(artifactFile, readFileSync(artifactFile), engine);
  /** Sessions arrive with gaps, as they do at a server (so the spare can be made between them). */
  async function sessionTimes(n) {
    const xs = [];
    for (let i = 0; i < n; i++) {
      await new Promise((r) => setTimeout(r, 2));
      const t = performance.now();
      const g = await GuestInstance.create(engine, artifact.image, noopHost);
      g.load({ host: 'mcp' });
      xs.push(performance.now() - t);
      g.dispose();
    }
    return xs.slice(20);
  }
  const cold = await sessionTimes(220);
  GuestInstance.keepSpares(engine); // what `kiln mcp` and its workers do
  const warm = await sessionTimes(220);
  row('new session on a loaded artifact (server: a spare instance ready)', `${fmtMs(median(warm))} (p99 ${fmtMs(pct(warm, 0.99))})`, '≤ 0.5 ms',
    `without a spare (instantiate + load): ${fmtMs(median(cold))}`);
  const seconds = [];
  for (let i = 0; i < 9; i++) {
    seconds.push(JSON.parse(execFileSync(process.execPath, [join(here, 'second-artifact.mjs'), artifactFile, sessionsArtifact], { encoding: 'utf8' })).ms);
  }
  row('second artifact\'s first call in a warm process', `${median(seconds).toFixed(2)} ms`, '≤ 5 ms', 'open + verify + instantiate + load + call; 9 processes');
  const instance = await GuestInstance.create(engine, artifact.image, noopHost);
  instance.load({ host: 'mcp' });
  row('no-op tool call, in-process (guest API, see peers below)', fmtUs(await perCall(() => instance.invoke('hello.noop', {}))), '');
});

// ---- peers: one process per (peer, workload), peers interleaved, equal work (bench/peers/) ----------
const { PEERS, WORKLOADS } = await import('./peers/peers.mjs');
const peerNames = Object.keys(PEERS);
let peerResults = [];
const peerRows = [];
let answers = true;
await section('peers', () => {
  // Each (peer, workload) cell runs KILN_BENCH_ROUNDS times (default 3), each round rotating who goes first, and
  // the cell reports the median of its rounds' medians (and of their p99s): one process's median moves by up to
  // a third from run to run on this machine (quickjs-emscripten's fib: 33–47 ms), so a ratio from one run each
  // can say "met" or "missed" by luck.
  const rounds = Math.max(1, Number(process.env.KILN_BENCH_ROUNDS ?? 3));
  const runs = new Map(); // `${peer} ${workload}` → run-one results, one per round
  for (let round = 0; round < rounds; round++) {
    for (const [k, workload] of Object.keys(WORKLOADS).entries()) {
      progress(`peers: round ${round + 1} of ${rounds}, ${workload}`);
      const order = peerNames.map((_, i) => peerNames[(i + k + round) % peerNames.length]); // rotate who goes first
      for (const peer of order) {
        let result;
        try {
          const lineOut = execFileSync(process.execPath, [join(here, 'peers/run-one.mjs'), peer, workload], { encoding: 'utf8', timeout: 300_000, stdio: ['ignore', 'pipe', 'ignore'] });
          result = JSON.parse(lineOut.trim().split('\n').pop());
        } catch (e) {
          result = { peer, workload, error: String(e.message).split('\n')[0] };
        }
        const key = `${peer} ${workload}`;
        runs.set(key, [...(runs.get(key) ?? []), result]);
      }
    }
  }
  /** One cell from its rounds: medians of the medians, p99s and RSS; an error if any round failed; the
   *  answer only when every round gave the same one. */
  function combine(results) {
    const failed = results.find((r) => r.error);
    if (failed) return failed;
    const mid = (pick) => (results[0][pick] === null ? null : median(results.map((r) => r[pick])));
    const answers = new Set(results.map((r) => JSON.stringify(r.answer)));
    return {
      ...results[0], medianUs: mid('medianUs'), p99Us: mid('p99Us'), rssBytes: mid('rssBytes'), pssBytes: mid('pssBytes'),
      roundMediansUs: results.map((r) => r.medianUs), roundRssBytes: results.map((r) => r.rssBytes),
      answer: answers.size === 1 ? results[0].answer : 'rounds disagree', samplesUs: undefined,
    };
  }
  peerResults = [...runs.values()].map(combine);
  // Idle instances: Pss (a copy-on-write page shared by N instances counts 1/N), RSS beside it.
  const cell = (r) => !r ? '' : r.error ? 'error' : r.workload === 'rss100' ? `${fmtBytes(r.pssBytes)} (RSS ${fmtBytes(r.rssBytes)})` :
    `${r.medianUs >= 1000 ? fmtMs(r.medianUs / 1000) : fmtUs(r.medianUs)} (p99 ${r.p99Us >= 1000 ? fmtMs(r.p99Us / 1000) : fmtUs(r.p99Us)})`;
  for (const workload of Object.keys(WORKLOADS)) {
    const get = (p) => peerResults.find((r) => r.peer === p && r.workload === workload);
    const kilnR = get('kiln');
    const ratio = (p) => {
      const a = get(p), v = (r) => (r?.workload === 'rss100' ? r.pssBytes : r?.medianUs);
      return kilnR && a && !a.error && !kilnR.error ? ` ×${(v(a) / v(kilnR)).toFixed(2)}` : '';
    };
    peerRows.push([workload, ...peerNames.map((p) => p === 'kiln' ? cell(get(p)) : `${cell(get(p))}${ratio(p)}`)]);
  }
  answers = Object.keys(WORKLOADS).filter((w) => w !== 'rss100' && w !== 'newInstance')
    .every((w) => new Set(peerResults.filter((r) => r.workload === w && !r.error).map((r) => JSON.stringify(r.answer))).size === 1);
  saved.peers = peerResults;
});

// ---- over MCP stdio ----------------------------------------------------------------------------------
/** An SDK client on a server over stdio: `call()` times one no-op call (µs). */
async function sdkClient(command, args, tool) {
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(new StdioClientTransport({ command, args, cwd: root, stderr: 'ignore' }));
  const call = async () => {
    const t = performance.now();
    await client.callTool({ name: tool, arguments: {} });
    return (performance.now() - t) * 1000;
  };
  return { call, close: () => client.close() };
}

/** kiln and its peer, both connected, measured in alternating rounds of 200 calls (10 rounds each, after 300
 *  warm-up calls each), so that the machine's noise falls on both alike. */
async function interleaved(kiln, peer) {
  const lat = { kiln: [], peer: [] };
  for (const [s] of [[kiln], [peer]]) for (let i = 0; i < 300; i++) await s.call();
  for (let round = 0; round < 10; round++) {
    for (const [name, s] of [['kiln', kiln], ['peer', peer]]) for (let i = 0; i < 200; i++) lat[name].push(await s.call());
  }
  await kiln.close();
  await peer.close();
  return lat;
}
/** The `_meta` every 2026-07-28 request carries (a client that can be asked). */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '0' },
};

/** A `kiln mcp` (or any) server driven with no SDK on the client side: JSON-RPC lines written and read by hand,
 *  on 2025-06-18 (initialize), or on 2026-07-28 (`revision` "modern": server/discover, the envelope on every
 *  request). Questions it puts (elicitation/create) are answered "allow once". */
async function rawServer(args, command = [kiln, 'mcp'], revision = 'legacy') {
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
      if (msg.method === 'elicitation/create') child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { action: 'accept', content: { allow: 'once' } } }) + '\n');
      else waiting.get(msg.id)?.(msg);
    }
  });
  let id = 0;
  const modern = revision === 'modern';
  const request = (method, params = {}) => new Promise((resolve) => {
    const n = ++id;
    waiting.set(n, resolve);
    const p = modern ? { ...params, _meta: { ...ENVELOPE, ...params._meta } } : params;
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: n, method, params: p }) + '\n');
  });
  if (modern) await request('server/discover');
  else {
    await request('initialize', { protocolVersion: '2025-06-18', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'bench', version: '0' } });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  }
  const callIn = (session, name) => request('tools/call', { name, arguments: {}, _meta: { session } });
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024;
  return { callIn, request, rss, close: () => child.stdin.end() };
}

/** A raw server's `call()`: one no-op call in session "default", timed (µs). */
function rawCaller(srv, tool) {
  const call = async () => {
    const t = performance.now();
    await srv.callIn('default', tool);
    return (performance.now() - t) * 1000;
  };
  return { call, close: async () => srv.close() };
}
const peerServer = join(here, 'peers/mcp-noop-server.mjs');
await section('mcp', async () => {
  const raw = await interleaved(rawCaller(await rawServer([artifactFile]), 'hello.noop'), rawCaller(await rawServer([], [peerServer]), 'noop'));
  const viaSdk = await interleaved(await sdkClient(process.execPath, [kiln, 'mcp', artifactFile], 'hello.noop'), await sdkClient(process.execPath, [peerServer], 'noop'));
  const [kilnRaw, sdkRaw, kilnLat, sdkLat] = [raw.kiln, raw.peer, viaSdk.kiln, viaSdk.peer];
  const times = (a, b) => `${(median(a) / median(b)).toFixed(2)}×`;
  row('no-op tool call over MCP stdio, SDK client (p50)', fmtUs(median(kilnLat)), '≤ 2× bare SDK server',
    `${times(kilnLat, sdkLat)} the bare MCP SDK server's ${fmtUs(median(sdkLat))} (interleaved); kiln p99 ${fmtUs(pct(kilnLat, 0.99))}, SDK p99 ${fmtUs(pct(sdkLat, 0.99))}`);
  row('no-op tool call over MCP stdio, raw JSON-RPC client (p50)', fmtUs(median(kilnRaw)), '≤ 2× bare SDK server',
    `${times(kilnRaw, sdkRaw)} the bare MCP SDK server's ${fmtUs(median(sdkRaw))} (interleaved); kiln p99 ${fmtUs(pct(kilnRaw, 0.99))}, SDK p99 ${fmtUs(pct(sdkRaw, 0.99))}`);
});

// ---- the two protocol revisions: a no-op call and an approval's round trip, 2025-11-25 against 2026-07-28 ----
/** A 2026-07-28 server over HTTP, driven with fetch: `call(name)` is one tools/call, answered by its result. */
async function httpServer(args, revision) {
  const { spawn } = await import('node:child_process');
  const token = 'bench-token-0123456789abcdef';
  const child = spawn(process.execPath, [kiln, 'mcp', '--http', '127.0.0.1:0', ...args], { cwd: root, env: { ...process.env, KILN_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    child.stderr.on('data', (d) => { text += d; const m = /at (http:\/\/\S+\/mcp)/.exec(text); if (m) resolve(m[1]); });
    child.on('exit', () => reject(new Error(`kiln --http exited: ${text}`)));
  });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let id = 0;
  let sid;
  const post = async (method, params, extra = {}) => {
    const modern = revision === 'modern' || revision === 'modern-session';
    const h = { ...headers, ...extra, ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}), ...(modern ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(params?.name ? { 'mcp-name': params.name } : {}) } : {}) };
    const meta = { ...ENVELOPE, ...(revision === 'modern-session' ? { session: 'bench' } : {}) };
    const r = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: modern ? { ...params, _meta: meta } : params }) });
    if (!sid && !modern) sid = r.headers.get('mcp-session-id') ?? undefined;
    const text = await r.text();
    return text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.split('\n').filter((l) => l.startsWith('data: {')).pop().slice(6));
  };
  if (revision === 'legacy') {
    await post('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
    await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  }
  return { call: (name) => post('tools/call', { name, arguments: {} }), close: () => child.kill() };
}

const timed = (f) => async () => {
  const t = performance.now();
  await f();
  return (performance.now() - t) * 1000;
};
const approvalArtifact = join(out, 'approval.wasm');
await section('revisions', async () => {
  execFileSync(process.execPath, [kiln, 'build', join(here, 'approval.ts'), '-o', approvalArtifact], { stdio: 'ignore' });
  const p = (xs) => `${fmtUs(median(xs))} / ${fmtUs(pct(xs, 0.99))}`;
  // stdio: one process per revision, the same artifact, calls interleaved
  const stdio = await interleaved(rawCaller(await rawServer([artifactFile]), 'hello.noop'), rawCaller(await rawServer([artifactFile], undefined, 'modern'), 'hello.noop'));
  row('no-op call over stdio, 2025-11-25 (p50 / p99)', p(stdio.kiln), '', 'raw JSON-RPC client; the lean tools/call path');
  row('no-op call over stdio, 2026-07-28 (p50 / p99)', p(stdio.peer), '', `${(median(stdio.peer) / median(stdio.kiln)).toFixed(2)}× 2025's (interleaved; the SDK's per-request envelope and result checks)`);
  // HTTP: a 2025 session against 2026 requests that each get a server object of their own
  const [h25, h26] = [await httpServer([artifactFile], 'legacy'), await httpServer([artifactFile], 'modern')];
  const http = await interleaved({ call: timed(() => h25.call('hello.noop')), close: h25.close }, { call: timed(() => h26.call('hello.noop')), close: h26.close });
  row('no-op call over HTTP, 2025-11-25 (p50 / p99)', p(http.kiln), '', 'fetch on one MCP session');
  row('no-op call over HTTP, 2026-07-28, no session named (p50 / p99)', p(http.peer), '', `${(median(http.peer) / median(http.kiln)).toFixed(2)}× 2025's (interleaved; a server object and a session of its own, so a new guest, per call)`);
  const [n26, n25] = [await httpServer([artifactFile], 'modern-session'), await httpServer([artifactFile], 'legacy')];
  const named = await interleaved({ call: timed(() => n25.call('hello.noop')), close: n25.close }, { call: timed(() => n26.call('hello.noop')), close: n26.close });
  row('no-op call over HTTP, 2026-07-28, a named session (p50 / p99)', p(named.peer), '', `${(median(named.peer) / median(named.kiln)).toFixed(2)}× 2025's in the same run (interleaved; the session's guest kept)`);
  // An approval asked and answered at once: 2025's elicitation/create on the open call, 2026's input_required and retry.
  const { mkdtempSync, writeFileSync: write } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const ws = mkdtempSync(join(tmpdir(), 'kiln-bench-approval-'));
  mkdirSync(join(ws, 'out'));
  const config = join(ws, 'kiln.toml');
  write(config, `extensions = [${JSON.stringify(approvalArtifact)}]\n[approvals]\npreset = "strict"\n[fs]\nroot = "."\n`);
  const [a25, a26] = [await rawServer(['--config', config]), await rawServer(['--config', config], undefined, 'modern')];
  const retry = async () => {
    const first = await a26.request('tools/call', { name: 'bench.approved', arguments: {} });
    const { requestState } = first.result;
    const done = await a26.request('tools/call', { name: 'bench.approved', arguments: {}, requestState, inputResponses: { 'kiln.approval': { action: 'accept', content: { allow: 'once' } } } });
    if (done.result?.isError) throw new Error(JSON.stringify(done.result));
  };
  const lat = { l: [], m: [] };
  for (let i = 0; i < 20; i++) { await a25.callIn('default', 'bench.approved'); await retry(); } // warm up
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 30; i++) lat.l.push(await timed(() => a25.callIn('default', 'bench.approved'))());
    for (let i = 0; i < 30; i++) lat.m.push(await timed(retry)());
  }
  a25.close();
  a26.close();
  row('approval round trip, 2025-11-25 (p50 / p99)', p(lat.l), '', 'tools/call → elicitation/create → answer → result (raw client, answered at once)');
  row('approval round trip, 2026-07-28 (p50 / p99)', p(lat.m), '', 'tools/call → input_required → retry with the answer and requestState → result (the call waits, the retry resumes it)');
});

// ---- idle: 10,000 idle sessions in one server, on each backend (bench/idle-sessions.mjs) ---------------------
await section('idle', () => {
  const n = Number(process.env.KILN_BENCH_IDLE_SESSIONS ?? 10_000);
  const lines = execFileSync(process.execPath, [join(here, 'idle-sessions.mjs'), '--sessions', String(n)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 30 * 60_000 });
  const [w, v] = lines.trim().split('\n').map((l) => JSON.parse(l));
  const gb = (b) => `${(b / 1e9).toFixed(2)} GB`;
  row(`server memory with ${w.sessions} idle sessions (${backend}): Pss (RSS)`, `${gb(w.pssBytes)} (${gb(w.rssBytes)})`, '≤ 2.5 GB',
    `${fmtBytes(w.pssPerSessionBytes)} Pss each, ${fmtMs(w.newSessionUs / 1000)} per new session over MCP; on V8 (${v.sessions}) ${gb(v.pssBytes)} (${gb(v.rssBytes)}), ${fmtBytes(v.pssPerSessionBytes)} each, ${fmtMs(v.newSessionUs / 1000)}`);
});

// ---- sessions (over MCP stdio, raw JSON-RPC client; the server's guests run on a worker per session) ----
await section('sessions', async () => {
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
});

// ---- another session's latency while one session floods console.log (SDK client: it parses every log message) ----
{
  const what = 'no-op call in another session while one floods console.log (p50 / p99)';
  try {
    const r = JSON.parse(execFileSync(process.execPath, [join(here, 'log-flood.mjs'), sessionsArtifact], { encoding: 'utf8', timeout: 300_000 }));
    row(what, `${fmtUs(r.p50Us)} / ${fmtMs(r.p99Us / 1000)}`, 'p99 < 50 ms',
      `${r.calls} calls during the 3 s flood; ${r.notifications} log messages reached the client (bench/log-flood.mjs)`);
  } catch (e) {
    row(what, 'error', 'p99 < 50 ms', String(e.message).split('\n')[0]);
  }
}

// ---- the browser (allow.browser): cold launch, and one page.click as an MCP call ---------------------------
await section('browser', async () => {
  const { createServer } = await import('node:http');
  const site = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>bench</title><button id="b" onclick="n.textContent = +n.textContent + 1">+</button><p id="n">0</p>');
  });
  await new Promise((r) => site.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${site.address().port}/`;
  const browserArtifact = join(out, 'browser.wasm');
  execFileSync(process.execPath, [kiln, 'build', join(here, 'browser.ts'), '-o', browserArtifact], { stdio: 'ignore' });
  const colds = [];
  let clicks = [];
  for (let run = 0; run < 3; run++) {
    const srv = await rawServer([browserArtifact]);
    const t = performance.now();
    const opened = await srv.request('tools/call', { name: 'bb.open', arguments: { url } });
    colds.push(performance.now() - t);
    if (opened.result?.isError) throw new Error(`bb.open failed: ${JSON.stringify(opened.result)}`);
    if (run === 0) {
      clicks = [];
      for (let i = 0; i < 60; i++) {
        const c = performance.now();
        await srv.callIn('default', 'bb.click');
        if (i >= 10) clicks.push((performance.now() - c) * 1000);
      }
    }
    srv.close();
  }
  // Peer: the same click and read on playwright-core directly, in this process (no MCP, no guest): the floor.
  const { chromium } = await import('playwright-core');
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  const pg = await (await b.newContext()).newPage();
  await pg.goto(url);
  const direct = [];
  for (let i = 0; i < 60; i++) {
    const t = performance.now();
    await pg.click('#b');
    await pg.textContent('#n');
    if (i >= 10) direct.push((performance.now() - t) * 1000);
  }
  await b.close();
  site.close();
  row('browser cold launch: first page.goto in a new server', fmtMs(median(colds)), '',
    'launch + context (with its gate) + page + load, through MCP; median of 3 servers');
  row('page.click + textContent as one MCP tool call (p50 / p99)', `${fmtUs(median(clicks))} / ${fmtUs(pct(clicks, 0.99))}`, '',
    `playwright-core directly, same click and read: ${fmtUs(median(direct))}`);
});

// ---- kiln bdd: a CPU-bound suite, --parallel 1 against --parallel 2 (whole processes, interleaved) ---------
await section('bdd', () => {
  const suite = join(here, 'bdd');
  // A run that fails is reported in the row (with the summary's last lines) and run again, at most twice: one
  // failure must not throw away the whole bench's numbers, and must not pass unseen either.
  const failures = [];
  const wall = (parallel) => {
    for (let attempt = 0; ; attempt++) {
      const t = performance.now();
      try {
        execFileSync(process.execPath, [kiln, 'bdd', '--parallel', String(parallel), '--format', 'summary'], { cwd: suite, stdio: 'pipe', encoding: 'utf8' });
        return performance.now() - t;
      } catch (e) {
        const tail = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim().split('\n').slice(-4).join(' / ');
        failures.push(`--parallel ${parallel}: ${tail}`);
        process.stderr.write(`bench: kiln bdd --parallel ${parallel} failed: ${e.stdout ?? ''}${e.stderr ?? ''}\n`);
        if (attempt >= 2) throw e;
      }
    }
  };
  const one = [];
  const two = [];
  for (let i = 0; i < 3; i++) {
    progress(`bdd: round ${i + 1} of 3`);
    one.push(wall(1));
    two.push(wall(2));
  }
  // Each worker's first scenario pays for V8 tiering the engine up (slower when two workers do it at once on
  // two cores); the steady scenarios after it run side by side.
  row('kiln bdd, 24 CPU-bound scenarios: --parallel 2 (whole process)', fmtMs(median(two)), '< --parallel 1',
    `--parallel 1: ${fmtMs(median(one))} (×${(median(one) / median(two)).toFixed(2)}); median of 3, interleaved${failures.length ? `; ${failures.length} failed run(s) repeated: ${failures.join('; ')}` : ''}`);
});

// ---- the table -------------------------------------------------------------------------------------
const widths = [0, 1, 2, 3].map((i) => Math.max(...[['metric', 'kiln', 'target', 'peers, same run'], ...rows].map((r) => r[i].length)));
const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(`kiln bench — node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log(line(['metric', 'kiln', 'target', 'peers, same run']));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));

if (peerRows.length) {
  const pw = [0, ...peerNames.map((_, i) => i + 1)].map((i) => Math.max(...[['workload (median, p99; ×: peer time / kiln time)', ...peerNames], ...peerRows].map((r) => r[i].length)));
  const pline = (r) => `| ${r.map((c, i) => c.padEnd(pw[i])).join(' | ')} |`;
  console.log(`\npeers — equal work, one process per cell, interleaved; ${answers ? 'every peer gave the same answers' : 'PEERS DISAGREE'}`);
  console.log(pline(['workload (median, p99; ×: peer time / kiln time)', ...peerNames]));
  console.log(pline(pw.map((w) => '-'.repeat(w))));
  for (const r of peerRows) console.log(pline(r));
  console.log(`versions: ${peerNames.map((p) => `${p}: ${peerResults.find((r) => r.peer === p && r.version)?.version ?? '?'}`).join('; ')}`);
  writeFileSync(join(out, 'peers.json'), JSON.stringify(peerResults, null, 2));
}
const failed = saved.sections.filter((x) => !x.ok).map((x) => x.name);
progress(failed.length ? `done; FAILED: ${failed.join(', ')} (see their rows and ${resultsFile})` : `done; results in ${resultsFile}`);
// A failed section may have left a server running (its stdin still open): exit now, which closes it.
process.exit(failed.length ? 1 : 0);
