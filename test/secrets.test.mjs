// allow.secrets through a real MCP client, against real HTTP servers on the loopback interface that record
// every request's headers: the operator's secret reaches the secret's host and no other (not another name or
// spelling of a loopback address, not another port, not after a redirect elsewhere, not through the browser),
// the guest can read it nowhere (process.env, commands, responses, errors, the Request object), and neither
// the audit file nor the server's log holds it. Misconfigurations fail with the config to add.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { buildFixture, call, kiln, mcp, tempDir, waitUntil } from './helpers.mjs';

const TOKEN = 'ghp-SECRET-0123456789-abcdef';
const LOC_KEY = 'loc-SECRET-9876543210';
const ENV = { TEST_GH_TOKEN: TOKEN, TEST_LOC_KEY: LOC_KEY, TEST_VISIBLE: 'visible-value' };

let artifact;
before(async () => {
  artifact = await buildFixture('secrets/sec.ts');
});

/** A server on [::] (IPv4 and IPv6 loopback alike) that records each request's path, Host and headers.
 *  /ok answers; /redirect?status=S&to=URL redirects; /reset drops the connection. */
async function server(t) {
  const hits = [];
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    hits.push({ path: url.pathname, tag: url.searchParams.get('tag'), host: req.headers.host, headers: req.headers });
    req.resume();
    if (url.pathname === '/redirect') {
      res.writeHead(Number(url.searchParams.get('status')), { location: url.searchParams.get('to') });
      return res.end();
    }
    if (url.pathname === '/reset') return req.socket.destroy();
    res.writeHead(200, { 'content-type': 'text/plain', 'x-served': 'yes' });
    res.end('ok');
  });
  await new Promise((resolve) => srv.listen({ port: 0, host: '::', ipv6Only: false }, resolve));
  t.after(() => { srv.closeAllConnections?.(); srv.close(); });
  const port = srv.address().port;
  return { port, hits, tagged: (tag) => hits.filter((h) => h.tag === tag) };
}

function config(dir, a, extra = '') {
  const file = join(dir, 'kiln.toml');
  writeFileSync(file, `extensions = [${JSON.stringify(artifact)}]
[secrets.github]
env = "TEST_GH_TOKEN"
hosts = ["127.0.0.1:${a.port}"]
header = "authorization"
format = "Bearer {}"

[secrets.loc]
env = "TEST_LOC_KEY"
hosts = ["localhost"]
header = "X-Api-Key"
format = "{}"

[grants.${JSON.stringify(artifact)}]
secrets = ["github", "loc", "nosuch"]
${extra}`);
  return file;
}

async function serve(t, a, { extra = '', env = ENV } = {}) {
  const dir = tempDir(t);
  const { client, stderr } = await mcp(t, ['--config', config(dir, a, extra)], { env });
  return { client, stderr, dir };
}

test('the secret host gets the header; other names, spellings, ports and tools do not', async (t) => {
  const a = await server(t);
  const b = await server(t);
  const { client } = await serve(t, a);
  const cases = [
    // [tool, url, expected authorization, expected x-api-key]
    ['sec.get', `http://127.0.0.1:${a.port}/ok?tag=plain`, `Bearer ${TOKEN}`, undefined],
    // The same host in other notations is the same host (allow.net's normalisation)...
    ['sec.get', `http://2130706433:${a.port}/ok?tag=decimal`, `Bearer ${TOKEN}`, undefined],
    ['sec.get', `http://127.1:${a.port}/ok?tag=short`, `Bearer ${TOKEN}`, undefined],
    // ...while another name for the same machine, another address, another port or a userinfo trick is not.
    ['sec.get', `http://localhost:${a.port}/ok?tag=localhost`, undefined, undefined],
    ['sec.get', `http://127.0.0.1.:${a.port}/ok?tag=trailing-dot`, `Bearer ${TOKEN}`, undefined],
    ['sec.get', `http://LOCALHOST:${a.port}/ok?tag=LOCALHOST`, undefined, undefined],
    ['sec.get', `http://[::1]:${a.port}/ok?tag=v6`, undefined, undefined],
    ['sec.get', `http://[::ffff:127.0.0.1]:${a.port}/ok?tag=mapped`, undefined, undefined],
    ['sec.get', `http://127.0.0.1:${b.port}/ok?tag=otherport`, undefined, undefined],
    ['sec.spoofed', `http://127.0.0.1:${a.port}@localhost:${a.port}/ok?tag=userinfo`, undefined, undefined],
    // Two secrets: each to its own hosts ("localhost" without a port: any port; any spelling of the name).
    ['sec.both', `http://LocalHost:${a.port}/ok?tag=both-loc`, undefined, LOC_KEY],
    ['sec.both', `http://localhost:${b.port}/ok?tag=both-loc-b`, undefined, LOC_KEY],
    ['sec.both', `http://127.0.0.1:${a.port}/ok?tag=both-gh`, `Bearer ${TOKEN}`, undefined],
    // A tool of the same file (the same guest) that does not declare the secret gets nothing.
    ['sec.plain', `http://127.0.0.1:${a.port}/ok?tag=undeclared`, undefined, undefined],
    ['sec.plain', `http://localhost:${a.port}/ok?tag=undeclared-loc`, undefined, undefined],
  ];
  for (const [tool, url, auth, key] of cases) {
    const r = await call(client, tool, { url });
    assert.equal(r.json?.status, 200, `${tool} ${url}: ${r.text}`);
    const tag = new URL(url).searchParams.get('tag');
    const hits = [...a.tagged(tag), ...b.tagged(tag)];
    assert.equal(hits.length, 1, `${tag}: one request`);
    assert.equal(hits[0].headers.authorization?.includes(TOKEN) ? hits[0].headers.authorization : undefined, auth, `${tag}: authorization`);
    assert.equal(hits[0].headers['x-api-key'], key, `${tag}: x-api-key`);
    assert.ok(!JSON.stringify(r.json).includes(TOKEN) && !JSON.stringify(r.json).includes(LOC_KEY), `${tag}: the response shows no secret`);
  }
  assert.equal(a.tagged('userinfo')[0].host, `localhost:${a.port}`, 'the userinfo case really went to localhost');
  // Unspoofed, the guest's fetch refuses credentials in a URL before anything is sent, as Node's does.
  const plain = await call(client, 'sec.get', { url: `http://127.0.0.1:${a.port}@localhost:${a.port}/ok?tag=userinfo-plain` });
  assert.match(plain.json?.error ?? '', /^TypeError: .*credentials/, plain.text);
  assert.equal(a.tagged('userinfo-plain').length + b.tagged('userinfo-plain').length, 0, 'nothing was sent');

  // The guest's own header of the same name: the secret wins on a secret host; elsewhere the guest's goes out.
  await call(client, 'sec.get', { url: `http://127.0.0.1:${a.port}/ok?tag=own-secret-host`, init: { headers: { Authorization: 'guest-own' } } });
  assert.equal(a.tagged('own-secret-host')[0].headers.authorization, `Bearer ${TOKEN}`);
  await call(client, 'sec.get', { url: `http://127.0.0.1:${b.port}/ok?tag=own-other-host`, init: { headers: { Authorization: 'guest-own' } } });
  assert.equal(b.tagged('own-other-host')[0].headers.authorization, 'guest-own');

  // Through plugins[...]: the callee's requests carry the callee's secrets; the caller's own request none.
  const via = await call(client, 'sec.viaPlugin', { url: `http://127.0.0.1:${a.port}/ok?tag=via` });
  assert.equal(via.isError, false, via.text);
  assert.deepEqual(a.tagged('via').map((h) => h.headers.authorization), [`Bearer ${TOKEN}`, undefined]);
});

test('redirects: every hop is decided again, and the header never follows to another host', async (t) => {
  const a = await server(t);
  const b = await server(t);
  const { client } = await serve(t, a);
  const A = `http://127.0.0.1:${a.port}`;
  const B = `http://127.0.0.1:${b.port}`;
  const redirect = (from, status, to, tag) => `${from}/redirect?tag=${tag}&status=${status}&to=${encodeURIComponent(`${to}/ok?tag=${tag}`)}`;
  for (const status of [301, 302, 303, 307, 308]) {
    for (const method of ['GET', 'POST']) {
      const init = { method, ...(method === 'POST' ? { body: 'payload' } : {}) };
      const away = `away-${status}-${method}`;
      const r = await call(client, 'sec.get', { url: redirect(A, status, B, away), init });
      assert.equal(r.json?.status, 200, `${away}: ${r.text}`);
      assert.deepEqual(a.tagged(away).map((h) => [h.path, h.headers.authorization]), [['/redirect', `Bearer ${TOKEN}`]], away);
      assert.deepEqual(b.tagged(away).map((h) => [h.path, h.headers.authorization]), [['/ok', undefined]], `${away}: the other host never saw it`);

      const back = `back-${status}-${method}`;
      await call(client, 'sec.get', { url: redirect(B, status, A, back), init });
      assert.deepEqual(b.tagged(back).map((h) => h.headers.authorization), [undefined], back);
      assert.deepEqual(a.tagged(back).map((h) => h.headers.authorization), [`Bearer ${TOKEN}`], `${back}: added on the hop to the secret host`);

      const rename = `rename-${status}-${method}`; // the same server under another name
      await call(client, 'sec.get', { url: redirect(A, status, `http://localhost:${a.port}`, rename), init });
      assert.deepEqual(a.tagged(rename).map((h) => [h.path, h.headers.authorization]), [['/redirect', `Bearer ${TOKEN}`], ['/ok', undefined]], rename);
    }
  }
  // The same host on every hop: on every hop.
  await call(client, 'sec.get', { url: redirect(A, 307, A, 'stay') });
  assert.deepEqual(a.tagged('stay').map((h) => h.headers.authorization), [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
  // A guest's own header to a secret host, redirected elsewhere: the other host gets the guest's, not the secret.
  await call(client, 'sec.get', { url: redirect(A, 302, B, 'own-away'), init: { headers: { authorization: 'guest-own' } } });
  assert.deepEqual(b.tagged('own-away').map((h) => h.headers.authorization), ['guest-own']);
});

test('the guest cannot read the secret: environment, commands, requests, responses, errors; nor the audit file or the log', async (t) => {
  const a = await server(t);
  const { client, stderr, dir } = await serve(t, a, {
    extra: '[scripting]\nallowEnv = ["TEST_GH_TOKEN", "TEST_LOC_KEY", "TEST_VISIBLE"]\n[audit]\npath = "audit.jsonl"\n',
  });
  const A = `http://127.0.0.1:${a.port}`;
  const r = await call(client, 'sec.dump', {
    secretUrl: `${A}/ok?tag=dump`,
    redirectUrl: `${A}/redirect?tag=dump-redirect&status=302&to=${encodeURIComponent(`http://localhost:${a.port}/ok?tag=dump-redirect`)}`,
    resetUrl: `${A}/reset?tag=dump-reset`,
  });
  assert.equal(r.isError, false, r.text);
  const dump = JSON.parse(r.text);
  // The dump really looked: the pass-through works for an ordinary name, the requests were made with the secret.
  assert.equal(dump.env.TEST_VISIBLE, 'visible-value');
  assert.equal('TEST_GH_TOKEN' in dump.env, false);
  assert.equal('TEST_LOC_KEY' in dump.env, false);
  assert.equal(dump.command, '[]', "a command's env pass-through gets nothing either");
  assert.equal(dump.fetched.status, 200);
  assert.equal(dump.requestClient.status, 200);
  assert.equal(dump.manual.status, 302);
  assert.match(dump.errorRedirect.error, /redirect: "error"|fetch failed/);
  assert.match(dump.reset.error, /fetch failed/);
  assert.match(dump.refused.error, /^PermissionError/);
  assert.ok(a.tagged('dump').length >= 2 && a.tagged('dump').every((h) => h.headers.authorization === `Bearer ${TOKEN}`), 'the secret host got the header');
  assert.equal(a.tagged('dump-reset')[0].headers.authorization, `Bearer ${TOKEN}`);
  // A script (the operator's or client's own code) sees every allowed name, but not a secret's.
  const s = await call(client, 'run_script', { code: 'JSON.stringify(process.env)' });
  assert.deepEqual(JSON.parse(s.json.result), { TEST_VISIBLE: 'visible-value' });

  for (const [what, text] of [['the dump', r.text], ['the script', s.text], ['the log', stderr()], ['the audit file', readFileSync(join(dir, 'audit.jsonl'), 'utf8')]]) {
    assert.equal(text.includes(TOKEN), false, `${what} holds the secret`);
    assert.equal(text.includes(LOC_KEY), false, `${what} holds the other secret`);
  }
  assert.match(stderr(), /dump \{/, 'the guest logged its dump');
  assert.match(readFileSync(join(dir, 'audit.jsonl'), 'utf8'), /"op":"http\.fetch"/);
});

test('the browser never carries a secret, even to its host', { timeout: 120_000 }, async (t) => {
  const a = await server(t);
  const { client } = await serve(t, a);
  const r = await call(client, 'sec.browse', { url: `http://127.0.0.1:${a.port}/ok?tag=browser` });
  assert.equal(r.isError, false, r.text);
  const hits = a.tagged('browser');
  assert.ok(hits.length >= 2, `${hits.length} browser requests`); // the navigation and the page's own fetch
  for (const h of hits) assert.equal(h.headers.authorization, undefined);
  assert.ok(!JSON.stringify(a.hits).includes(TOKEN));
});

test('a secret the operator did not configure, or whose variable is unset, fails the call with the config to add', async (t) => {
  const a = await server(t);
  const { client, stderr } = await serve(t, a, { env: { TEST_LOC_KEY: LOC_KEY } });
  const missing = await call(client, 'sec.missing', { url: `http://127.0.0.1:${a.port}/ok?tag=missing` });
  assert.equal(missing.text, 'SecretError: tool "sec.missing" declares allow.secrets "nosuch", which the operator has not configured: add [secrets.nosuch] to kiln.toml with env = "<VARIABLE>", hosts = ["<host>"], header = "<header name>" and format = "<value with one {}>" (docs/configuration.md)');
  const unset = await call(client, 'sec.get', { url: `http://127.0.0.1:${a.port}/ok?tag=unset` });
  assert.equal(unset.text, `SecretError: tool "sec.get" declares allow.secrets "github", but [secrets.github] env = "TEST_GH_TOKEN" is not set in kiln's environment: set TEST_GH_TOKEN where kiln starts (it is read once, when the server starts), or point [secrets.github] env at the variable that holds it`);
  assert.equal(a.hits.length, 0, 'the handlers never ran: nothing reached the server');
  // The load said so already; a tool whose secrets are all usable is unaffected.
  assert.match(stderr(), /kiln: .*sec\.wasm: tool "sec\.missing" declares allow\.secrets "nosuch", which the operator has not configured/);
  assert.match(stderr(), /tool "sec\.get" declares allow\.secrets "github", but \[secrets\.github\] env = "TEST_GH_TOKEN" is not set/);
  assert.equal((await call(client, 'sec.plain', { url: `http://127.0.0.1:${a.port}/ok?tag=fine` })).json.status, 200);
});

test('a secret not granted fails the call with the line to add; granting it applies at the next call, and the warning goes', async (t) => {
  const a = await server(t);
  const dir = tempDir(t);
  const file = config(dir, a);
  const granted = readFileSync(file, 'utf8');
  writeFileSync(file, granted.replace('secrets = ["github", "loc", "nosuch"]', 'net = ["127.0.0.1"]'));
  const { client, stderr } = await mcp(t, ['--config', file], { env: ENV });
  const url = `http://127.0.0.1:${a.port}/ok?tag=ungranted`;
  const refused = await call(client, 'sec.get', { url });
  assert.equal(refused.isError, true);
  assert.match(refused.text, /^PermissionError: tool "sec\.get" declares secrets "github", but the operator has not granted it to .*sec\.wasm .*to allow it, add the line secrets = \["github"\] to \[grants\.".*sec\.wasm"\] of .*kiln\.toml$/);
  assert.equal(a.hits.length, 0, 'the handler never ran');
  const ungranted = (w) => w.includes('declares secrets "github", but the operator has not granted it');
  assert.ok((await call(client, 'kiln_extensions')).json.warnings.some(ungranted), 'the load said so');
  assert.match(stderr(), /declares secrets "github", but the operator has not granted it/);
  assert.equal((await call(client, 'sec.plain', { url })).json.status, 200, 'a tool declaring no secret is unaffected');
  writeFileSync(`${file}.tmp`, granted);
  renameSync(`${file}.tmp`, file);
  assert.ok(await waitUntil(async () => (await call(client, 'sec.get', { url: `${url}-2` })).json?.status === 200, 10_000), 'the grant never applied');
  assert.equal(a.tagged('ungranted-2').at(-1).headers.authorization, `Bearer ${TOKEN}`);
  const report = (await call(client, 'kiln_extensions')).json;
  assert.equal(report.warnings.some(ungranted), false, 'the warning outlived the grant');
  assert.deepEqual(report.operator.secrets.github.grantedTo, [artifact]);
});

test('[secrets.*] is validated: every key, the hosts grammar, one {} in format, a header name', async (t) => {
  const dir = tempDir(t);
  const base = { env: '"X_TOKEN"', hosts: '["api.example.com"]', header: '"authorization"', format: '"Bearer {}"' };
  const table = (over, name = 'gh') => `[secrets.${name}]\n${Object.entries({ ...base, ...over }).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`;
  const bad = [
    [table({ extra: '1' }), /\[secrets\.gh\] has an unknown key "extra" \(env, hosts, header, format\)/],
    [table({ format: undefined }), /\[secrets\.gh\] needs format/],
    [table({ format: '"Bearer"' }), /\[secrets\.gh\] format must contain \{\} exactly once/],
    [table({ format: '"{}:{}"' }), /\[secrets\.gh\] format must contain \{\} exactly once/],
    [table({ format: '"Bearer {}\\r\\nX-Evil: 1"' }), /\[secrets\.gh\] format must be a string .*no line breaks/],
    [table({ header: '"bad header"' }), /\[secrets\.gh\] header must be a header name/],
    [table({ header: '"Cookie"' }), /\[secrets\.gh\] header = "Cookie" is set by kiln itself/],
    [table({ header: '"host"' }), /\[secrets\.gh\] header = "host" is set by kiln itself/],
    [table({ hosts: '[]' }), /\[secrets\.gh\] hosts must be a non-empty list/],
    [table({ hosts: '["http://api.example.com/"]' }), /\[secrets\.gh\] hosts: "http:\/\/api\.example\.com\/" is not a host/],
    [table({ env: '"X-TOKEN"' }), /\[secrets\.gh\] env must be the name of an environment variable/],
    [table({ env: '"PATH"' }), /\[secrets\.gh\] env = "PATH" is kiln's own setting/],
    [table({}) + table({}, 'other'), /\[secrets\.gh\] and \[secrets\.other\] read the same env = "X_TOKEN"/],
    ['secrets = 1\n', /\[secrets\] must be a table/],
    [table({}, '"bad name"'), /"bad name" is not a secret name/],
  ];
  for (const [toml, expected] of bad) {
    writeFileSync(join(dir, 'kiln.toml'), toml);
    const r = await kiln(['mcp', '--config', join(dir, 'kiln.toml')]);
    assert.notEqual(r.code, 0, toml);
    assert.match(r.stderr, /ConfigError|kiln\.toml/, toml);
    assert.match(r.stderr, expected, toml);
  }
  // The manifest's side: names only.
  writeFileSync(join(dir, 'x.ts'), `defineTool({ name: 'x', allow: { secrets: ['has space'] }, handler: () => 1 });\n`);
  const r = await kiln(['build', join(dir, 'x.ts'), '-o', join(dir, 'x.wasm')]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /tool "x": allow\.secrets must be an array of secret names/);
});

test('the rules, directly: https or loopback only, host and port matching, one header per name, no value in any message', async () => {
  const { SecretStore, withSecrets, readSecrets } = await import('../dist/host/capabilities/secrets/secrets.js');
  const config = readSecrets({
    gh: { env: 'GH', hosts: ['api.example.com', '*.example.org', 'localhost:8080'], header: 'Authorization', format: 'Bearer {}' },
    two: { env: 'TWO', hosts: ['api.example.com'], header: 'authorization', format: '{}' },
  }, (m) => new Error(m));
  const store = new SecretStore(config, { GH: '  tok-1  ', TWO: 'tok-2' });
  const gh = store.headersFor(['gh']);
  const sent = (url) => withSecrets([['accept', '*/*'], ['Authorization', 'guest']], new URL(url), gh);
  assert.deepEqual(sent('https://api.example.com/x'), [['accept', '*/*'], ['authorization', 'Bearer tok-1']], 'the value is trimmed');
  assert.deepEqual(sent('https://API.EXAMPLE.COM.:443/x'), [['accept', '*/*'], ['authorization', 'Bearer tok-1']]);
  assert.deepEqual(sent('https://deep.sub.example.org/'), [['accept', '*/*'], ['authorization', 'Bearer tok-1']]);
  assert.deepEqual(sent('https://example.org/'), [['accept', '*/*'], ['authorization', 'Bearer tok-1']]);
  assert.deepEqual(sent('http://localhost:8080/'), [['accept', '*/*'], ['authorization', 'Bearer tok-1']], 'plain http to loopback');
  for (const url of ['http://api.example.com/x', 'https://api.example.com.evil.net/', 'https://evilexample.org/', 'http://localhost:8081/', 'https://api.example.com@evil.net/', 'ws://api.example.com/']) {
    assert.deepEqual(sent(url), [['accept', '*/*'], ['Authorization', 'guest']], `${url}: never over plain http elsewhere, never to another host`);
  }
  assert.equal(JSON.stringify(gh).includes('tok-1'), false);
  assert.equal((await import('node:util')).inspect(gh, { showHidden: true, depth: 9 }).includes('tok-1'), false);
  const both = store.headersFor(['gh', 'two']);
  assert.throws(() => withSecrets([], new URL('https://api.example.com/'), both), /secrets "gh" and "two" both apply to api\.example\.com in the header authorization/);
  assert.deepEqual(store.headersFor([]), []);
  // A value a header cannot carry is refused without quoting it.
  const bad = new SecretStore(config, { GH: 'tok\r\nX-Injected: 1', TWO: '' });
  const why = bad.problem({ name: 't', allow: { secrets: ['gh'] } });
  assert.match(why, /the value of GH \(\[secrets\.gh\] env\) cannot be sent in a header/);
  assert.equal(why.includes('tok'), false);
  assert.match(bad.problem({ name: 't', allow: { secrets: ['two'] } }), /env = "TWO" is not set/);
  // guestEnv never passes a secret's variable, whatever lists it.
  const { guestEnv } = await import('../dist/host/capabilities/env/env.js');
  const { DEFAULT_POLICY } = await import('../dist/host/policy/policy.js');
  const ext = { identity: { file: '/x.ts', sha256: 'ab'.repeat(32) }, declared: ['GH', 'TZ'] };
  assert.deepEqual(guestEnv({ ...DEFAULT_POLICY, allowEnv: ['GH', 'TZ'], secrets: config }, ext, { GH: 'tok-1', TZ: 'UTC' }), { TZ: 'UTC' });
  // nor does a grant's pass-through (allowEnv) in any mode
  const grants = { mode: 'granted', extensions: { '/x.ts': { allowEnv: ['GH', 'TZ'] } }, spelled: {} };
  assert.deepEqual(guestEnv({ ...DEFAULT_POLICY, grants, secrets: config }, ext, { GH: 'tok-1', TZ: 'UTC' }), { TZ: 'UTC' });
  assert.deepEqual(guestEnv({ ...DEFAULT_POLICY, allowEnv: ['GH', 'TZ'], secrets: config }, undefined, { GH: 'tok-1', TZ: 'UTC' }), { TZ: 'UTC' }, 'scripts');
});

test('a secret is a grant: declared ∩ granted in every mode, with the line to add; its authority shows it', async () => {
  const { grantedSecrets, NotGrantedError } = await import('../dist/host/policy/grants.js');
  const { authority } = await import('../dist/host/policy/authority.js');
  const ext = { file: '/w/tools/a.ts', sha256: 'ab'.repeat(32) };
  const tool = { name: 'a.get', allow: { secrets: ['github'] } };
  const grants = (mode, grant) => ({ mode, extensions: grant ? { '/w/tools/a.ts': grant } : {}, spelled: { '/w/tools/a.ts': 'tools/a.ts' }, file: '/w/kiln.toml' });
  for (const mode of ['declared', 'granted', 'ask']) {
    assert.deepEqual(grantedSecrets(grants(mode, { secrets: ['github'] }), ext, tool), ['github'], mode);
    assert.deepEqual(grantedSecrets(grants(mode), ext, { name: 'p', allow: {} }), [], `${mode}: declares none, gets none`);
    assert.throws(() => grantedSecrets(grants(mode), ext, tool), (e) => e instanceof NotGrantedError && !e.askable &&
      /tool "a\.get" declares secrets "github", but the operator has not granted it to tools\/a\.ts .*to allow it, add the table \[grants\."tools\/a\.ts"\] with the line secrets = \["github"\] of \/w\/kiln\.toml$/.test(e.message), `${mode}: no grant`);
    assert.throws(() => grantedSecrets(grants(mode, { net: ['x'] }), ext, tool), /to allow it, add the line secrets = \["github"\] to \[grants\."tools\/a\.ts"\]/, `${mode}: a grant without secrets`);
    assert.throws(() => grantedSecrets(grants(mode, { secrets: ['other'] }), ext, tool), /to allow it, add "github" to secrets in \[grants\."tools\/a\.ts"\]/, `${mode}: another secret`);
  }
  const policy = (g) => ({ grants: g, commands: { enabled: true }, browser: { enabled: true }, allowEnv: [] });
  const allow = { commands: {}, net: [], browser: [], secrets: ['github', 'loc'] };
  const a = authority(allow, ext, policy(grants('declared', { secrets: ['github'] })));
  assert.deepEqual([a.declared.secrets, a.granted.secrets, a.effective.secrets], [['github', 'loc'], ['github'], []], 'one not granted: the tool is refused, it uses none');
  const b = authority(allow, ext, policy(grants('granted', { secrets: ['loc', 'github', 'other'] })));
  assert.deepEqual([b.granted.secrets, b.effective.secrets], [['loc', 'github', 'other'], ['github', 'loc']]);
  assert.deepEqual(authority(allow, ext, policy(grants('declared'))).granted.secrets, [], 'never "not narrowed"');
});
