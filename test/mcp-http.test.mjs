// `kiln mcp --http`: Streamable HTTP with the real SDK client, against a real server process on 127.0.0.1.
// The bearer token, the Host and Origin checks (DNS-rebinding defence) and the body limit are attacked with
// raw requests; each MCP session is its own kiln session; cancellation works over HTTP too; an address that
// is not loopback is refused without a token.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { kiln, kilnBin, tempDir, waitUntil } from './helpers.mjs';

const TOKEN = 'test-token-0123456789abcdef';
const SOURCE = `
let calls = 0;
defineTool({ name: 'h.count', exposeAsTool: true, handler: () => ({ calls: ++calls, seen: vars.get('seen') ?? null }) });
defineTool({ name: 'h.remember', exposeAsTool: true, handler: ({ args }) => { vars.set('seen', args.v); return 'ok'; } });
defineTool({ name: 'h.spin', exposeAsTool: true, timeoutMs: 600000, handler: () => { vars.set('spinning', 'yes'); for (;;) {} } });
`;

/** A `kiln mcp --http 127.0.0.1:0` process; resolves with its URL once it listens. */
async function server(t, env = { KILN_TOKEN: TOKEN }) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'h.ts'), SOURCE);
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', dir], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  assert.ok(await waitUntil(() => /at (http:\/\/\S+\/mcp)/.test(stderr), 20_000), stderr);
  const url = /at (http:\/\/\S+\/mcp)/.exec(stderr)[1];
  return { url, child, stderr: () => stderr };
}

async function client(t, url, token = TOKEN) {
  const c = new Client({ name: 'kiln-http-test', version: '0.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  t.after(() => c.close());
  return c;
}

/** A raw POST of an initialize request with the given headers; resolves with the status code (`whole`: with
 *  the body and the WWW-Authenticate header too). */
function rawInitialize(url, headers, padding = 0, whole = false) {
  const u = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }) + ' '.repeat(padding);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream', host: u.host, 'content-length': Buffer.byteLength(body), ...headers,
    } }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8').on('data', (d) => { text += d; }).on('end', () => resolve(whole ? { status: res.statusCode, text: JSON.parse(text).error.message, challenge: res.headers['www-authenticate'] } : res.statusCode));
    });
    req.on('error', (e) => { if (!answered) reject(e); }); // the server may answer a refused body before reading it
    req.end(body);
  });
}

test('the token, the Host and the Origin are checked before anything else', async (t) => {
  const { url } = await server(t);
  const port = new URL(url).port;
  assert.equal(await rawInitialize(url, {}), 401, 'no token');
  assert.equal(await rawInitialize(url, { authorization: 'Bearer wrong-token-0123456789abcde' }), 401, 'wrong token');
  assert.equal(await rawInitialize(url, { authorization: `Basic ${TOKEN}` }), 401, 'another scheme');
  assert.equal(await rawInitialize(url, { authorization: `Bearer ${TOKEN}`, host: `evil.example:${port}` }), 403, 'a rebinding Host');
  assert.equal(await rawInitialize(url, { authorization: `Bearer ${TOKEN}`, host: `localhost:${Number(port) + 1}` }), 403, 'another port');
  assert.equal(await rawInitialize(url, { authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' }), 403, 'a foreign Origin');
  assert.equal(await rawInitialize(url, { authorization: `Bearer ${TOKEN}` }, 5 * 1024 * 1024), 413, 'a huge body');
  assert.equal(await rawInitialize(url, { authorization: `Bearer ${TOKEN}`, host: `localhost:${port}` }), 200, 'a loopback alias');
  await assert.rejects(client(t, url, 'wrong-token-0123456789abcde'));
  // each refusal says which it was: no token, another scheme, a token that is not this server's
  const none = await rawInitialize(url, {}, 0, true);
  assert.match(none.text, /a bearer token is required/);
  assert.equal(none.challenge, 'Bearer');
  const wrong = await rawInitialize(url, { authorization: 'Bearer wrong-token-0123456789abcde' }, 0, true);
  assert.match(wrong.text, /the bearer token is not one this server takes \(KILN_TOKEN or \[http\] token, a \[principals\.\*\] token/);
  assert.doesNotMatch(wrong.text, /wrong-token/, 'the token given is not echoed');
  assert.equal(wrong.challenge, 'Bearer error="invalid_token"');
  assert.match((await rawInitialize(url, { authorization: `Basic ${TOKEN}` }, 0, true)).text, /must be "Bearer <token>"/);
  const c = await client(t, url);
  assert.ok((await c.listTools()).tools.some((x) => x.name === 'h.count'));
});

test('each MCP session is its own kiln session: globals and vars are not shared between clients', async (t) => {
  const { url } = await server(t);
  const a = await client(t, url), b = await client(t, url);
  assert.equal((await a.callTool({ name: 'h.remember', arguments: { v: 'from a' } })).content[0].text, 'ok');
  assert.deepEqual((await a.callTool({ name: 'h.count', arguments: {} })).structuredContent, { calls: 1, seen: 'from a' });
  assert.deepEqual((await b.callTool({ name: 'h.count', arguments: {} })).structuredContent, { calls: 1, seen: null });
  assert.deepEqual((await a.callTool({ name: 'h.count', arguments: {} })).structuredContent, { calls: 2, seen: 'from a' });
});

test('cancelling over HTTP stops a spinning guest; the session answers again', { timeout: 60_000 }, async (t) => {
  const { url } = await server(t);
  const c = await client(t, url);
  const ac = new AbortController();
  const spinning = c.callTool({ name: 'h.spin', arguments: {} }, { signal: ac.signal, timeout: 120_000 }).catch((e) => e);
  await new Promise((r) => setTimeout(r, 500));
  ac.abort('stop');
  await spinning;
  // Without cancellation this would wait for the 10-minute deadline (the test's own bound catches that).
  assert.deepEqual((await c.callTool({ name: 'h.count', arguments: {} })).structuredContent, { calls: 1, seen: null });
});

test('a malformed --http is a usage error (exit 2), found before any extension loads', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'h.ts'), SOURCE);
  for (const bad of ['8080', 'localhost', '127.0.0.1:99999', 'http://127.0.0.1:8080']) {
    const r = await kiln(['mcp', '--http', bad, dir]);
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /--http takes HOST:PORT \(e\.g\. 127\.0\.0\.1:8080\)/);
    assert.doesNotMatch(r.stderr, /serving|building/, 'nothing was loaded');
  }
});

test('a non-loopback address without a token is refused; on loopback kiln makes one and prints it', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'h.ts'), SOURCE);
  const r = await kiln(['mcp', '--http', '0.0.0.0:0', dir], { env: { KILN_TOKEN: '' } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /a non-loopback address needs bearer tokens: set KILN_TOKEN or \[http\] token/);
  const { url, stderr } = await server(t, { KILN_TOKEN: '' });
  const token = /this run's token: ([\w-]+)/.exec(stderr())[1];
  const c = await client(t, url, token);
  assert.ok((await c.listTools()).tools.length > 0);
});
