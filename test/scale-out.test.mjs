// kiln scaled out as docs/deployment.md says, on real parts started and stopped by this test: three replicas of
// `kiln mcp --http` sharing their sessions' vars in Debian's Redis ([sessions] store), behind Debian's HAProxy
// (round-robin; a 2025 session routed by the replica its id names, from its very first request). Twenty clients
// at once — ten on 2026-07-28 (stateless, any replica), ten on 2025-11-25 (sticky) — each count in a session
// of its own: with every replica up, no call fails and every count goes 1, 2, 3, … whichever replica answers.
// Then one replica gets SIGTERM (it drains: no call fails, a 2025 session there is carried on by another
// replica), and another SIGKILL: only calls in flight on it fail, and no count ever starts again from 1.
// Then the same through nginx (test/nginx.mjs): a rolling restart of two replicas under eight clients, with
// not one failed call; and two replicas passing a 2025 MCP session between them for its own principal only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { kilnBin, stderrMatch, tempDir, waitUntil } from './helpers.mjs';
import { haproxyConfig } from './haproxy.mjs';
import { nginxConfig } from './nginx.mjs';

const TOKEN = 'scale-token-0123456789abcdef';
const STATE_KEY = Buffer.alloc(32, 11).toString('base64url');
const MODERN = '2026-07-28';

/** Debian installs the balancers in /usr/sbin, which a user's PATH may not hold. */
const sbin = (name) => (existsSync(`/usr/sbin/${name}`) ? `/usr/sbin/${name}` : name);

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

/** A child process stopped when the test ends (SIGKILL, by its pid; with `group`, its whole process group:
 *  nginx's workers outlive a killed master). */
function start(t, cmd, args, env = {}, group = false) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: group });
  t.after(() => {
    try {
      if (group) process.kill(-child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      // already gone
    }
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  child.output = () => out;
  return child;
}

/** An SDK client through `url` speaking `mode` (MODERN, or 'legacy' for 2025-11-25). */
async function connectClient(url, mode) {
  const c = new Client({ name: 'scale', version: '0' }, { versionNegotiation: { mode: mode === MODERN ? { pin: MODERN } : 'legacy' } });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  return c;
}

/** `n` clients through `url`, alternately 2026 and 2025, each counting in its own named session `<prefix><i>`;
 *  all closed after the test. */
async function countingClients(t, url, n, prefix) {
  const clients = [];
  t.after(async () => { for (const c of clients) await c.client.close().catch(() => {}); });
  for (let i = 0; i < n; i++) {
    const mode = i % 2 === 0 ? MODERN : 'legacy';
    clients.push({ mode, session: `${prefix}${i}`, client: await connectClient(url, mode), counts: [], failures: [] });
  }
  return clients;
}

/** One scale.count call of client `c`: its count kept, or its failure; whether it succeeded. */
async function countOnce(c) {
  try {
    const r = await c.client.callTool({ name: 'scale.count', arguments: {}, _meta: { session: c.session } }, { timeout: 300_000 });
    if (r.isError) throw new Error(r.content[0].text);
    c.counts.push(r.structuredContent.n);
    return true;
  } catch (e) {
    c.failures.push(String(e?.message ?? e).slice(0, 200));
    return false;
  }
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
  const haproxy = start(t, sbin('haproxy'), ['-f', cfg, '-db']);
  const url = `http://127.0.0.1:${lb}/mcp`;
  assert.ok(await waitUntil(async () => (await fetch(`http://127.0.0.1:${lb}/healthz`).then((r) => r.status).catch(() => 0)) === 200, 30_000), haproxy.output());

  // Twenty clients, each counting in its own named session; a 2025 client reconnects when its session is gone.
  const clients = await countingClients(t, url, 20, 'c');
  /** `calls` calls of every client, all clients at once; each failure kept with its client. */
  const round = (calls) => Promise.all(clients.map(async (c) => {
    for (let k = 0; k < calls; k++) if (!(await countOnce(c)) && c.mode !== MODERN) c.client = await connectClient(url, c.mode).catch(() => c.client);
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
    // A 2025 client's MCP session outlives its replica: another replica carries it on from the store.
    assert.deepEqual(c.failures, [], `${c.session} (${c.mode}): no call fails while a replica drains`);
    assert.ok(increasing(c), `${c.session}: its vars survived: ${c.counts.join(',')}`);
  }
  assert.ok(replicas.slice(1).some((r) => /carried on MCP session/.test(r.child.output())), 'the drained replica\'s 2025 sessions were carried on elsewhere');

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
      c.client = await connectClient(url, c.mode);
      return c.client.callTool({ name: 'scale.count', arguments: {}, _meta: { session: c.session } });
    });
    assert.ok(r.structuredContent.n > c.counts[c.counts.length - 1], `${c.session} continues from its last count`);
  }
});

test('two replicas sharing a store: a 2025 MCP session begun on one goes on on the other for its own principal only; DELETE ends it on both', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const redisPort = await freePort();
  const redis = start(t, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]);
  assert.ok(await waitUntil(() => /Ready to accept connections/.test(redis.output()), 30_000), redis.output());
  writeFileSync(join(dir, 'count.ts'), "defineTool({ name: 'scale.count', exposeAsTool: true, handler: async () => { const n = Number(vars.get('n') ?? 0) + 1; vars.set('n', String(n)); return { n }; } });");
  const OTHER = 'other-token-0123456789abcdef';
  const sha = (await import('node:crypto')).createHash('sha256').update(OTHER).digest('hex');
  // idleTtlMs 20 s: a session's record is renewed at most every 5 s, which the DELETE below waits past
  writeFileSync(join(dir, 'kiln.toml'), `extensions = ["./count.ts"]\n[sessions]\nstore = "redis://127.0.0.1:${redisPort}"\nidleTtlMs = 20000\n[principals.other]\ntokenSha256 = "${sha}"\n`);
  const urls = [];
  for (const name of ['a', 'b']) {
    const child = start(t, process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', join(dir, 'kiln.toml')], { KILN_TOKEN: TOKEN, KILN_REPLICA: name });
    urls.push((await stderrMatch(child, /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/))[1]);
  }
  const post = (url, token, body, sid) => fetch(url, {
    method: 'POST', body: JSON.stringify(body),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...(sid ? { 'mcp-session-id': sid } : {}) },
  });
  const init = await post(urls[0], TOKEN, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } });
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  assert.match(sid, /^a\./);
  await (await post(urls[0], TOKEN, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).text();
  const call = async (url, token, id) => {
    const r = await post(url, token, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'scale.count', arguments: {} } }, sid);
    const body = await r.text();
    const data = body.split('\n').find((l) => l.startsWith('data: {'));
    return { status: r.status, n: data && JSON.parse(data.slice(6)).result?.structuredContent?.n };
  };
  assert.deepEqual(await call(urls[0], TOKEN, 1), { status: 200, n: 1 });
  // A later initialize (here one without an id, and with nothing in it) changes nothing of what is kept.
  await (await post(urls[0], TOKEN, { jsonrpc: '2.0', method: 'initialize', params: { garbage: 1 } }, sid)).text();
  assert.equal((await call(urls[1], OTHER, 2)).status, 404, 'another principal cannot carry it on');
  // Two requests at once reach replica b, which does not hold the session, and another principal's beside them.
  const [x, y, z] = await Promise.all([call(urls[1], TOKEN, 3), call(urls[1], TOKEN, 33), call(urls[1], OTHER, 34)]);
  assert.deepEqual([x.status, y.status], [200, 200], 'replica b carries on the session once, and answers both requests');
  assert.deepEqual([x.n, y.n].sort(), [2, 3], 'its vars with it');
  assert.equal(z.status, 404, 'another principal\'s request racing the carrying-on gets nothing of it');
  assert.deepEqual(await call(urls[0], TOKEN, 4), { status: 200, n: 4 });
  // Its client ends it at replica b, after its record is due for renewal: no replica serves it or carries it
  // on again (replica a held it in memory too).
  await new Promise((r) => setTimeout(r, 5500));
  assert.deepEqual(await call(urls[1], TOKEN, 5), { status: 200, n: 5 });
  const del = await fetch(urls[1], { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
  assert.equal(del.status, 200);
  assert.equal((await call(urls[1], TOKEN, 6)).status, 404, 'a session its client ended is not carried on');
  assert.equal((await call(urls[0], TOKEN, 7)).status, 404, 'nor served by the replica that still held it');
  assert.equal((await call(urls[1], TOKEN, 8)).status, 404, 'nor carried on once that one let it go');
});

test('a rolling restart behind nginx: two replicas stopped and started again in turn while 8 clients call; no call fails, no count restarts', { timeout: 600_000 }, async (t) => {
  const dir = tempDir(t);
  const redisPort = await freePort();
  const redis = start(t, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]);
  assert.ok(await waitUntil(() => /Ready to accept connections/.test(redis.output()), 30_000), redis.output());
  const lb = await freePort();
  writeFileSync(join(dir, 'count.ts'), `
defineTool({ name: 'scale.count', exposeAsTool: true, handler: async () => { const n = Number(vars.get('n') ?? 0) + 1; vars.set('n', String(n)); return { n }; } });
defineTool({ name: 'scale.slow', exposeAsTool: true, handler: async ({ args }) => { await new Promise((r) => setTimeout(r, args.ms)); return 'slow done'; } });`);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = ["./count.ts"]\n[sessions]\nstore = "redis://127.0.0.1:${redisPort}"\n[http]\nallowedHosts = ["127.0.0.1:${lb}"]\ndrainNoticeMs = 0\ndrainMs = 10000\n[mcp]\ntaskAfterMs = 0\n`);
  const replicas = [{ name: 'r1', port: await freePort() }, { name: 'r2', port: await freePort() }];
  const up = async (r) => {
    r.child = start(t, process.execPath, [kilnBin, 'mcp', '--http', `127.0.0.1:${r.port}`, '--config', config], { KILN_TOKEN: TOKEN, KILN_STATE_KEY: STATE_KEY, KILN_REPLICA: r.name });
    await stderrMatch(r.child, /at http:\/\/127\.0\.0\.1:\d+\/mcp/);
  };
  for (const r of replicas) await up(r);
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig(lb, replicas, dir));
  const nginx = start(t, sbin('nginx'), ['-c', join(dir, 'nginx.conf'), '-p', dir], {}, true);
  const url = `http://127.0.0.1:${lb}/mcp`;
  assert.ok(await waitUntil(async () => (await fetch(`http://127.0.0.1:${lb}/healthz`).then((r) => r.status).catch(() => 0)) === 200, 30_000), nginx.output());

  // A task through nginx: its id names its replica, and tasks/get reaches it whichever replica round-robin picks.
  const env = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'tasks', version: '0' } };
  const modern = (method, params, name) => fetch(url, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: env } }),
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name },
  }).then((r) => r.json());
  const task = (await modern('tools/call', { name: 'scale.slow', arguments: { ms: 600 } }, 'scale.slow')).result;
  assert.match(task.taskId, /^r[12]\./, JSON.stringify(task));
  const seen = [];
  for (let i = 0; i < 50 && seen.at(-1) !== 'completed'; i++) {
    const got = await modern('tasks/get', { taskId: task.taskId }, task.taskId);
    assert.ok(got.result, `tasks/get #${i}: ${JSON.stringify(got)}`);
    seen.push(got.result.status);
    if (got.result.status !== 'completed') await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(seen.at(-1), 'completed', seen.join(','));

  const clients = await countingClients(t, url, 8, 'n');
  let stop = false;
  const loop = Promise.all(clients.map(async (c) => {
    for (let k = 0; k < 2000 && !stop; k++) await countOnce(c);
  }));
  const total = () => clients.reduce((n, c) => n + c.counts.length + c.failures.length, 0);
  // nginx reloaded with the replicas as they are now; resolves once its old workers (which finish the requests
  // they hold, within worker_shutdown_timeout) are gone.
  const reload = async () => {
    writeFileSync(join(dir, 'nginx.conf'), nginxConfig(lb, replicas, dir));
    const workers = () => readFileSync(`/proc/${nginx.pid}/task/${nginx.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    const old = workers();
    nginx.kill('SIGHUP');
    const alive = (pid) => { try { process.kill(pid, 0); return existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')); } catch { return false; } };
    assert.ok(await waitUntil(() => !old.some(alive) && workers().length > 0, 60_000), 'nginx took the new configuration');
  };
  try {
    // Each replica in turn, as docs/deployment.md says: out of nginx's upstreams, SIGTERM (it drains and exits
    // 0), started again on its port, back in.
    for (const r of replicas) {
      const at = total();
      assert.ok(await waitUntil(() => total() >= at + 40), 'the clients are calling');
      r.down = true;
      await reload();
      r.child.kill('SIGTERM');
      assert.equal((await r.child.exited).code, 0, r.child.output());
      process.stderr.write(`[rolling] ${r.name} stopped after ${total()} calls\n`);
      await up(r);
      r.down = false;
      await reload();
      process.stderr.write(`[rolling] ${r.name} started again after ${total()} calls\n`);
    }
    const at = total();
    assert.ok(await waitUntil(() => total() >= at + 40), 'the clients call on after the restarts');
  } finally {
    stop = true;
    await loop;
  }
  // What nginx logged besides the refused connections it passed on to the next replica.
  const nginxLog = () => { try { return readFileSync(join(dir, 'nginx-error.log'), 'utf8').split('\n').filter((l) => !/Connection refused/.test(l)).join('\n').slice(-3000); } catch { return ''; } };
  for (const c of clients) {
    assert.deepEqual(c.failures, [], `${c.session} (${c.mode}): no call failed during the rolling restart\n${nginxLog()}`);
    assert.deepEqual(c.counts, Array.from({ length: c.counts.length }, (_, i) => i + 1), `${c.session}: every call saw the last one's vars`);
  }
});
