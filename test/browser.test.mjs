// allow.browser with real headless Chromium (Debian's, through playwright-core) against pages this test serves
// on 127.0.0.1, driven over MCP by the real SDK client: a login form, locator chains, evaluate, a screenshot
// returned as image content; the origin gate (navigation, redirect, iframe, image and the page's own fetch to
// a host the tool did not declare, with the server's log proving nothing arrived); cookie isolation between
// sessions; and a tool without allow.browser seeing no page.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, descendants, mcp, tempDir, waitUntil } from './helpers.mjs';

/** The test's site: every request is logged with the Host it was sent to. */
async function site(t) {
  const hits = [];
  const srv = http.createServer((req, res) => {
    hits.push(`${req.headers.host}${req.url}`);
    const other = `http://localhost:${srv.address().port}`;
    const html = (body) => { res.setHeader('content-type', 'text/html'); res.end(`<!doctype html><title>t</title>${body}`); };
    switch (req.url.split('?')[0]) {
      case '/login': return html(`<label>User <input id="user"></label><label>Password <input id="pass" type="password"></label>
        <button id="go" onclick="document.querySelector('#out').textContent = 'welcome ' + document.querySelector('#user').value; document.cookie = 'sid=' + document.querySelector('#user').value">Go</button>
        <ul><li data-testid="item">one</li><li data-testid="item">two</li><li data-testid="item">three</li></ul><p id="out"></p>`);
      case '/redir': res.writeHead(302, { location: `${other}/secret` }); return res.end();
      case '/frame': return html(`<iframe src="${other}/framed"></iframe><p>framed</p>`);
      case '/img': return html(`<img src="${other}/pixel.png"><p>img</p>`);
      case '/drip': { // a response that never ends: closed only when the client goes away
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 100);
        res.on('close', () => { clearInterval(timer); dripClosed.push(Date.now()); });
        return;
      }
      case '/fetcher': return html(`<p id="r">…</p><script>fetch('${other}/api').then(() => 'reached', () => 'blocked').then((s) => { document.querySelector('#r').textContent = s; });</script>`);
      default: return html('<p>hello</p>');
    }
  });
  // A WebSocket endpoint that only counts what arrives (and when): enough to see whether a tunnel is open.
  const wsData = [];
  const dripClosed = [];
  srv.on('upgrade', (req, socket) => {
    const accept = createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket.on('data', (d) => wsData.push({ at: Date.now(), bytes: d.length }));
    socket.on('error', () => {});
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => { srv.closeAllConnections?.(); srv.close(); });
  return { port: srv.address().port, hits, wsData, dripClosed };
}

const SOURCE = (port) => `
const base = 'http://127.0.0.1:${port}';
const browser = ['127.0.0.1:${port}'];
defineTool({ name: 'b.login', exposeAsTool: true, allow: { browser }, handler: async ({ page, args }) => {
  await page.goto(base + '/login');
  await page.fill('#user', args.user);
  await page.getByLabel('Password').fill('secret');
  await page.getByRole('button', { name: 'Go' }).click();
  return { out: await page.textContent('#out'), title: await page.title(), url: await page.url() };
} });
defineTool({ name: 'b.locators', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.goto(base + '/login');
  const items = page.getByTestId('item');
  const all = await items.all();
  return { count: await items.count(), second: await items.nth(1).textContent(), first: await items.first().textContent(),
    each: await Promise.all(all.map((l) => l.textContent())), chained: await page.locator('ul').locator('li').last().innerText(),
    regex: await page.getByText(/^TW/i).count(), named: await page.getByRole('button', { name: /^g/i }).count(), literal: await page.getByText('/^TW/i').count() };
} });
defineTool({ name: 'b.eval', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.setContent('<p id="x">from setContent</p>');
  return { doubled: await page.evaluate((n) => n * 2, 21), text: await page.evaluate('document.querySelector("#x").textContent') };
} });
defineTool({ name: 'b.shot', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.goto(base + '/login');
  return page.screenshot();
} });
defineTool({ name: 'b.visit', exposeAsTool: true, allow: { browser }, handler: async ({ page, args }) => {
  try { await page.goto(base + args.path); } catch (e) { return e.name + ': ' + e.message; }
  await page.waitForTimeout(300);
  return 'loaded: ' + await page.textContent('body');
} });
defineTool({ name: 'b.away', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  try { await page.goto('http://localhost:${port}/direct'); return 'reached'; } catch (e) { return e.name + ': ' + e.message; }
} });
defineTool({ name: 'b.cookies', exposeAsTool: true, allow: { browser }, handler: async ({ context }) => (await context.cookies()).map((c) => c.name + '=' + c.value) });
defineTool({ name: 'b.none', exposeAsTool: true, handler: ({ page, context }) => [typeof page, typeof context] });
defineTool({ name: 'b.events', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.setContent('<script>console.log("hi", 1); console.warn("careful"); alert("boo")</script><p>after</p>');
  return { console: await page.consoleMessages(), dialogs: await page.dialogs(), text: await page.textContent('p') };
} });
defineTool({ name: 'b.listen', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  const got: string[] = [];
  await page.setContent('<p>before</p>'); // what happened before listening is not replayed
  page.on('console', (m) => got.push(m.type() + ': ' + m.text())).on('dialog', (d) => got.push(d.type() + ': ' + d.message()));
  await page.setContent('<script>console.log("hi", 1); confirm("sure?")</script><p>after</p>');
  await page.getByText('after').count();
  return got;
} });
defineTool({ name: 'b.timeout', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.setContent('<p>nothing to click</p>');
  try { await page.click('#missing', { timeout: 300 }); return 'clicked'; } catch (e) { return e.name; }
} });
defineTool({ name: 'b.viewport', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.setViewportSize({ width: 320, height: 200 });
  try { await page.setViewportSize({ width: 100000, height: 100000 }); return 'huge accepted'; } catch (e) { return e.message; }
} });
defineTool({ name: 'b.webrtc', exposeAsTool: true, allow: { browser }, handler: async ({ page, args }) => {
  await page.setContent('<p>no network needed</p>');
  const r = await page.evaluate(async ({ port, secret }) => {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:' + port }] });
    pc.createDataChannel('x');
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    const answer = ['v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0',
      'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 0.0.0.0', 'a=mid:0',
      'a=ice-ufrag:' + secret, 'a=ice-pwd:abcdefghijklmnopqrstuvwx', offer.sdp.match(/a=fingerprint:.*/)[0],
      'a=setup:active', 'a=sctp-port:5000', 'a=candidate:1 1 udp 2130706431 127.0.0.1 ' + port + ' typ host', ''].join('\\r\\n');
    await pc.setRemoteDescription({ type: 'answer', sdp: answer });
    (window as any).keep = pc;
    return 'sent';
  }, { port: args.port, secret: 'EXFIL' });
  await page.waitForTimeout(1500);
  return r;
} });
defineTool({ name: 'b.objects', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  const first = await page.goto(base + '/login');
  const out: any = { goto: first.status, reload: await page.reload(), back: await page.goBack(), sel: await page.waitForSelector('body') };
  for (const [k, fn] of [['cycle', () => { const a: any = {}; a.a = a; return a; }], ['big', () => 1n], ['fn', () => () => 1], ['undef', () => undefined]] as const) {
    try { out[k] = await page.evaluate(fn as any); } catch (e) { out[k] = e.name; }
  }
  return out;
} });
defineTool({ name: 'b.ws', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  await page.goto(base + '/login');
  await page.evaluate("(() => { const w = new WebSocket('ws://127.0.0.1:${port}/ws'); w.onopen = () => setInterval(() => w.send('tick'), 100); fetch('/drip').then((r) => r.body.getReader().read()); })()");
  await page.waitForTimeout(600);
  return 'open';
} });
let visits = 0;
defineTool({ name: 'b.count', exposeAsTool: true, allow: { browser }, handler: async ({ page }) => {
  visits++;
  if (!vars.has('first')) vars.set('first', 'kept');
  await page.goto(base + '/login');
  return { visits, first: vars.get('first'), title: await page.title() };
} });
`;

async function setup(t, toml) {
  const s = await site(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'b.ts'), SOURCE(s.port));
  if (toml) writeFileSync(join(dir, 'kiln.toml'), `extensions = ["b.ts"]\n${toml}`);
  const { client, transport } = await mcp(t, toml ? ['--config', join(dir, 'kiln.toml')] : [dir]);
  return { ...s, client, pid: transport.pid };
}

const cmdline = (pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { return ''; } };

test('a page: a login form, locator chains, evaluate, setContent, and a screenshot as image content', { timeout: 120_000 }, async (t) => {
  const { client, port } = await setup(t);
  const login = await call(client, 'b.login', { user: 'ada' });
  assert.equal(login.isError, false, login.text);
  assert.deepEqual(login.json, { out: 'welcome ada', title: 't', url: `http://127.0.0.1:${port}/login` });
  assert.deepEqual((await call(client, 'b.locators')).json, { count: 3, second: 'two', first: 'one', each: ['one', 'two', 'three'], chained: 'three', regex: 1, named: 1, literal: 0 });
  assert.deepEqual((await call(client, 'b.eval')).json, { doubled: 42, text: 'from setContent' });
  const shot = await client.callTool({ name: 'b.shot', arguments: {} });
  assert.equal(shot.isError, undefined, JSON.stringify(shot).slice(0, 300));
  assert.equal(shot.content[0].type, 'image');
  assert.equal(shot.content[0].mimeType, 'image/png');
  assert.ok(Buffer.from(shot.content[0].data, 'base64').subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])));
  assert.deepEqual((await call(client, 'b.none')).json, ['undefined', 'undefined'], 'a tool without allow.browser has no page');
  // It can submit forms and reach the world: never advertised read-only or closed-world.
  const listed = (await client.listTools()).tools.find((x) => x.name === 'b.login');
  assert.equal(listed.annotations.readOnlyHint, false);
  assert.equal(listed.annotations.openWorldHint, true);
  const audit = (await call(client, 'kiln_extensions')).json.extensions[0].tools.find((x) => x.name === 'b.login');
  assert.deepEqual([audit.allow.browser, audit.granted.browser, audit.effective.browser], [[`127.0.0.1:${port}`], null, [`127.0.0.1:${port}`]]);
});

test('the origin gate: navigation, redirect, iframe, image and page fetch to an undeclared host never arrive', { timeout: 120_000 }, async (t) => {
  const { client, port, hits } = await setup(t);
  const away = await call(client, 'b.away');
  assert.match(away.text, new RegExp(`^PermissionError: tool "b.away" may not load localhost:${port} in its browser: it is not in allow.browser .*add "localhost:${port}" to allow.browser`));
  const redirect = await call(client, 'b.visit', { path: '/redir' });
  assert.match(redirect.text, new RegExp(`^PermissionError: .*may not load localhost:${port}`));
  for (const path of ['/frame', '/img']) assert.match((await call(client, 'b.visit', { path })).text, /^loaded: /);
  assert.match((await call(client, 'b.visit', { path: '/fetcher' })).text, /blocked/);
  const leaked = hits.filter((h) => h.startsWith('localhost'));
  assert.deepEqual(leaked, [], 'a refused host received requests');
  assert.ok(hits.some((h) => h.endsWith('/redir')) && hits.some((h) => h.endsWith('/frame')), `the allowed pages were loaded: ${hits}`);
});

test('[net] denyPrivate holds for the browser: a loopback literal and a name resolving to loopback are refused at the gate, naming the setting; nothing arrives', { timeout: 120_000 }, async (t) => {
  const { port, hits } = await site(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'p.ts'), `defineTool({ name: 'p.go', exposeAsTool: true, allow: { browser: ['127.0.0.1:${port}', 'localhost:${port}'] },
    inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
    handler: async ({ args, page }) => { await page.goto(args.url); return await page.textContent('p'); } });
defineTool({ name: 'p.sub', exposeAsTool: true, allow: { browser: ['127.0.0.1:${port}'] },
    handler: async ({ page }) => { await page.setContent('<img src="http://localhost:${port}/sub.png"><iframe src="http://127.0.0.1:${port}/framed2"></iframe>'); await page.waitForTimeout(300); return 'done'; } });
`);
  writeFileSync(join(dir, 'kiln.toml'), 'extensions = ["p.ts"]\n[net]\ndenyPrivate = true\n');
  const { client } = await mcp(t, ['--config', join(dir, 'kiln.toml')]);
  // Subresources first, on a page no refused navigation is still unwinding in.
  assert.equal((await call(client, 'p.sub')).text, 'done');
  for (const url of [`http://127.0.0.1:${port}/a`, `http://localhost:${port}/b`, `https://127.0.0.1:${port}/c`, `https://localhost:${port}/d`]) {
    const r = await call(client, 'p.go', { url });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /^PermissionError: .*private or loopback address.*\[net\] denyPrivate/);
  }
  assert.deepEqual(hits, [], 'a private address received requests through the browser');
});

test('[net] denyPrivate switched on in a running server holds for a name the browser reached just before (no pooled connection skips the lookup)', { timeout: 120_000 }, async (t) => {
  const { port, hits } = await site(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'p.ts'), `defineTool({ name: 'p.go', exposeAsTool: true, allow: { browser: ['localhost:${port}', '127.0.0.2:${port}'] },
    inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
    handler: async ({ args, page }) => (await page.goto(args.url)).status });\n`);
  const file = join(dir, 'kiln.toml');
  writeFileSync(file, 'extensions = ["p.ts"]\n');
  const { client } = await mcp(t, ['--config', file]);
  assert.equal((await call(client, 'p.go', { url: `http://localhost:${port}/one` })).text, '200');
  writeFileSync(file, 'extensions = ["p.ts"]\n[net]\ndenyPrivate = true\n');
  // A probe that reaches nothing either way (nothing listens on 127.0.0.2) tells when the new [net] is in force.
  const refused = (r) => /\[net\] denyPrivate/.test(r.text);
  let last;
  assert.ok(await waitUntil(async () => refused((last = await call(client, 'p.go', { url: `http://127.0.0.2:${port}/` }))), 10_000), `denyPrivate never applied: ${last?.text}`);
  const r = await call(client, 'p.go', { url: `http://localhost:${port}/two` });
  assert.ok(refused(r), r.text);
  assert.deepEqual(hits.filter((h) => h.endsWith('/two')), [], 'the page was reached after denyPrivate was switched on');
});

test("one session's context never sees another session's cookies", { timeout: 120_000 }, async (t) => {
  const { client } = await setup(t);
  assert.equal((await call(client, 'b.login', { user: 'alice' }, { session: 'a' })).isError, false);
  assert.deepEqual((await call(client, 'b.cookies', {}, { session: 'a' })).json, ['sid=alice']);
  assert.deepEqual((await call(client, 'b.cookies', {}, { session: 'b' })).json, []);
});

test('browserUrlAllowed: allow.net\'s grammar; other spellings, userinfo tricks and other schemes are judged by the real host', async () => {
  const { browserUrlAllowed } = await import('../dist/host/capabilities/browser/policy.js');
  const entries = ['127.0.0.1:8080', '*.example.com'];
  for (const ok of ['http://127.0.0.1:8080/x', 'ws://127.0.0.1:8080/s', 'https://a.example.com/', 'https://A.EXAMPLE.COM./', 'https://example.com/', 'about:blank', 'data:text/html,hi']) {
    assert.equal(browserUrlAllowed(ok, entries), true, ok);
  }
  for (const no of ['http://127.0.0.1/x', 'http://127.0.0.1:8081/', 'http://localhost:8080/', 'http://127.0.0.1:8080@localhost:8080/',
    'https://example.com.evil.net/', 'file:///etc/passwd', 'javascript:alert(1)', 'chrome://settings', 'not a url']) {
    assert.equal(browserUrlAllowed(no, entries), false, no);
  }
  assert.equal(browserUrlAllowed('http://127.0.0.1:8080/', []), false, 'no entries: nothing');
});

test("the page's console and dialogs are readable afterwards; Playwright's TimeoutError stays a TimeoutError", { timeout: 120_000 }, async (t) => {
  const { client } = await setup(t);
  const ev = (await call(client, 'b.events')).json;
  assert.deepEqual(ev.console, [{ type: 'log', text: 'hi 1' }, { type: 'warning', text: 'careful' }]);
  assert.deepEqual(ev.dialogs, [{ type: 'alert', message: 'boo' }]);
  assert.equal(ev.text, 'after', 'the dialog was dismissed and the page went on');
  assert.equal((await call(client, 'b.timeout')).text, 'TimeoutError');
  assert.deepEqual((await call(client, 'b.listen')).json, ['log: hi 1', 'confirm: sure?']);
  assert.match((await call(client, 'b.viewport')).text, /setViewportSize takes \{ width, height \} of 1 to 4096 pixels/);
});

test('a WebSocket or a streaming response opened during a call is cut when the call stops driving the page', { timeout: 60_000 }, async (t) => {
  const { client, wsData, dripClosed, hits } = await setup(t);
  assert.equal((await call(client, 'b.ws')).text, 'open');
  const ended = Date.now();
  assert.ok(wsData.length > 0, 'the socket carried nothing while the tool drove the page');
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(wsData.filter((d) => d.at > ended + 100), [], 'data went out between calls');
  assert.ok(hits.some((h) => h.endsWith('/drip')), 'the streaming request never started');
  assert.equal(dripClosed.length, 1, 'the streaming response outlived its call');
});

test('WebRTC cannot pass the gate: no UDP reaches a host the tool did not declare', { timeout: 60_000 }, async (t) => {
  const { client } = await setup(t);
  const { createSocket } = await import('node:dgram');
  const udp = createSocket('udp4');
  const got = [];
  udp.on('message', (m) => got.push(m.length));
  await new Promise((r) => udp.bind(0, '127.0.0.1', r));
  t.after(() => udp.close());
  const r = await call(client, 'b.webrtc', { port: udp.address().port });
  assert.equal(r.text, 'sent', r.text);
  await new Promise((res) => setTimeout(res, 1000));
  assert.deepEqual(got, [], 'UDP packets reached the refused host');
});

test('methods that return Playwright objects and evaluate results that are not JSON answer plainly; the server goes on', { timeout: 60_000 }, async (t) => {
  const { client, port } = await setup(t);
  const r = await call(client, 'b.objects');
  assert.equal(r.isError, false, r.text);
  assert.deepEqual(r.json.reload, { status: 200, url: `http://127.0.0.1:${port}/login` });
  assert.equal(r.json.sel, null);
  assert.equal(r.json.goto, 200);
  assert.equal(r.json.cycle, 'BrowserError', 'a cycle cannot be JSON: the page says so');
  assert.equal(r.json.big, 'BrowserError');
  assert.equal(r.json.fn, null, 'a function is not JSON: null, as JSON.stringify says');
  assert.equal(r.json.undef, null);
  assert.equal((await call(client, 'b.none')).isError, false, 'the server still answers');
});

test('[browser] enabled = false: no tool gets a page, whatever it declares', { timeout: 60_000 }, async (t) => {
  const { client } = await setup(t, '[browser]\nenabled = false\n');
  const r = await call(client, 'b.login', { user: 'x' });
  assert.equal(r.isError, true);
  assert.match(r.text, /Cannot read properties of undefined|undefined/);
  assert.equal(descendants((await setup(t, '[browser]\nenabled = false\n')).pid).filter((p) => /chrom/.test(cmdline(p))).length, 0, 'a browser was launched');
});

test('a killed browser is relaunched on the next call; the guest that drove it starts afresh, its vars kept', { timeout: 120_000 }, async (t) => {
  const { client, pid } = await setup(t);
  assert.deepEqual((await call(client, 'b.count')).json, { visits: 1, first: 'kept', title: 't' });
  assert.deepEqual((await call(client, 'b.count')).json, { visits: 2, first: 'kept', title: 't' });
  const browsers = descendants(pid).filter((p) => /chrom/.test(cmdline(p)) && !/--type=/.test(cmdline(p)));
  assert.ok(browsers.length >= 1, 'no browser process under the server');
  for (const p of browsers) process.kill(p, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 500));
  const after = await call(client, 'b.count');
  assert.equal(after.isError, false, after.text);
  assert.deepEqual(after.json, { visits: 1, first: 'kept', title: 't' }, 'globals reset, vars kept');
});
