// The browser's own traffic: every request a page makes follows fetch's rule under the operator's grant
// (granted, asked in mode "ask", or refused) and is a line in the audit log. Two local servers stand for the
// hosts: A (declared and granted) and B (declared, not granted), whose request log proves that a refused
// request never arrived.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, sources } from './harness.mjs';

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
