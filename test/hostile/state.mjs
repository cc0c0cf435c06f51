// Item 7: extensions in one session share nothing. The extension file is the unit of trust: `vars`, cookie
// jars, open bodies and in-flight slots are per (session, extension file). Two real source files, one session.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, sources } from './harness.mjs';

const LOCAL = "['127.0.0.1']";
const A = `
defineTool({ name: 'a.set', exposeAsTool: true, handler: async ({ args }) => { vars.set('secret', args.v); return 'ok'; } });
defineTool({ name: 'a.get', exposeAsTool: true, handler: async () => ({ secret: vars.get('secret') ?? null, keys: vars.keys() }) });
defineTool({ name: 'a.fetch', exposeAsTool: true, allow: { net: ${LOCAL} }, handler: async ({ args }) => (await fetch(args.url)).text() });
`;
const B = `
defineTool({ name: 'b.read', exposeAsTool: true, handler: async () => ({ secret: vars.get('secret') ?? null, has: vars.has('secret'), keys: vars.keys() }) });
defineTool({ name: 'b.write', exposeAsTool: true, handler: async () => { vars.set('secret', 'pwned'); return vars.get('secret'); } });
defineTool({ name: 'b.delete', exposeAsTool: true, handler: async () => vars.delete('secret') });
defineTool({ name: 'b.fetch', exposeAsTool: true, allow: { net: ${LOCAL} }, handler: async ({ args }) => (await fetch(args.url)).text() });
defineTool({ name: 'b.hold', exposeAsTool: true, allow: { net: ${LOCAL} }, handler: async ({ args }) => {
  for (let i = 0; i < 16; i++) fetch(args.url).catch(() => {});
  return 'holding';
} });
defineTool({ name: 'b.open', exposeAsTool: true, allow: { net: ${LOCAL} }, handler: async ({ args }) => { globalThis.r = await fetch(args.url); return r.status; } });
defineTool({ name: 'b.spin', exposeAsTool: true, timeoutMs: 500, handler: async () => { globalThis.n = 0; for (;;) globalThis.n++; } });
`;

async function twoFiles(t, toml) {
  const dir = sources(t, { 'a/a.js': A, 'b/b.js': B });
  return serve(t, [join(dir, 'a/a.js'), join(dir, 'b/b.js')], toml === undefined ? {} : { toml });
}

for (const [id, tool, expect] of [
  ['state-vars-read', 'b.read', { secret: null, has: false, keys: [] }],
  ['state-vars-overwrite', 'b.write', 'pwned'],
  ['state-vars-delete', 'b.delete', false],
]) {
  attack(id, `another extension in the session runs ${tool} on a victim's vars; the victim's value is intact and unseen`, async (t) => {
    const { client } = await twoFiles(t);
    assert.equal((await call(client, 'a.set', { v: 'tok-A' })).json, 'ok');
    const r = await call(client, tool);
    assert.equal(r.isError, false, r.text);
    assert.deepEqual(r.json, expect);
    assert.deepEqual((await call(client, 'a.get')).json, { secret: 'tok-A', keys: ['secret'] }, "A's vars are intact");
  });
}

attack('state-script-vars', "run_script cannot read or change a tool's vars", async (t) => {
  const { client } = await twoFiles(t);
  await call(client, 'a.set', { v: 'tok-A' });
  const r = await call(client, 'run_script', { code: "const seen = vars.get('secret') ?? null; vars.set('secret', 'x'); ({ seen, keys: vars.keys() })" });
  assert.deepEqual(r.json.result, { seen: null, keys: ['secret'] }, r.text);
  assert.deepEqual((await call(client, 'a.get')).json, { secret: 'tok-A', keys: ['secret'] });
});

attack('state-cookie-ride', "another extension does not carry a victim's cookies", async (t) => {
  const srv = await startServer(t);
  const { client } = await twoFiles(t);
  assert.equal((await call(client, 'a.fetch', { url: `${srv.base}/login` })).json, 'ok');
  assert.equal((await call(client, 'a.fetch', { url: `${srv.base}/me` })).json, 'sid=s3cret', 'A has its cookie');
  assert.equal((await call(client, 'b.fetch', { url: `${srv.base}/me` })).json, '(no cookie)');
  const bHits = srv.hits.filter((h) => h.path === '/me');
  assert.equal(bHits.length, 2);
  assert.equal(bHits[1].headers.cookie, undefined, "the server never saw A's cookie on B's request");
});

attack('state-http-slots', "another extension holding 16 HTTP slots does not starve a victim's fetch", async (t) => {
  const srv = await startServer(t);
  const { client } = await twoFiles(t);
  assert.equal((await call(client, 'b.hold', { url: `${srv.base}/hang` })).json, 'holding');
  const r = await call(client, 'a.fetch', { url: `${srv.base}/me` });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, '(no cookie)');
});

// Not yet contained (see report): a guest stopped by the interrupt is not discarded through Session.discard.
attack('state-body-release', 'the bodies a call leaves open are released when its guest has no call left (the server sees the connection close)', async (t) => {
  const srv = await startServer(t);
  const { client } = await twoFiles(t); // b.open returns with the body of an endless response unread
  const opened = await call(client, 'b.open', { url: `${srv.base}/endless` });
  assert.equal(opened.json, 200, opened.text);
  for (let i = 0; i < 100 && srv.closed.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(srv.closed, ['/endless'], 'the body outlived its call');
  const spin = await call(client, 'b.spin'); // and the guest's next life is unaffected
  assert.equal(spin.isError, true, spin.text);
});

attack('state-session-flood', 'a session flood past [sessions] maxSessions closes the oldest idle sessions; the server keeps answering', async (t) => {
  const { client } = await twoFiles(t, '[sessions]\nmaxSessions = 3\n');
  for (let i = 0; i < 12; i++) assert.equal((await call(client, 'a.set', { v: `v${i}` }, { session: `s${i}` })).json, 'ok');
  assert.deepEqual((await call(client, 'a.get', {}, { session: 's11' })).json, { secret: 'v11', keys: ['secret'] }, 'the newest session is held');
  assert.deepEqual((await call(client, 'a.get', {}, { session: 's0' })).json, { secret: null, keys: [] }, 'the oldest idle session was closed');
});

attack('state-vars-flood', 'one extension floods its vars: past 1 MiB per store it is refused, and other stores are untouched', async (t) => {
  const dir = sources(t, { 'f.ts': `defineTool({ name: 'f.flood', exposeAsTool: true, handler: () => {
    let n = 0;
    try { for (let i = 0; i < 100000; i++) { vars.set('k' + i, 'v'.repeat(60000)); n++; } } catch (e: any) { return { n, error: String(e.message) }; }
    return { n };
  } });
  defineTool({ name: 'f.ok', exposeAsTool: true, handler: () => { vars.set('x', 'y'); return vars.get('x'); } });` });
  const { client } = await serve(t, [dir]);
  const r = (await call(client, 'f.flood')).json;
  assert.ok(r.n < 20, `${r.n} values of 60 KB were kept`);
  assert.match(r.error, /hold at most 1048576 characters/);
  assert.equal((await call(client, 'f.ok', {}, { session: 'other' })).json, 'y');
});
