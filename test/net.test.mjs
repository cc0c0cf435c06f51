// allow.net and the guest's web platform, through a real .wasm artifact, against a real HTTP server on
// 127.0.0.1 that records every hit: "refused before the request was made" means the server saw nothing.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { buildFixture, call, kiln, mcp, serveArtifact, tempDir, waitUntil } from './helpers.mjs';
import { startServer } from './http-server.mjs';

let artifact;
before(async () => {
  artifact = await buildFixture('net/web.ts');
});

const serve = (t, toml) => serveArtifact(t, artifact, toml);


test('an allowed host is reached; the response is complete and honest', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.get', { url: `${srv.base}/hello` });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json.status, 200);
  assert.equal(r.json.type, 'basic');
  assert.deepEqual(JSON.parse(r.json.text), { hello: 'world' });
  assert.deepEqual(r.json.headers.filter(([k]) => k === 'set-cookie'), [['set-cookie', 'a=1; Path=/'], ['set-cookie', 'b=2; Path=/']]);
  assert.equal(srv.count('/hello'), 1);
});

test('refused hosts never reach the server: another name, no allow.net, userinfo tricks, other IP forms', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const refused = [
    ['net.localhost', `${srv.base}/hello`, /may not reach 127\.0\.0\.1:\d+: it is not in allow\.net \(localhost\)/],
    ['net.localhost', `http://2130706433:${srv.port}/hello`, /may not reach 127\.0\.0\.1/],
    ['net.localhost', `http://localhost:${srv.port}@127.0.0.1:${srv.port}/hello`, /may not reach 127\.0\.0\.1/],
    ['net.none', `${srv.base}/hello`, /declares no allow\.net, so it has no network access/],
    ['net.get', `http://localhost:${srv.port}/hello`, /may not reach localhost/],
    ['net.get', `file:///etc/passwd`, /only http and https/],
  ];
  for (const [tool, url, expected] of refused) {
    const r = await call(client, tool, { url });
    assert.equal(r.isError, true, `${tool} ${url}`);
    assert.match(r.text, /^PermissionError: /);
    assert.match(r.text, expected);
  }
  assert.equal(srv.hits.length, 0, 'nothing reached the server');
  // the same address in other notations is the allowed host, and does reach it
  for (const host of ['2130706433', '0x7f000001', '0177.0.0.1', '127.1']) {
    const r = await call(client, 'net.get', { url: `http://${host}:${srv.port}/hello` });
    assert.equal(r.json?.status, 200, `${host}: ${r.text}`);
  }
  assert.equal(srv.count('/hello'), 4);
});

test('every redirect hop is checked: a redirect to a refused host fails, and the target is never hit', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const ok = await call(client, 'net.get', { url: `${srv.base}/redirect?to=/hello` });
  assert.equal(ok.json.redirected, true);
  assert.equal(ok.json.url, `${srv.base}/hello`);
  const bad = await call(client, 'net.get', { url: `${srv.base}/redirect?to=${encodeURIComponent(`http://localhost:${srv.port}/hello`)}` });
  assert.equal(bad.isError, true);
  assert.match(bad.text, /^PermissionError: tool "net.get" may not reach localhost/);
  assert.equal(srv.count('/hello'), 1, 'only the allowed redirect reached /hello');
  const manual = await call(client, 'net.get', { url: `${srv.base}/redirect?to=/hello`, init: { redirect: 'manual' } });
  assert.equal(manual.json.status, 302);
  const error = await call(client, 'net.get', { url: `${srv.base}/redirect?to=/hello`, init: { redirect: 'error' } });
  assert.match(error.text, /redirect: "error"/);
});

test('a 50 MiB body streams through the guest with bounded guest memory', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.stream', { url: `${srv.base}/big?mb=50` });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json.total, 50 * 1024 * 1024);
  assert.ok(r.json.chunks > 50, `${r.json.chunks} chunks`);
  assert.ok(r.json.maxHeap < 8 * 1024 * 1024, `QuickJS heap peaked at ${r.json.maxHeap} bytes`);
  assert.ok(r.json.memory < 24 * 1024 * 1024, `the guest's linear memory grew to ${r.json.memory} bytes`);
});

test('aborting mid-body cancels the request on the host; an aborted signal fails before any I/O', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.abortMid', { url: `${srv.base}/endless` });
  assert.equal(r.isError, false, r.text);
  assert.ok(r.json.first >= 1024, `first chunk ${r.json.first} bytes`); // writes may coalesce under load
  assert.equal(r.json.error, 'AbortError');
  assert.equal(r.json.isDomException, true);
  assert.ok(await waitUntil(() => srv.closed.includes('/endless')), 'the server saw the connection closed');
  assert.equal((await call(client, 'net.abortBefore', { url: `${srv.base}/hello` })).json, 'AbortError');
  assert.equal(srv.count('/hello'), 0);
});

test('Promise.all of two slow requests takes about the time of one', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.parallel', { url: `${srv.base}/slow?ms=500` });
  assert.equal(r.isError, false, r.text);
  assert.ok(r.json.elapsedMs >= 490 && r.json.elapsedMs < 900, `two 500 ms requests took ${r.json.elapsedMs} ms`);
});

test('FormData is sent as multipart/form-data that a real parser reads back', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.upload', { url: `${srv.base}/echo` });
  const echo = JSON.parse(r.json.text);
  assert.match(echo.headers['content-type'], /^multipart\/form-data; boundary=/);
  const form = await new Response(Buffer.from(echo.body, 'latin1'), { headers: { 'content-type': echo.headers['content-type'] } }).formData();
  assert.equal(form.get('title'), 'kiln "report"');
  assert.equal(form.get('file').name, 'notes.txt');
  assert.equal(form.get('file').type, 'text/plain');
  assert.equal(await form.get('file').text(), 'line one\nline two\n');
  assert.deepEqual([...new Uint8Array(await form.get('bytes').arrayBuffer())], [0, 1, 2, 255]);
});

test('cookies are shared by fetch and request within a session, and not across sessions', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.cookies', { base: srv.base });
  assert.deepEqual(r.json, { request: 'sid=s3cret', fetch: 'sid=s3cret' });
  const other = await call(client, 'net.get', { url: `${srv.base}/me` }, { session: 'other' });
  assert.equal(other.json.text, '(no cookie)');
});

test('the request client: JSON data, query params, headers, forms', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.request', { base: srv.base });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json.status, 200);
  assert.equal(r.json.echo.method, 'POST');
  assert.equal(r.json.echo.query, '?q=x+y');
  assert.equal(r.json.echo.headers['x-kiln'], 'yes');
  assert.equal(r.json.echo.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(r.json.echo.body), { a: 1 });
  assert.equal(r.json.form, 'name=kiln&n=1');
});

test('the policy follows the running handler: a callee without net is refused while its caller is allowed', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.caller', { url: `${srv.base}/hello` });
  assert.equal(r.isError, false, r.text);
  assert.match(r.json.callee, /tool "net.callee" declares no allow\.net/);
  assert.equal(r.json.own, 200);
  assert.equal(srv.count('/hello'), 1, 'only the caller reached the server');
});

test('operator settings: denyPrivate, emptyMeansUnrestricted, size cap, timeout, concurrency', async (t) => {
  const srv = await startServer(t);
  const deny = await serve(t, '[net]\ndenyPrivate = true\n');
  assert.match((await call(deny, 'net.get', { url: `${srv.base}/hello` })).text, /127\.0\.0\.1 is a private or loopback address, which the operator forbids/);
  assert.match((await call(deny, 'net.localhost', { url: `http://localhost:${srv.port}/hello` })).text, /localhost resolves to .* which the operator forbids/);
  assert.equal(srv.count('/hello'), 0, 'denied before connecting');

  const open = await serve(t, '[net]\nemptyMeansUnrestricted = true\n');
  assert.equal((await call(open, 'net.none', { url: `${srv.base}/hello` })).json.status, 200);

  const small = await serve(t, '[net]\nmaxResponseBytes = 100000\ntimeoutMs = 300\nmaxConcurrent = 2\n');
  assert.match((await call(small, 'net.stream', { url: `${srv.base}/big?mb=1` })).text, /larger than 100000 bytes/);
  const hang = await call(small, 'net.get', { url: `${srv.base}/hang` });
  assert.equal(hang.isError, true);
  assert.match(hang.text, /HttpError: GET 127\.0\.0\.1:\d+: .*(Timeout|timeout)/);
  const many = await call(small, 'net.many', { url: `${srv.base}/hello`, n: 3 }, { session: 'many' });
  assert.deepEqual(many.json.slice(0, 2), ['ok', 'ok']);
  assert.match(many.json[2], /at most 2 requests in flight/);
});

test('web APIs behave as the specs say: Headers, Response, URL, AbortSignal, TextDecoder, Blob, timers, process', async (t) => {
  const dir = tempDir(t);
  const cfg = join(dir, 'kiln.toml');
  writeFileSync(cfg, '[scripting]\nallowEnv = ["KILN_VISIBLE", "KILN_NOT_SET"]\n');
  const { client } = await mcp(t, [artifact, '--config', cfg], { env: { KILN_VISIBLE: 'yes', KILN_HIDDEN: 'no' } });
  const r = (await call(client, 'net.apis')).json;
  assert.deepEqual(r.headers, [['accept', 'a, b'], ['content-type', 'text/plain'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
  assert.equal(r.accept, 'a, b');
  assert.deepEqual(r.setCookie, ['a=1', 'b=2']);
  assert.equal(r.first, 'body');
  assert.equal(r.second, 'TypeError');
  assert.equal(r.bodyUsed, true);
  assert.deepEqual(r.json, { status: 201, ct: 'application/json', body: { x: 1 } });
  assert.equal(r.error, 'error');
  assert.equal(r.redirect, 'https://x.test/');
  assert.deepEqual(r.url, { href: 'https://user:pw@example.com:8443/other?query=new+value#hash', origin: 'https://example.com:8443', host: 'example.com:8443', username: 'user', search: '?query=new+value' });
  assert.deepEqual(r.sig, { aborted: true, reason: 'why' });
  assert.equal(r.streamed, '€');
  assert.equal(r.timed, 'ok');
  assert.deepEqual(r.blob, { size: 4, sliced: 'bc' });
  assert.equal(r.qs, 'a=1+2&b=%26%3D');
  assert.deepEqual(r.process, { env: { KILN_VISIBLE: 'yes' }, arch: 'wasm32', node: null, exit: 'process.exit() is not available to an extension' });
});
