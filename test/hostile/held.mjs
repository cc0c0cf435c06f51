// Classes of attack that held when kiln was first attacked from outside, kept here so they stay held: private
// addresses in every spelling, redirects to refused places, header smuggling, response and output caps,
// abort storms, hostile config keys and malformed JSON-RPC. A local 127.0.0.1 server's request log proves
// that a refused request never arrived.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { call, kilnBin, waitUntil } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, sources } from './harness.mjs';

const NET = `defineTool({ name: 'n.get', exposeAsTool: true, allow: { net: ['127.0.0.1', 'localhost'] }, handler: async ({ args }: any) => {
  const r = await fetch(args.url, args.init ?? {}); return { status: r.status, text: (await r.text()).slice(0, 200) }; } });
defineTool({ name: 'n.any', exposeAsTool: true, handler: async ({ args }: any) => { const r = await fetch(args.url); return r.status; } });
defineTool({ name: 'n.storm', exposeAsTool: true, allow: { net: ['127.0.0.1'] }, handler: async ({ args }: any) => {
  const all = [];
  for (let i = 0; i < 300; i++) { const c = new AbortController(); all.push(fetch(args.url, { signal: c.signal }).catch((e) => e.name)); c.abort(); }
  for (let i = 0; i < 2000; i++) { const c = new AbortController(); c.abort(); c.abort(); }
  return (await Promise.all(all)).filter((x) => x === 'AbortError').length;
} });`;
const netServer = async (t, toml) => (await serve(t, [join(sources(t, { 'n.ts': NET }), 'n.ts')], { toml })).client;

const SPELLINGS = ['127.0.0.1', '2130706433', '0x7f000001', '0177.0.0.1', '127.1', '0x7f.1', '[::ffff:127.0.0.1]', '[::1]', 'localhost', '0.0.0.0'];
for (const host of SPELLINGS) {
  attack(`held-private-${host.replace(/[^a-z0-9]/gi, '_')}`, `denyPrivate refuses http://${host}:port even when the manifest allows everything`, async (t) => {
    const srv = await startServer(t);
    const client = await netServer(t, '[net]\nemptyMeansUnrestricted = true\ndenyPrivate = true\n');
    const r = await call(client, 'n.any', { url: `http://${host}:${srv.port}/hello` });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /PermissionError|private|HttpError|ECONNREFUSED/);
    assert.equal(srv.hits.length, 0, 'the request reached the server');
  });
}

for (const [id, to] of [['other-host', 'http://localhost:PORT/hello'], ['protocol-relative', '//localhost:PORT/hello'], ['file', 'file:///etc/passwd'], ['data', 'data:text/plain,hi']]) {
  attack(`held-redirect-${id}`, `a redirect to a refused place (${id}) is not followed`, async (t) => {
    const srv = await startServer(t);
    const { client } = await serve(t, [join(sources(t, { 'n.ts': NET.replace("['127.0.0.1', 'localhost']", "['127.0.0.1']") }), 'n.ts')]);
    const r = await call(client, 'n.get', { url: `${srv.base}/redirect?to=${encodeURIComponent(to.replace('PORT', srv.port))}` });
    assert.equal(r.isError, true, r.text);
    assert.equal(srv.count('/hello'), 0, 'the redirect target was reached');
  });
}

attack('held-header-crlf', 'CRLF in a header value cannot add a header', async (t) => {
  const srv = await startServer(t);
  const client = await netServer(t);
  const r = await call(client, 'n.get', { url: `${srv.base}/echo`, init: { headers: { 'x-a': 'v\r\nx-injected: 1' } } });
  assert.equal(r.isError, true, r.text);
  assert.ok(srv.hits.every((h) => !('x-injected' in h.headers)));
});

attack('held-header-host', 'a guest cannot set Host, Content-Length or Transfer-Encoding', async (t) => {
  const srv = await startServer(t);
  const client = await netServer(t);
  await call(client, 'n.get', { url: `${srv.base}/echo`, init: { method: 'POST', body: 'abc', headers: { host: 'evil.test', 'content-length': '999', 'transfer-encoding': 'chunked' } } });
  const hit = srv.hits.find((h) => h.path === '/echo');
  assert.ok(hit, 'the request was sent');
  assert.equal(hit.headers.host, `127.0.0.1:${srv.port}`);
  assert.notEqual(hit.headers['content-length'], '999');
});

attack('held-response-cap', 'a response past [net] maxResponseBytes is cut off', async (t) => {
  const srv = await startServer(t);
  const client = await netServer(t, '[net]\nmaxResponseBytes = 1048576\n');
  const r = await call(client, 'n.get', { url: `${srv.base}/big?mb=8` });
  assert.equal(r.isError, true);
  assert.match(r.text, /larger than 1048576 bytes/);
});

attack('held-abort-storm', 'hundreds of aborted fetches and thousands of aborts: the server stays up', async (t) => {
  const srv = await startServer(t);
  const client = await netServer(t);
  const r = await call(client, 'n.storm', { url: `${srv.base}/slow?ms=2000` });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, 300);
  assert.equal((await call(client, 'n.get', { url: `${srv.base}/hello` })).json.status, 200);
});

attack('held-config-proto', 'prototype keys in kiln.toml tables neither crash nor grant', async (t) => {
  const marker = `held-${process.pid}`;
  const dir = sources(t, { 'c.ts': `defineTool({ name: 'c.run', exposeAsTool: true, allow: { commands: { hi: { run: ['echo', '${marker}'] } } }, handler: ({ commands }: any) => commands.run('hi') });` });
  const { client } = await serve(t, [dir], { toml: `[commands.extensions]\n"__proto__" = ["hi"]\n"constructor" = ["hi"]\n"${join(dir, 'c.ts')}" = []\n` });
  const r = await call(client, 'c.run');
  assert.equal(r.isError, true);
  assert.match(r.text, /declares commands "hi", but the operator has not granted it/);
});

attack('held-malformed-jsonrpc', 'garbage lines, wrong types and unknown methods get errors; the server keeps serving', async (t) => {
  const dir = sources(t, { 'p.ts': `defineTool({ name: 'p.ping', exposeAsTool: true, handler: () => 'pong' });` });
  const child = spawn(process.execPath, [kilnBin, 'mcp', dir], { stdio: ['pipe', 'pipe', 'ignore'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const send = (line) => child.stdin.write(line + '\n');
  send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
  send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  for (const junk of ['not json', '{"jsonrpc":"2.0"', '[]', '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', '{"jsonrpc":"2.0","id":2,"method":"no/such"}',
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":42}}', `{"jsonrpc":"2.0","id":${'9'.repeat(400)},"method":"tools/list"}`, '\u0000\u0001\u0002']) send(junk);
  send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'p.ping', arguments: {} } }));
  assert.ok(await waitUntil(() => /"id":4,"result"|"id":4.*"pong"|"text":"pong".*"id":4/.test(out), 20000), out.slice(-500));
  assert.ok(/"id":2,.*"error"|"id":2,"error"/.test(out), 'the unknown method got an error');
  assert.equal(child.exitCode, null, 'the server is still running');
});
