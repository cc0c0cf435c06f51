// kiln scaled out as docs/deployment.md says, on real parts started and stopped by this test: three replicas of
// `kiln mcp --http` sharing their sessions' vars in Debian's Redis ([sessions] store), behind Debian's HAProxy
// (round-robin; a 2025 session routed by the replica its id names, from its very first request). Twenty clients
// at once — ten on 2026-07-28 (stateless, any replica), ten on 2025-11-25 (sticky) — each count in a session
// of its own: with every replica up, no call fails and every count goes 1, 2, 3, … whichever replica answers.
// Then one replica gets SIGTERM (it drains: no call fails), and another SIGKILL: only calls in flight on it
// fail, a 2025 client whose session was there starts a new one, and no count ever starts again from 1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { kilnBin, stderrMatch, tempDir, waitUntil } from './helpers.mjs';
import { haproxyConfig } from './haproxy.mjs';

const TOKEN = 'scale-token-0123456789abcdef';
const STATE_KEY = Buffer.alloc(32, 11).toString('base64url');
const MODERN = '2026-07-28';

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

/** A child process stopped when the test ends (SIGKILL, by its pid). */
function start(t, cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  child.output = () => out;
  return child;
}

test('three replicas behind HAProxy with vars in Redis: 20 clients on both revisions, then a replica drained and one killed', { timeout: 600_000 }, async (t) => {
  const dir = tempDir(t);
  const redisPort = await freePort();
  const redis = start(t, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]);
  assert.ok(await waitUntil(() => /Ready to accept connections/.test(redis.output()), 30_000), redis.output());
  const lb = await freePort();
  writeFileSync(join(dir, 'count.ts'), `
defineTool({ name: 'scale.count', exposeAsTool: true, handler: async () => {
  const n = Number(vars.get('n') ?? 0) + 1;
  vars.set('n', String(n));
  return { n };
} });
defineTool({ name: 'scale.slow', exposeAsTool: true, handler: async ({ args }) => { await new Promise((r) => setTimeout(r, args.ms)); return 'slow done'; } });`);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = ["./count.ts"]
[sessions]
store = "redis://127.0.0.1:${redisPort}"
[http]
allowedHosts = ["127.0.0.1:${lb}"]
drainMs = 10000
drainNoticeMs = 2500
[mcp]
taskAfterMs = 0
`);
  const replicas = [];
  for (const name of ['r1', 'r2', 'r3']) {
    const child = start(t, process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', config], { KILN_TOKEN: TOKEN, KILN_STATE_KEY: STATE_KEY, KILN_REPLICA: name });
    const port = Number((await stderrMatch(child, /at http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]);
    replicas.push({ name, port, child });
  }
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig(lb, replicas));
  const haproxy = start(t, 'haproxy', ['-f', cfg, '-db']);
  const url = `http://127.0.0.1:${lb}/mcp`;
  assert.ok(await waitUntil(async () => (await fetch(`http://127.0.0.1:${lb}/healthz`).then((r) => r.status).catch(() => 0)) === 200, 30_000), haproxy.output());

  // Twenty clients, each counting in its own named session; a 2025 client reconnects when its session is gone.
  const connect = async (mode) => {
    const c = new Client({ name: 'scale', version: '0' }, { versionNegotiation: { mode: mode === MODERN ? { pin: MODERN } : 'legacy' } });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
    return c;
  };
  const clients = [];
  for (let i = 0; i < 20; i++) {
    const mode = i % 2 === 0 ? MODERN : 'legacy';
    clients.push({ mode, session: `c${i}`, client: await connect(mode), counts: [], failures: [] });
  }
  t.after(async () => { for (const c of clients) await c.client.close().catch(() => {}); });
  /** `calls` calls of every client, all clients at once; each failure kept with its client. */
  const round = (calls) => Promise.all(clients.map(async (c) => {
    for (let k = 0; k < calls; k++) {
      try {
        const r = await c.client.callTool({ name: 'scale.count', arguments: {}, _meta: { session: c.session } }, { timeout: 60_000 });
        if (r.isError) throw new Error(r.content[0].text);
        c.counts.push(r.structuredContent.n);
      } catch (e) {
        c.failures.push(String(e?.message ?? e).slice(0, 200));
        if (c.mode !== MODERN) c.client = await connect(c.mode).catch(() => c.client); // its MCP session may be gone
      }
    }
  }));
  const increasing = (c) => c.counts.every((n, i) => i === 0 ? n >= 1 : n > c.counts[i - 1]);

  await round(15);
  for (const c of clients) {
    assert.deepEqual(c.failures, [], `${c.session} (${c.mode}) with every replica up`);
    assert.deepEqual(c.counts, Array.from({ length: 15 }, (_, i) => i + 1), `${c.session}: every call saw the last one's vars`);
  }

  // A 2026 task lives on the replica that made it; its id names that replica, and the balancer routes
  // tasks/* there whichever replica round-robin would pick.
  const env = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'tasks', version: '0' } };
  const modern = (method, params, name) => fetch(url, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: env } }),
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name },
  }).then((r) => r.json());
  const task = (await modern('tools/call', { name: 'scale.slow', arguments: { ms: 1000 } }, 'scale.slow')).result;
  assert.equal(task.resultType, 'task', JSON.stringify(task));
  assert.match(task.taskId, /^r[123]\./, 'the task id names its replica');
  const seen = [];
  for (let i = 0; i < 50 && seen.at(-1) !== 'completed'; i++) {
    const got = await modern('tasks/get', { taskId: task.taskId }, task.taskId);
    assert.ok(got.result, `tasks/get #${i} found the task: ${JSON.stringify(got)}`);
    seen.push(got.result.status);
    if (got.result.status !== 'completed') await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(seen.at(-1), 'completed', seen.join(','));
  assert.ok(seen.length >= 3, 'asked more often than there are replicas');

  // SIGTERM r1 while everyone calls: it drains; HAProxy sends new requests elsewhere.
  const calls = () => clients.reduce((n, c) => n + c.counts.length + c.failures.length, 0);
  let done2 = false;
  let at = calls();
  const phase2 = round(15).finally(() => { done2 = true; });
  assert.ok(await waitUntil(() => calls() >= at + 40), 'the round is under way'); // where in it decides nothing
  assert.equal(done2, false, 'the replica is stopped while the clients call');
  replicas[0].child.kill('SIGTERM');
  await phase2;
  assert.equal((await replicas[0].child.exited).code, 0, replicas[0].child.output());
  for (const c of clients) {
    if (c.mode === MODERN) assert.deepEqual(c.failures, [], `${c.session}: no 2026 call fails while a replica drains`);
    else assert.ok(c.failures.length <= 1, `${c.session}: a 2025 client loses at most its session: ${c.failures.join(' | ')}`);
    assert.ok(increasing(c), `${c.session}: its vars survived: ${c.counts.join(',')}`);
  }

  // SIGKILL r2 mid-round: only what was in flight on it fails.
  const before = clients.map((c) => c.failures.length);
  let done3 = false;
  at = calls();
  const phase3 = round(15).finally(() => { done3 = true; });
  assert.ok(await waitUntil(() => calls() >= at + 40), 'the round is under way');
  assert.equal(done3, false, 'the replica is killed while the clients call');
  replicas[1].child.kill('SIGKILL');
  await phase3;
  const lost = clients.map((c, i) => c.failures.length - before[i]);
  for (const [i, c] of clients.entries()) {
    assert.ok(lost[i] <= 1, `${c.session} (${c.mode}): at most its one call in flight fails: ${c.failures.slice(before[i]).join(' | ')}`);
    assert.ok(increasing(c), `${c.session}: no count started again: ${c.counts.join(',')}`);
    assert.ok(c.counts.length >= 45 - c.failures.length, `${c.session}: every other call was answered`);
  }
  // The surviving replica answers everyone, and the last counts are where they were.
  for (const c of clients) {
    const r = await c.client.callTool({ name: 'scale.count', arguments: {}, _meta: { session: c.session } }).catch(async () => {
      c.client = await connect(c.mode);
      return c.client.callTool({ name: 'scale.count', arguments: {}, _meta: { session: c.session } });
    });
    assert.ok(r.structuredContent.n > c.counts[c.counts.length - 1], `${c.session} continues from its last count`);
  }
});
