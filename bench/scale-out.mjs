#!/usr/bin/env node
// kiln scaled out, measured: `npm run bench:scale`. A no-op call's p50 and p99 through HAProxy to three replicas
// that keep vars in Redis, against one replica called directly with vars in memory, and against that replica
// with the store: calls interleaved round by round, on both protocol revisions, with a raw HTTP client (so the
// numbers are the server's and the balancer's, not a client library's). Then the RSS of a replica that held
// 200 sessions with vars, with the store against without. The balancer's configuration is test/haproxy.mjs
// (docs/deployment.md). Nothing here asserts; progress goes to stderr.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { haproxyConfig } from '../test/haproxy.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const kiln = join(root, 'bin/kiln.js');
const TOKEN = 'bench-token-0123456789abcdef';
const work = mkdtempSync(join(tmpdir(), 'kiln-bench-scale-'));
const children = [];
const progress = (s) => process.stderr.write(`[bench:scale] ${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const fmt = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(0)} µs`);
const freePort = () => new Promise((r) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => r(port)); }); });
const waitFor = async (fn, ms = 30_000) => { const end = Date.now() + ms; while (Date.now() < end) { if (await fn()) return; await new Promise((r) => setTimeout(r, 50)); } throw new Error('timed out'); };

function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.output = () => out;
  children.push(child);
  return child;
}

async function replica(config, name) {
  const child = start(process.execPath, [kiln, 'mcp', '--http', '127.0.0.1:0', '--config', config], { KILN_TOKEN: TOKEN, KILN_STATE_KEY: Buffer.alloc(32, 5).toString('base64url'), ...(name ? { KILN_REPLICA: name } : {}) });
  await waitFor(() => /at http:\/\/127\.0\.0\.1:\d+\/mcp/.test(child.output()), 120_000);
  return { name, child, port: Number(/at http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(child.output())[1]) };
}

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '0' } };

/** A raw client of `url` on `revision`: `call()` is one no-op call in its own named session, timed (µs). */
async function caller(url, revision, session) {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let sid;
  let id = 0;
  const post = async (body, extra = {}) => {
    const r = await fetch(url, { method: 'POST', headers: { ...headers, ...extra, ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}) }, body: JSON.stringify(body) });
    if (!sid) sid = r.headers.get('mcp-session-id') ?? undefined;
    const text = await r.text();
    if (r.status !== 200 && r.status !== 202) throw new Error(`${r.status}: ${text.slice(0, 200)}`);
    return text;
  };
  if (revision === 'legacy') {
    await post({ jsonrpc: '2.0', id: ++id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } } });
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
  return async () => {
    const params = { name: 'bench.vars', arguments: {}, _meta: { session, ...(revision === 'modern' ? ENVELOPE : {}) } };
    const t = performance.now();
    await post({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params }, revision === 'modern' ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'bench.vars' } : {});
    return (performance.now() - t) * 1000;
  };
}

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

try {
  writeFileSync(join(work, 'vars.ts'), "defineTool({ name: 'bench.vars', exposeAsTool: true, handler: async () => { vars.set('n', String(Number(vars.get('n') ?? 0) + 1)); return null; } });");
  const redisPort = await freePort();
  const redis = start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work]);
  await waitFor(() => /Ready to accept connections/.test(redis.output()));
  const lb = await freePort();
  const conf = (store) => {
    const file = join(work, store ? 'store.toml' : 'memory.toml');
    writeFileSync(file, `extensions = ["./vars.ts"]\n[sessions]\n${store ? `store = "redis://127.0.0.1:${redisPort}"\n` : ''}[http]\nallowedHosts = ["127.0.0.1:${lb}"]\n`);
    return file;
  };
  progress('starting 3 replicas with the store, 1 without, 1 with, and HAProxy');
  const three = [];
  for (const name of ['r1', 'r2', 'r3']) three.push(await replica(conf(true), name));
  const alone = await replica(conf(false));
  const aloneStore = await replica(conf(true));
  writeFileSync(join(work, 'haproxy.cfg'), haproxyConfig(lb, three));
  start('haproxy', ['-f', join(work, 'haproxy.cfg'), '-db']);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${lb}/healthz`).then((r) => r.status).catch(() => 0)) === 200);

  const rows = [];
  for (const revision of ['modern', 'legacy']) {
    const targets = {
      'one replica, vars in memory': await caller(`http://127.0.0.1:${alone.port}/mcp`, revision, `s-${revision}`),
      'one replica, vars in Redis': await caller(`http://127.0.0.1:${aloneStore.port}/mcp`, revision, `s-${revision}`),
      'HAProxy, 3 replicas, vars in Redis': await caller(`http://127.0.0.1:${lb}/mcp`, revision, `s-${revision}`),
    };
    const lat = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
    for (const f of Object.values(targets)) for (let i = 0; i < 200; i++) await f();
    for (let r = 0; r < 10; r++) {
      progress(`${revision}: round ${r + 1} of 10`);
      for (const [k, f] of Object.entries(targets)) for (let i = 0; i < 200; i++) lat[k].push(await f());
    }
    const base = median(lat['one replica, vars in memory']);
    for (const [k, xs] of Object.entries(lat)) rows.push([`no-op call, ${revision === 'modern' ? '2026-07-28' : '2025-11-25'}, ${k}`, `${fmt(median(xs))} / ${fmt(pct(xs, 0.99))}`, `${(median(xs) / base).toFixed(2)}× one replica in memory`]);
  }
  progress('RSS: 200 sessions with vars in each of two replicas');
  for (const [name, r] of [['memory', alone], ['Redis', aloneStore]]) {
    for (let i = 0; i < 200; i++) await (await caller(`http://127.0.0.1:${r.port}/mcp`, 'modern', `rss-${i}`))();
  }
  await new Promise((r) => setTimeout(r, 500));
  rows.push(['RSS of a replica after 200 sessions, vars in memory', `${(rss(alone.child.pid) / 1e6).toFixed(1)} MB`, '']);
  rows.push(['RSS of a replica after 200 sessions, vars in Redis', `${(rss(aloneStore.child.pid) / 1e6).toFixed(1)} MB`, 'the client library (ioredis) and its connection included']);
  console.log('| metric | p50 / p99 (or value) | compared |');
  console.log('| --- | --- | --- |');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
} finally {
  for (const c of children) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
