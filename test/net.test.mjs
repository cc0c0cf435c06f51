// allow.net and the guest's web platform, through a real .wasm artifact, against a real HTTP server on
// 127.0.0.1 that records every hit: "refused before the request was made" means the server saw nothing.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
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

test('a response to HEAD, or with status 204 or 304, has a null body, as in Node; others a stream', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const get = async (path, init) => (await call(client, 'net.get', { url: `${srv.base}${path}`, init })).json;
  const seen = [await get('/status?code=204'), await get('/status?code=304'), await get('/hello', { method: 'HEAD' }), await get('/status?code=200')];
  assert.deepEqual(seen.map((r) => [r.status, r.nullBody, r.text]), [[204, true, ''], [304, true, ''], [200, true, ''], [200, false, 'a body']]);
  // Node's fetch, on the same server:
  const node = await Promise.all([['/status?code=204'], ['/status?code=304'], ['/hello', { method: 'HEAD' }], ['/status?code=200']]
    .map(async ([path, init]) => { const r = await fetch(`${srv.base}${path}`, init); return [r.status, r.body === null, await r.text()]; }));
  assert.deepEqual(seen.map((r) => [r.status, r.nullBody, r.text]), node);
  // A method that is a token but not one of the standard six keeps its case on the Request, and goes out
  // upper-cased; a hyphen is a token character (M-SEARCH).
  const echoed = await get('/echo', { method: 'm-search' });
  assert.equal(JSON.parse(echoed.text).method, 'M-SEARCH', echoed.text);
});

test('response headers with bytes above ASCII arrive as ByteStrings: a UTF-8 file name as Node\'s fetch shows it', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const r = await call(client, 'net.get', { url: `${srv.base}/bytes-headers` });
  assert.equal(r.isError, false, r.text); // the guest's Headers (ByteStrings only) accepted the response
  assert.equal(r.json.text, 'ok');
  const node = await fetch(`${srv.base}/bytes-headers`);
  const header = (pairs, name) => pairs.find(([k]) => k === name)?.[1];
  assert.equal(header(r.json.headers, 'content-disposition'), node.headers.get('content-disposition'));
  assert.equal(header(r.json.headers, 'content-disposition'), 'attachment; filename="cafÃ© â\u0082¬.txt"');
  // The one difference from Node (docs/extensions.md): a byte that is not UTF-8 reaches the host as U+FFFD
  // (undici's request() decodes UTF-8), so latin1 "café" shows its last byte as "ï¿½" where Node shows "é".
  assert.equal(node.headers.get('x-latin'), 'café');
  assert.equal(header(r.json.headers, 'x-latin'), 'caf\u00ef\u00bf\u00bd');
});

test('refused hosts never reach the server: another name, no allow.net, userinfo tricks, other IP forms', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const refused = [
    ['net.localhost', `${srv.base}/hello`, /may not reach 127\.0\.0\.1:\d+: it is not in allow\.net \(localhost\)/],
    ['net.localhost', `http://2130706433:${srv.port}/hello`, /may not reach 127\.0\.0\.1/],
    ['net.none', `${srv.base}/hello`, /declares no allow\.net, so it has no network access/],
    ['net.get', `http://localhost:${srv.port}/hello`, /may not reach localhost/],
  ];
  for (const [tool, url, expected] of refused) {
    const r = await call(client, tool, { url });
    assert.equal(r.isError, true, `${tool} ${url}`);
    assert.match(r.text, /^PermissionError: /);
    assert.match(r.text, expected);
  }
  // What Node's fetch refuses itself (a URL with credentials, a scheme it does not fetch) is a TypeError in the
  // guest too, before the request reaches the host's policy (which would refuse it as well).
  const typeErrors = [
    ['net.localhost', `http://localhost:${srv.port}@127.0.0.1:${srv.port}/hello`, /^TypeError: Request cannot be constructed from a URL that includes credentials/],
    ['net.get', `http://u:p@127.0.0.1:${srv.port}/hello`, /^TypeError: Request cannot be constructed from a URL that includes credentials/],
    ['net.get', `file:///etc/passwd`, /^TypeError: fetch failed.*only http, https and data: URLs can be fetched, not file:/s],
  ];
  for (const [tool, url, expected] of typeErrors) {
    const r = await call(client, tool, { url });
    assert.equal(r.isError, true, `${tool} ${url}`);
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

test('Promise.all of two requests runs them at the same time on the host', async (t) => {
  // The server answers neither request until both have arrived: run one after the other, they never finish.
  const srv = await startServer(t);
  const client = await serve(t, '[limits]\ntimeoutMs = 10000\n');
  const r = await call(client, 'net.parallel', { url: `${srv.base}/barrier?key=p&n=2` });
  assert.equal(r.isError, false, r.text);
  assert.deepEqual([r.json.a, r.json.b], ['met', 'met']);
  assert.equal(srv.count('/barrier'), 2);
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
  // KILN_VISIBLE: declared (allow.env) and allowed; KILN_HIDDEN: declared, not allowed; KILN_UNDECLARED: allowed,
  // declared by no tool of the file; KILN_NOT_SET: allowed, not set. Only the first shows.
  writeFileSync(cfg, '[scripting]\nallowEnv = ["KILN_VISIBLE", "KILN_NOT_SET", "KILN_UNDECLARED"]\n');
  const { client } = await mcp(t, [artifact, '--config', cfg], { env: { KILN_VISIBLE: 'yes', KILN_HIDDEN: 'no', KILN_UNDECLARED: 'no' } });
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

test('every request carries Node\'s fetch\'s default headers unless the guest set them; Accept-Encoding is always the host\'s', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const plain = await call(client, 'net.get', { url: `${srv.base}/echo` });
  assert.equal(plain.isError, false, plain.text);
  const sent = JSON.parse(plain.json.text).headers;
  // test/web-platform.test.mjs compares them with what Node 20's fetch sends
  assert.equal(sent['user-agent'], 'node');
  assert.equal(sent.accept, '*/*');
  assert.equal(sent['accept-language'], '*');
  assert.equal(sent['sec-fetch-mode'], 'cors');
  assert.equal(sent['accept-encoding'], 'gzip, deflate');
  const own = await call(client, 'net.get', { url: `${srv.base}/echo`, init: { headers: { 'User-Agent': 'mine/1', accept: 'application/json', 'accept-encoding': 'identity' } } });
  const ownSent = JSON.parse(own.json.text).headers;
  assert.equal(ownSent['user-agent'], 'mine/1');
  assert.equal(ownSent.accept, 'application/json');
  assert.equal(ownSent['accept-encoding'], 'gzip, deflate', 'the host decodes what it asked for, so it alone sets Accept-Encoding');
});

test('gzip, deflate, br and stacked encodings are decoded before the guest reads the body; the header stays', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  for (const enc of ['gzip', 'deflate', 'br', 'gzip,br']) {
    const r = await call(client, 'net.get', { url: `${srv.base}/compressed?enc=${enc}` });
    assert.equal(r.isError, false, `${enc}: ${r.text}`);
    assert.equal(r.json.text, 'compressed héllo '.repeat(200), enc);
    assert.deepEqual(r.json.headers.find(([k]) => k === 'content-encoding'), ['content-encoding', enc.replace(',', ', ')]);
  }
});

test('a response listing more than five content-codings is refused before any decoder is made; five decode', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const five = await call(client, 'net.get', { url: `${srv.base}/codings?n=5` });
  assert.equal(five.isError, false, five.text);
  assert.equal(five.json.text, 'layered');
  const many = await call(client, 'net.get', { url: `${srv.base}/codings?n=2000` });
  assert.equal(many.isError, true);
  assert.match(many.text, /TypeError: fetch failed \(cause: HttpError: too many content-encodings in the response: 2000, at most 5\)/);
  const lines = await call(client, 'net.get', { url: `${srv.base}/codings?n=3&lines=1` });
  assert.equal(lines.json.text, 'layered', 'three Content-Encoding lines decode as a list of three');
  const manyLines = await call(client, 'net.get', { url: `${srv.base}/codings?n=40&lines=1` });
  assert.match(manyLines.text, /too many content-encodings in the response: 40, at most 5/);
  assert.equal((await call(client, 'net.get', { url: `${srv.base}/hello` })).isError, false, 'the session goes on');
});

test('a session\'s cookie jar keeps at most 180 cookies for a domain, dropping the oldest, and none past 4096 bytes', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  for (const r of [1, 2, 3]) assert.equal((await call(client, 'net.get', { url: `${srv.base}/cookies?n=150&r=${r}&big=1` })).isError, false);
  const sent = (await call(client, 'net.get', { url: `${srv.base}/me` })).json.text.split('; ');
  assert.equal(sent.length, 180, 'the newest 180 of 450');
  assert.ok(sent.includes('c3_149=1') && sent.includes('c2_120=1') && !sent.includes('c2_119=1') && !sent.some((c) => c.startsWith('c1_')), sent.slice(0, 3).join(', '));
  assert.ok(!sent.some((c) => c.startsWith('big')), 'a 5,000-byte cookie is not kept');
});

test('a decompression bomb is stopped at maxResponseBytes of decoded bytes', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t, '[net]\nmaxResponseBytes = 1048576\n');
  const r = await call(client, 'net.get', { url: `${srv.base}/bomb?mb=256` });
  assert.equal(r.isError, true);
  assert.match(r.text, /larger than 1048576 bytes .*maxResponseBytes/);
  const ok = await call(client, 'net.get', { url: `${srv.base}/hello` });
  assert.equal(ok.isError, false, 'the session goes on');
});

test('a request that cannot be made rejects with TypeError("fetch failed") and the detail as its cause; refusals stay PermissionError', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const closedPort = await new Promise((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  const refused = await call(client, 'net.failure', { url: `http://127.0.0.1:${closedPort}/` });
  assert.equal(refused.json.name, 'TypeError');
  assert.equal(refused.json.isTypeError, true);
  assert.equal(refused.json.message, 'fetch failed');
  assert.match(refused.json.cause.message, /ECONNREFUSED/);
  const denied = await call(client, 'net.failure', { url: 'http://example.invalid/' });
  assert.equal(denied.json.name, 'PermissionError');
  assert.equal(srv.hits.length, 0);
});

test('data: URLs are answered in the guest, without allow.net and without the network', async (t) => {
  const srv = await startServer(t);
  const client = await serve(t);
  const text = await call(client, 'net.none', { url: 'data:,hello%20world' });
  assert.equal(text.isError, false, text.text);
  assert.equal(text.json.text, 'hello world');
  assert.deepEqual(text.json.headers, [['content-type', 'text/plain;charset=US-ASCII']]);
  const b64 = await call(client, 'net.none', { url: 'data:application/json;base64,eyJhIjoxfQ==' });
  assert.equal(b64.json.text, '{"a":1}');
  assert.deepEqual(b64.json.headers, [['content-type', 'application/json']]);
  assert.equal(srv.hits.length, 0);
});

test('a request still in flight when the call that owns it ends fails in the call that awaits it, instead of hanging it', async (t) => {
  // b's code resumes after a's timer released it, and so runs as a (a continuation runs as the invocation
  // whose operation resumed it, docs/architecture.md): its fetch is a's. a returns once the server has that
  // request (its own /seen answers then: an event, not a delay); the request is then stopped, and b, still
  // running, must hear so at once, not at its deadline.
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'pair.ts'), `
    let release: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    defineTool({ name: 'pair.a', allow: { net: ['127.0.0.1'] }, timeoutMs: 20000, handler: async () => {
      setTimeout(() => release(), 0);
      await fetch('${srv.base}/seen?path=/hang');
      return 'a';
    } });
    defineTool({ name: 'pair.b', timeoutMs: 20000, handler: async () => {
      await gate;
      try { await fetch('${srv.base}/hang'); return 'fetched'; } catch (e: any) { return e.name + ': ' + e.message; }
    } });`);
  writeFileSync(join(dir, 'go.js'), "await Promise.all([plugins['pair.a'](), plugins['pair.b']()])");
  const t0 = Date.now();
  const r = await kiln(['run', join(dir, 'go.js'), join(dir, 'pair.ts')]);
  assert.equal(r.code, 0, r.stderr);
  const [a, b] = JSON.parse(r.stdout);
  assert.equal(a, 'a');
  assert.match(b, /AbortError|aborted/, b);
  assert.ok(await waitUntil(() => srv.closed.includes('/hang')), 'the request was closed on the server');
  t.diagnostic(`answered in ${Date.now() - t0} ms (b's deadline: 20 s)`);
});
