// The browser's own traffic and the page's limits: every request a page makes follows fetch's rule under
// the operator's grant (granted, asked in mode "ask", or refused) and is a line in the audit log; a page's
// scripts stop when its call ends; its memory and CPU are bounded like its guest's. Two local servers stand
// for the hosts: A (declared and granted) and B (declared, not granted), whose request log proves that a
// refused request never arrived.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, descendants } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, serverPid, sources } from './harness.mjs';

/** An extension whose pages, loaded from A, reach for B in every way a page can. */
const PAGES = (a, b) => `
const allow = { browser: ['127.0.0.1:${a}', '127.0.0.1:${b}'] };
defineTool({ name: 'bp.visit', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.a + '/hello');
  const out = await page.evaluate(async (b) => {
    const load = (el, attr, url) => new Promise((done) => { el.onload = () => done('loaded'); el.onerror = () => done('error'); el[attr] = url; document.body.appendChild(el); });
    const r = {};
    r.img = await load(new Image(), 'src', b + '/img');
    r.script = await load(document.createElement('script'), 'src', b + '/script');
    await load(document.createElement('iframe'), 'src', b + '/frame');
    try { r.fetch = (await fetch(b + '/fetch', { mode: 'no-cors' })).status; } catch (e) { r.fetch = 'refused'; }
    return r;
  }, args.b);
  // The page navigates itself away, then the tool asks for B.
  await page.evaluate((b) => { location.href = b + '/nav'; }, args.b);
  await page.waitForURL(args.b + '/nav').catch(() => {});
  try { await page.goto(args.b + '/goto'); out.goto = 'loaded'; } catch (e) { out.goto = e.name; }
  return out;
} });
`;

/** The hits B saw, by path. */
const paths = (srv) => srv.hits.map((h) => h.path);
/** The audit log's decisions on page requests (op "browser.request"). */
const pageLines = (file) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.op === 'browser.request');

async function twoHosts(t, answer) {
  const [a, b] = [await startServer(t), await startServer(t)];
  const dir = sources(t, { 'p.ts': PAGES(a.port, b.port) });
  const audit = join(dir, 'audit.jsonl');
  const toml = `extensions = [${JSON.stringify(join(dir, 'p.ts'))}]\n[policy]\nmode = "ask"\n[grants.${JSON.stringify(join(dir, 'p.ts'))}]\nbrowser = ["127.0.0.1:${a.port}"]\n[audit]\npath = ${JSON.stringify(audit)}\n`;
  const asked = [];
  const { client } = await serve(t, [], {
    toml,
    beforeConnect: answer && ((c) => {
      c.registerCapabilities({ elicitation: { form: {} } });
      c.setRequestHandler('elicitation/create', async (req) => {
        asked.push(req.params.message);
        return answer(req.params);
      });
    }),
  });
  return { a, b, client, audit, asked };
}

/** The page's requests to B were all refused and never arrived; each is a "deny" line in the audit log. */
function refusedEverywhere(r, a, b, audit) {
  assert.equal(r.isError, false, r.text);
  assert.deepEqual([r.json.img, r.json.script, r.json.goto], ['error', 'error', 'PermissionError'], r.text);
  assert.notEqual(r.json.fetch, 200, r.text);
  assert.deepEqual(paths(b), [], 'a request of the page reached the host that was not granted');
  assert.ok(paths(a).includes('/hello'), 'the granted host served the page');
  const lines = pageLines(audit);
  const toB = lines.filter((l) => l.target.includes(`127.0.0.1:${b.port}`));
  for (const p of ['/img', '/script', '/frame', '/fetch', '/nav']) {
    assert.ok(toB.some((l) => l.target.endsWith(`127.0.0.1:${b.port}${p}`) && l.verdict === 'deny'), `no deny line for ${p}: ${JSON.stringify(toB)}`);
  }
  assert.ok(toB.every((l) => l.verdict === 'deny'), JSON.stringify(toB));
  assert.ok(lines.some((l) => l.target === `GET http://127.0.0.1:${a.port}/hello` && l.verdict === 'allow' && l.tool === 'bp.visit'), JSON.stringify(lines));
}

attack('browser-ask-page-traffic-unasked', 'mode "ask", a client that cannot answer: a page from the granted host reaches the declared, ungranted one (img, script, iframe, fetch, navigation)', async (t) => {
  const { a, b, client, audit } = await twoHosts(t);
  const r = await call(client, 'bp.visit', { a: a.base, b: b.base });
  refusedEverywhere(r, a, b, audit);
  // The refusal names the grant line that would allow it.
  const why = pageLines(audit).find((l) => l.verdict === 'deny')?.reason ?? '';
  assert.match(why, new RegExp(`to allow it, add "127\\.0\\.0\\.1:${b.port}" to browser in \\[grants\\."`), why);
});

attack('browser-ask-page-traffic-declined', 'mode "ask", a client that declines: the page\'s requests to the ungranted host wait for one question and never arrive', async (t) => {
  const { a, b, client, audit, asked } = await twoHosts(t, () => ({ action: 'decline' }));
  const r = await call(client, 'bp.visit', { a: a.base, b: b.base });
  refusedEverywhere(r, a, b, audit);
  assert.equal(asked.length, 1, `one question per host and call: ${asked.join(' | ')}`);
  assert.match(asked[0], new RegExp(`127\\.0\\.0\\.1:${b.port}`));
});

attack('browser-ask-page-traffic-accepted', 'mode "ask": a human\'s yes is what lets the page reach the ungranted host (asked once for the call)', async (t) => {
  const { a, b, client, audit, asked } = await twoHosts(t, () => ({ action: 'accept', content: { allow: 'once' } }));
  const r = await call(client, 'bp.visit', { a: a.base, b: b.base });
  assert.equal(r.isError, false, r.text);
  assert.deepEqual([r.json.img, r.json.goto], ['error', 'loaded'], r.text); // /img is a 404 at B: it arrived
  assert.equal(asked.length, 1, asked.join(' | '));
  for (const p of ['/img', '/script', '/frame', '/fetch', '/nav', '/goto']) assert.ok(paths(b).includes(p), `${p} did not arrive: ${paths(b)}`);
  assert.ok(pageLines(audit).some((l) => l.target === `GET http://127.0.0.1:${b.port}/fetch` && l.verdict === 'allow'));
});

attack('browser-audit-page-requests', 'a page\'s own requests leave no trace in the audit log (mode "declared", B not declared)', async (t) => {
  const [a, b] = [await startServer(t), await startServer(t)];
  const dir = sources(t, { 'q.ts': `defineTool({ name: 'q.visit', exposeAsTool: true, allow: { browser: ['127.0.0.1:${a.port}'] }, handler: async ({ page, args }) => {
    await page.goto(args.a + '/hello');
    return page.evaluate(async (b) => { try { await fetch(b + '/fetch', { mode: 'no-cors' }); return 'sent'; } catch { return 'refused'; } }, args.b);
  } });` });
  const audit = join(dir, 'audit.jsonl');
  const { client } = await serve(t, [], { toml: `extensions = [${JSON.stringify(join(dir, 'q.ts'))}]\n[audit]\npath = ${JSON.stringify(audit)}\n` });
  const r = await call(client, 'q.visit', { a: a.base, b: b.base });
  assert.equal(r.isError, false, r.text);
  assert.deepEqual(paths(b), [], 'the undeclared host was reached');
  const lines = pageLines(audit);
  const line = (target) => lines.find((l) => l.target === target);
  assert.deepEqual(
    [line(`GET http://127.0.0.1:${a.port}/hello`)?.verdict, line(`GET http://127.0.0.1:${b.port}/fetch`)?.verdict],
    ['allow', 'deny'], JSON.stringify(lines));
  const deny = line(`GET http://127.0.0.1:${b.port}/fetch`);
  assert.equal(deny.tool, 'q.visit');
  assert.match(deny.reason, new RegExp(`may not load 127\\.0\\.0\\.1:${b.port} in its browser: it is not in allow\\.browser .*add "127\\.0\\.0\\.1:${b.port}" to allow\\.browser`));
});

/** Renderer processes of the server's Chromium that render the context's pages, and their CPU time in clock
 *  ticks. Not the browser's own UI (--top-chrome-webui): Chromium makes an omnibox popup WebUI for the window of
 *  every context, whose renderer starts with the context's first page and spends 1 to 1.4 s of CPU in the
 *  next second or two, running nothing of the guest's. */
function rendererTicks(root) {
  let ticks = 0;
  for (const c of descendants(root)) {
    try {
      const cmd = readFileSync(`/proc/${c}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer') || cmd.includes('--top-chrome-webui')) continue;
      const f = readFileSync(`/proc/${c}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]); // utime + stime
    } catch { /* gone */ }
  }
  return ticks;
}

const SPIN = (a) => `
const allow = { browser: ['127.0.0.1:${a}', 'localhost:${a}'] };
// Every tick of the page keeps the CPU busy for 20 ms and notes when it ran.
const spin = () => { window.ticks = []; setInterval(() => { ticks.push(Date.now()); const end = Date.now() + 20; while (Date.now() < end); }, 1); };
defineTool({ name: 'sp.start', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  await page.evaluate(spin);
  return 'spinning';
} });
// A frame of another site (localhost, beside the page's 127.0.0.1) runs in a renderer process of its own and
// spins there, noting when each tick ran; asked "sync", it sends the page its notes.
const FRAME = '<script>const ticks = []; setInterval(() => { ticks.push(Date.now()); const end = Date.now() + 20; while (Date.now() < end); }, 1);'
  + 'addEventListener("message", (e) => { if (e.data === "sync") parent.postMessage({ synced: ticks }, "*"); });</script>';
defineTool({ name: 'sp.frame', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  return page.evaluate((src) => new Promise((done) => {
    addEventListener('message', (e) => { if (e.data.synced) window.synced?.(e.data.synced); });
    const f = document.createElement('iframe');
    f.onload = () => done('framed');
    f.src = src;
    document.body.appendChild(f);
  }), args.frame + '/page?html=' + encodeURIComponent(FRAME));
} });
// A frame of another site that sets 500 intervals of 1 ms that do next to nothing: with its scripts disabled
// their timers would still fire, and cost a core, between calls.
const TIMERS = '<script>let ticks = 0; for (let i = 0; i < 500; i++) setInterval(() => ticks++, 1);</script>';
defineTool({ name: 'sp.timers', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  return page.evaluate((src) => new Promise((done) => {
    const f = document.createElement('iframe');
    f.onload = () => done('framed');
    f.src = src;
    document.body.appendChild(f);
  }), args.frame + '/page?html=' + encodeURIComponent(TIMERS));
} });
// A page's own debugger statements, which pause nothing without DevTools.
defineTool({ name: 'sp.debugger', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  if (args.url) await page.goto(args.url);
  return page.evaluate(() => { let n = 0; for (let i = 0; i < 3; i++) { debugger; n++; } return 'passed ' + n; });
} });
defineTool({ name: 'sp.frameRead', exposeAsTool: true, allow, handler: async ({ page }) => page.evaluate(() => new Promise((done) => {
  window.synced = done;
  document.querySelector('iframe').contentWindow.postMessage('sync', '*');
})) });
// A dedicated worker of the page spins, noting when each tick ran; asked "sync", it sends the page its notes.
const WORKER = 'const ticks = []; setInterval(() => { ticks.push(Date.now()); const end = Date.now() + 20; while (Date.now() < end); }, 1);'
  + 'onmessage = (e) => { if (e.data === "sync") postMessage(ticks); };';
defineTool({ name: 'sp.worker', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  return page.evaluate((src) => { window.w = new Worker(URL.createObjectURL(new Blob([src]))); return 'working'; }, WORKER);
} });
defineTool({ name: 'sp.workerRead', exposeAsTool: true, allow, handler: async ({ page }) => page.evaluate(() => new Promise((done) => {
  window.w.onmessage = (e) => done(e.data);
  window.w.postMessage('sync');
})) });
defineTool({ name: 'sp.workerHog', exposeAsTool: true, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  return page.evaluate(() => new Promise((done) => {
    const src = 'const hog = []; for (let i = 0; i < 64; i++) hog.push(new Uint8Array(1 << 20).fill(i)); postMessage(hog.length);';
    window.w = new Worker(URL.createObjectURL(new Blob([src])));
    window.w.onmessage = (e) => done(e.data);
  }));
} });
defineTool({ name: 'sp.read', exposeAsTool: true, allow, handler: async ({ page }) => page.evaluate(() => ({ ticks: window.ticks ? window.ticks.slice() : null, hog: typeof window.hog })) });
defineTool({ name: 'sp.cpu', exposeAsTool: true, cpuMs: 200, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  await page.evaluate(spin);
  await page.waitForTimeout(20000);
  return 'never stopped';
} });
defineTool({ name: 'sp.hog', exposeAsTool: true, memoryLimitBytes: 16 * 1024 * 1024, allow, handler: async ({ page, args }) => {
  await page.goto(args.url);
  return page.evaluate(() => { window.hog = []; for (let i = 0; i < 64; i++) window.hog.push(new Uint8Array(1 << 20).fill(i)); return window.hog.length; });
} });
`;

/** Sleeps `n` times for `ms` (a bounded wait; nothing is decided by how long it took). */
const pause = async (n, ms) => { for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, ms)); };

async function spinServer(t) {
  const a = await startServer(t);
  const dir = sources(t, { 'sp.ts': SPIN(a.port) });
  const { client, transport } = await serve(t, [join(dir, 'sp.ts')]);
  return { a, client, pid: serverPid(transport) };
}

attack('browser-page-timer-after-call', 'a page\'s setInterval busy loop keeps a core busy after its call ended', async (t) => {
  const { a, client, pid } = await spinServer(t);
  assert.equal((await call(client, 'sp.start', { url: `${a.base}/hello` })).text, 'spinning');
  const ended = Date.now(); // the call is answered: its page's scripts must have stopped by now
  const cpuBefore = rendererTicks(pid);
  await pause(15, 100);
  const cpuAfter = rendererTicks(pid);
  const next = Date.now();
  const r = await call(client, 'sp.read');
  assert.equal(r.isError, false, r.text);
  const between = r.json.ticks.filter((x) => x > ended && x < next);
  assert.deepEqual(between, [], `the page ran ${between.length} ticks while no call drove it`);
  assert.ok(r.json.ticks.length > 0, 'the page ran during its call');
  // The renderers' CPU time while no call ran: a spinning page would use most of the window.
  assert.ok(cpuAfter - cpuBefore < 50, `the renderers used ${cpuAfter - cpuBefore} ticks of CPU while no call drove them`);
  // The page runs again during the next call.
  const again = await call(client, 'sp.read');
  assert.ok(again.json.ticks.length >= r.json.ticks.length);
});

attack('browser-frame-timer-after-call', 'a frame of another site (its own renderer process) keeps spinning after its call ended', async (t) => {
  const { a, client, pid } = await spinServer(t);
  const r = await call(client, 'sp.frame', { url: `${a.base}/hello`, frame: `http://localhost:${a.port}` });
  assert.equal(r.text, 'framed');
  const ended = Date.now();
  const cpuBefore = rendererTicks(pid);
  await pause(15, 100);
  const cpuAfter = rendererTicks(pid);
  const next = Date.now();
  const read = await call(client, 'sp.frameRead');
  assert.equal(read.isError, false, read.text);
  const between = read.json.filter((x) => x > ended && x < next);
  assert.deepEqual(between, [], `the frame ran ${between.length} ticks while no call drove it`);
  assert.ok(cpuAfter - cpuBefore < 50, `the renderers used ${cpuAfter - cpuBefore} ticks of CPU while no call drove them`);
});

attack('browser-frame-timers-after-call', 'a frame of another site keeps 500 timers of 1 ms firing after its call ended', async (t) => {
  const { a, client, pid } = await spinServer(t);
  assert.equal((await call(client, 'sp.timers', { url: `${a.base}/hello`, frame: `http://localhost:${a.port}` })).text, 'framed');
  const cpuBefore = rendererTicks(pid);
  await pause(15, 100);
  const cpuAfter = rendererTicks(pid);
  assert.ok(cpuAfter - cpuBefore < 50, `the renderers used ${cpuAfter - cpuBefore} ticks of CPU while no call drove them`);
});

attack('browser-debugger-statement', 'a page\'s debugger statements, which the debugger kiln stops pages with between calls could honour, hold its call', async (t) => {
  const { a, client } = await spinServer(t);
  // the first call opens the page; the second runs after the page was stopped and resumed
  assert.equal((await call(client, 'sp.debugger', { url: `${a.base}/hello` })).text, 'passed 3');
  assert.equal((await call(client, 'sp.debugger', {})).text, 'passed 3');
});

attack('browser-worker-after-call', 'a page\'s dedicated worker keeps spinning after its call ended', async (t) => {
  const { a, client, pid } = await spinServer(t);
  assert.equal((await call(client, 'sp.worker', { url: `${a.base}/hello` })).text, 'working');
  const ended = Date.now();
  const cpuBefore = rendererTicks(pid);
  await pause(15, 100);
  const cpuAfter = rendererTicks(pid);
  const next = Date.now();
  const read = await call(client, 'sp.workerRead');
  assert.equal(read.isError, false, read.text);
  const between = read.json.filter((x) => x > ended && x < next);
  assert.deepEqual(between, [], `the worker ran ${between.length} ticks while no call drove its page`);
  assert.ok(cpuAfter - cpuBefore < 50, `the renderers used ${cpuAfter - cpuBefore} ticks of CPU while no call drove them`);
});

attack('browser-page-cpu', 'a tool with cpuMs 200 keeps its page spinning for 20 s of a call', async (t) => {
  const { a, client } = await spinServer(t);
  const r = await call(client, 'sp.cpu', { url: `${a.base}/hello` });
  assert.equal(r.isError, true, r.text);
  assert.match(r.text, /CpuLimitError: tool "sp\.cpu"'s pages used \d+ ms of CPU time, more than its 200 ms \(cpuMs in its manifest\)/);
  const stopped = Date.now();
  await pause(5, 100);
  const next = Date.now();
  const read = await call(client, 'sp.read');
  const between = read.json.ticks.filter((x) => x > stopped && x < next);
  assert.deepEqual(between, [], 'the page kept running after its CPU time was spent');
});

attack('browser-worker-memory', 'a tool with a 16 MiB memory limit makes its page\'s worker hold 64 MiB', async (t) => {
  const { a, client } = await spinServer(t);
  const r = await call(client, 'sp.workerHog', { url: `${a.base}/hello` });
  assert.equal(r.isError, true, r.text);
  assert.match(r.text, /MemoryLimitError: tool "sp\.workerHog"'s pages hold [\d.]+ MiB of JavaScript memory, more than its 16\.0 MiB memory limit/);
  const read = await call(client, 'sp.read');
  assert.deepEqual(read.json, { ticks: null, hog: 'undefined' }, 'the page and its worker are gone');
});

attack('browser-page-memory', 'a tool with a 16 MiB memory limit makes its page hold 64 MiB', async (t) => {
  const { a, client } = await spinServer(t);
  const r = await call(client, 'sp.hog', { url: `${a.base}/hello` });
  assert.equal(r.isError, true, r.text);
  assert.match(r.text, /MemoryLimitError: tool "sp\.hog"'s pages hold [\d.]+ MiB of JavaScript memory, more than its 16\.0 MiB memory limit \(memoryLimitBytes of tool "sp\.hog" in its manifest\); its pages were closed/);
  // The page that held it is gone: the next call gets a fresh one.
  const read = await call(client, 'sp.read');
  assert.deepEqual(read.json, { ticks: null, hog: 'undefined' }, read.text);
});
