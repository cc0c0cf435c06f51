// Attacks on the server itself: log floods, work left running after a call, huge results and requests,
// overflowing time limits, a result past its deadline. The server must stay up and answer, and the side
// effect (work done after the call, memory) must be absent.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { call, kilnBin, waitUntil } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, rss, serve, serverPid, sources } from './harness.mjs';

const ext = (body) => `const g = globalThis as any;\n${body}\n`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

attack('server-log-flood', 'console.log in a loop until the deadline: the server stays small and keeps answering', async (t) => {
  const dir = sources(t, { 'flood.ts': ext(`
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 3000, handler: () => { for (;;) console.log('x'.repeat(4096) + (g.n = (g.n ?? 0) + 1)); } });
    defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { client, transport, stderr } = await serve(t, [join(dir, 'flood.ts')]);
  const pid = serverPid(transport);
  const before = rss(pid);
  const r = await call(client, 'flood');
  assert.equal(r.isError, true);
  assert.match(r.text, /TimeoutError/);
  assert.equal((await call(client, 'ping')).json, 'pong');
  assert.ok(await waitUntil(() => /dropped \d+ log line/.test(stderr())), 'the drop was reported');
  const grown = rss(pid) - before;
  assert.ok(grown < 200 * 1024 * 1024, `the server grew by ${grown} bytes`);
  assert.ok(stderr().length < 16 * 1024 * 1024, `stderr carried ${stderr().length} characters`);
});

attack('server-log-huge-line', 'one 50 MB console.log line is cut, not copied whole to stderr', async (t) => {
  const dir = sources(t, { 'line.ts': ext(`
    defineTool({ name: 'line', exposeAsTool: true, handler: () => { console.log('y'.repeat(50 * 1024 * 1024)); return 'done'; } });`) });
  const { client, stderr } = await serve(t, [join(dir, 'line.ts')], { toml: '[limits]\nmemoryLimitBytes = 268435456\n' });
  assert.equal((await call(client, 'line')).json, 'done');
  assert.ok(await waitUntil(() => /more characters cut/.test(stderr())));
  assert.ok(stderr().length < 1024 * 1024, `stderr carried ${stderr().length} characters`);
});

attack('server-timers-after-return', 'timers a handler leaves behind never run after its call returned', async (t) => {
  const dir = sources(t, { 'tick.ts': ext(`
    defineTool({ name: 'start', exposeAsTool: true, handler: () => {
      const tick = () => { vars.set('ticks', String(Number(vars.get('ticks') ?? 0) + 1)); setTimeout(tick, 0); };
      for (let i = 0; i < 50; i++) setTimeout(tick, 0);
      return 'started';
    } });
    defineTool({ name: 'ticks', exposeAsTool: true, handler: () => Number(vars.get('ticks') ?? 0) });`) });
  const { client } = await serve(t, [join(dir, 'tick.ts')]);
  assert.equal((await call(client, 'start')).json, 'started');
  const first = (await call(client, 'ticks')).json;
  await sleep(500);
  assert.equal((await call(client, 'ticks')).json, first, 'no timer ran between the calls');
  assert.equal(first, 0, 'no timer ran after the handler returned');
});

attack('server-spin-after-return', 'six sessions leave spinning timer chains behind: none of them runs after the call', async (t) => {
  const dir = sources(t, { 'spin.ts': ext(`
    defineTool({ name: 'spin', exposeAsTool: true, handler: () => {
      const burn = () => { const end = Date.now() + 50; while (Date.now() < end) g.x = (g.x ?? 0) + 1; vars.set('burns', String(Number(vars.get('burns') ?? 0) + 1)); setTimeout(burn, 0); };
      setTimeout(burn, 0);
      return 'ok';
    } });
    defineTool({ name: 'burns', exposeAsTool: true, handler: () => Number(vars.get('burns') ?? 0) });`) });
  const { client } = await serve(t, [join(dir, 'spin.ts')]);
  const sessions = ['s1', 's2', 's3', 's4', 's5', 's6'];
  for (const s of sessions) assert.equal((await call(client, 'spin', {}, { session: s })).json, 'ok');
  await sleep(400);
  for (const s of sessions) assert.equal((await call(client, 'burns', {}, { session: s })).json, 0, `session ${s} burned CPU after its call`);
});

attack('server-retry-pingpong', 'a handler that retries a refused operation forever after returning does nothing', async (t) => {
  const dir = sources(t, { 'retry.ts': ext(`
    defineTool({ name: 'retry', exposeAsTool: true, handler: () => {
      const again = () => { vars.set('tries', String(Number(vars.get('tries') ?? 0) + 1)); plugins['nope']({}).catch(again); };
      again();
      return 'ok';
    } });
    defineTool({ name: 'tries', exposeAsTool: true, handler: () => Number(vars.get('tries') ?? 0) });`) });
  const { client } = await serve(t, [join(dir, 'retry.ts')]);
  assert.equal((await call(client, 'retry')).json, 'ok');
  const first = (await call(client, 'tries')).json;
  await sleep(300);
  assert.equal((await call(client, 'tries')).json, first);
});

attack('server-fetch-after-return', 'a fetch left in flight when the handler returns is aborted: the server sees the connection close', async (t) => {
  const srv = await startServer(t);
  const dir = sources(t, { 'bg.ts': ext(`
    defineTool({ name: 'bg', exposeAsTool: true, allow: { net: ['127.0.0.1'] }, handler: async ({ args }) => {
      const r = await fetch(args.url); // the head has arrived: the server is streaming the body
      r.text().catch(() => {}); // reading, and still reading when the handler returns
      await new Promise((done) => setTimeout(done, 50));
      return 'returned';
    } });`) });
  const { client } = await serve(t, [join(dir, 'bg.ts')], { toml: '[net]\ndenyPrivate = false\n' });
  assert.equal((await call(client, 'bg', { url: `${srv.base}/endless` })).json, 'returned');
  assert.ok(await waitUntil(() => srv.closed.includes('/endless'), 5000), 'the response was still being read after the call');
});

attack('server-delayed-fetch-after-return', 'a request scheduled by a timer after the handler returned never reaches the network', async (t) => {
  const srv = await startServer(t);
  const dir = sources(t, { 'later.ts': ext(`
    defineTool({ name: 'later', exposeAsTool: true, allow: { net: ['127.0.0.1'] }, handler: ({ args }) => {
      setTimeout(() => fetch(args.url).catch(() => {}), 50);
      return 'returned';
    } });`) });
  const { client } = await serve(t, [join(dir, 'later.ts')], { toml: '[net]\ndenyPrivate = false\n' });
  assert.equal((await call(client, 'later', { url: `${srv.base}/hello` })).json, 'returned');
  await sleep(400);
  assert.equal(srv.count('/hello'), 0, 'the request was sent after the call ended');
});

attack('server-huge-result', 'a 12 MiB result is refused with the setting named; the client stays connected', async (t) => {
  const dir = sources(t, { 'big.ts': ext(`
    defineTool({ name: 'big', exposeAsTool: true, handler: () => 'z'.repeat(12 * 1024 * 1024) });
    defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { client } = await serve(t, [join(dir, 'big.ts')]);
  const r = await call(client, 'big');
  assert.equal(r.isError, true);
  assert.match(r.text, /^ResultTooLargeError: tool "big" returned \d+ bytes of content; results are limited to 4194304 bytes \(\[limits\] maxResultBytes/);
  assert.equal((await call(client, 'ping')).json, 'pong');
});

attack('server-huge-error', 'a 20 MB error message is cut; the server stays up', async (t) => {
  const dir = sources(t, { 'err.ts': ext(`
    defineTool({ name: 'err', exposeAsTool: true, handler: () => { throw new Error('e'.repeat(20 * 1024 * 1024)); } });
    defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { client } = await serve(t, [join(dir, 'err.ts')], { toml: '[limits]\nmemoryLimitBytes = 268435456\n' });
  const r = await call(client, 'err');
  assert.equal(r.isError, true);
  assert.ok(r.text.length < 100 * 1024, `error text of ${r.text.length} characters`);
  assert.match(r.text, /more characters cut/);
  assert.equal((await call(client, 'ping')).json, 'pong');
});

attack('server-huge-script-logs', 'run_script logging 100k lines returns a bounded result', async (t) => {
  const dir = sources(t, { 'p.ts': ext(`defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { client } = await serve(t, [join(dir, 'p.ts')]);
  const r = await call(client, 'run_script', { code: 'for (let i = 0; i < 100000; i++) console.log("line " + i); 1' });
  assert.equal(r.isError, false, r.text.slice(0, 300));
  assert.equal(r.json.status, 'ok');
  assert.ok(r.json.logs.length <= 1001, `${r.json.logs.length} log lines kept`);
});

attack('server-timeout-overflow', 'timeoutMs past 2^31 does not make every call fail at once', async (t) => {
  const dir = sources(t, { 'long.ts': ext(`
    defineTool({ name: 'long', exposeAsTool: true, timeoutMs: 2 ** 31 + 5, handler: async () => { await new Promise((r) => setTimeout(r, 50)); return 'waited'; } });`) });
  const { client } = await serve(t, [join(dir, 'long.ts')]);
  const r = await call(client, 'long');
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, 'waited');
});

for (const isolation of ['inline', 'worker']) {
  attack(`server-native-overrun-${isolation}`, `a native call past the deadline (${isolation} isolation) is a TimeoutError, never a late success`, async (t) => {
    const dir = sources(t, { 'sort.ts': ext(`
      defineTool({ name: 'sort', exposeAsTool: true, timeoutMs: 100, handler: () => {
        // Built and sorted by native code only: no bytecode runs, so the interrupt is never polled.
        const a = new Float64Array(JSON.parse('[' + '3.1,2.7,9.9,1.2,8.8,0.5,7.7,4.4,'.repeat(500_000) + '0]'));
        a.sort();
        return 'sorted';
      } });
      defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
    const { client } = await serve(t, [join(dir, 'sort.ts')], { toml: `[limits]\nmemoryLimitBytes = 268435456\n[sessions]\nisolation = "${isolation}"\n` });
    const r = await call(client, 'sort');
    assert.equal(r.isError, true, `returned ${r.text}`);
    assert.match(r.text, /TimeoutError/);
    assert.equal((await call(client, 'ping')).json, 'pong');
  });
}

/** A raw JSON-RPC client over stdio (no SDK): send lines, collect the replies by id. */
async function rawServer(t, paths) {
  const child = spawn(process.execPath, [kilnBin, 'mcp', ...paths], { stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const replies = new Map();
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const m = JSON.parse(line);
        replies.set(m.id, m);
      } catch {}
    }
  });
  child.stderr.resume();
  const send = (m) => child.stdin.write(typeof m === 'string' ? m : JSON.stringify(m) + '\n');
  const reply = async (id) => {
    assert.ok(await waitUntil(() => replies.has(id), 20_000), `no reply to request ${id}`);
    return replies.get(id);
  };
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  await reply(1);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { child, send, reply };
}

attack('server-huge-request-line', 'a 12 MiB request line gets an error reply and the server keeps serving', async (t) => {
  const dir = sources(t, { 'p.ts': ext(`defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { send, reply } = await rawServer(t, [join(dir, 'p.ts')]);
  send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'ping', arguments: { pad: 'p'.repeat(12 * 1024 * 1024) } } }) + '\n');
  const refused = await reply(7);
  assert.equal(refused.error?.code, -32600);
  assert.match(refused.error.message, /at most 8388608 bytes/);
  send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'ping', arguments: {} } });
  const ok = await reply(8);
  assert.equal(ok.result?.content?.[0]?.text, 'pong');
});

attack('server-huge-request-split', 'a huge line sent in many small writes, then a normal one: only the huge one is refused', async (t) => {
  const dir = sources(t, { 'p.ts': ext(`defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });`) });
  const { send, reply } = await rawServer(t, [join(dir, 'p.ts')]);
  const line = JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'tools/call', params: { name: 'ping', arguments: { pad: 'q'.repeat(9 * 1024 * 1024) } } }) + '\n';
  for (let i = 0; i < line.length; i += 65536) send(line.slice(i, i + 65536));
  send({ jsonrpc: '2.0', id: 'small', method: 'tools/call', params: { name: 'ping', arguments: {} } });
  assert.equal((await reply('big')).error?.code, -32600);
  assert.equal((await reply('small')).result?.content?.[0]?.text, 'pong');
});
