// kiln as a service over HTTP, tried as an operator and as its tenants would, with real processes and clients:
// principals (a shared token, per-client tokens kept as digests, OAuth 2.1 JWTs checked against a local
// issuer's JWKS) who cannot see, call into or close each other's sessions and tasks, each with its own tools
// and limits; health and readiness without a token; Prometheus metrics behind one; JSON log lines with no
// secret in them; SIGTERM draining a call in flight; SIGHUP reading the config again; a port in use and a short
// token refused at start.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { kiln, kilnBin, stderrMatch, tempDir, waitUntil } from './helpers.mjs';

const MODERN = '2026-07-28';
const sha = (s) => createHash('sha256').update(s).digest('hex');
const ALICE = `alice-${randomBytes(12).toString('hex')}`;
const BOB = `bob-${randomBytes(12).toString('hex')}`;
const SHARED = `shared-${randomBytes(12).toString('hex')}`;

const EXT = `
defineTool({ name: 'svc.count', exposeAsTool: true, handler: async () => { const n = Number(vars.get('n') ?? 0) + 1; vars.set('n', String(n)); return { n }; } });
defineTool({ name: 'svc.slow', exposeAsTool: true, timeoutMs: 120000, handler: async ({ args, progress }) => { progress(1, 2); await new Promise((r) => setTimeout(r, args.ms)); return 'slow done'; } });
defineTool({ name: 'other.secret', exposeAsTool: true, handler: async () => 'only for alice' });
`;

/** A kiln.toml with the two principals; `extra` appended. */
function workspace(t, extra = '') {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'svc.ts'), EXT);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = ["./svc.ts"]
[principals.alice]
tokenSha256 = "${sha(ALICE)}"
metrics = true
[principals.bob]
tokenSha256 = "${sha(BOB)}"
tools = ["svc.*"]
[principals.bob.limits]
timeoutMs = 1500
maxSessions = 2
${extra}
`);
  return { dir, config };
}

/** `kiln mcp --http` on `config`, stopped when the test ends; stderr kept. */
async function serve(t, config, env = {}, args = []) {
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', config, ...args], {
    env: { ...process.env, KILN_TOKEN: SHARED, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = (await stderrMatch(child, /at (http:\/\/[\d.:]+\/mcp)/))[1];
  return { url, base: url.replace(/\/mcp$/, ''), child, stderr: () => stderr, exited: new Promise((r) => child.on('exit', (code, signal) => r({ code, signal }))) };
}

async function client(t, url, token, mode = 'legacy') {
  const c = new Client({ name: 'svc', version: '0' }, { versionNegotiation: { mode: mode === MODERN ? { pin: MODERN } : 'legacy' } });
  t.after(() => c.close().catch(() => {}));
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

const count = async (c, session) => (await c.callTool({ name: 'svc.count', arguments: {}, ...(session ? { _meta: { session } } : {}) })).structuredContent?.n;
const text = (r) => r.content.map((x) => x.text).join('');

test('principals: each sees its own sessions, tools and limits; another principal naming a session gets its own', { timeout: 120_000 }, async (t) => {
  const { config } = workspace(t);
  const { url } = await serve(t, config);
  for (const mode of ['legacy', MODERN]) {
    const alice = await client(t, url, ALICE, mode);
    const bob = await client(t, url, BOB, mode);
    const tag = `w-${mode}`;
    assert.deepEqual([await count(alice, tag), await count(alice, tag)], [1, 2]);
    const bobs = await bob.callTool({ name: 'svc.count', arguments: {}, _meta: { session: tag } });
    assert.equal(bobs.structuredContent?.n, 1, `${mode}: bob's "${tag}" is his own: ${JSON.stringify(bobs)}`);
    // bob closes "his" session of that name: alice's goes on.
    await bob.callTool({ name: 'kiln_close_session', arguments: { session: tag } });
    assert.equal(await count(alice, tag), 3, `${mode}: alice's session survived bob's close`);
    // bob's tools: svc.* only; other.secret and run_script are not his, listed or called.
    const names = (await bob.listTools()).tools.map((x) => x.name);
    assert.ok(names.includes('svc.count') && !names.includes('other.secret') && !names.includes('run_script') && !names.includes('kiln_extensions'), names.join(','));
    assert.match(text(await bob.callTool({ name: 'other.secret', arguments: {} })), /no tool named "other\.secret" is exposed/);
    assert.match(text(await bob.callTool({ name: 'run_script', arguments: { code: "await plugins['other.secret']({})" } })), /no tool named "run_script" is exposed/);
    assert.equal(text(await alice.callTool({ name: 'other.secret', arguments: {} })), 'only for alice');
    // bob's limits: his calls stop at his timeoutMs; he holds at most two sessions.
    assert.match(text(await bob.callTool({ name: 'svc.slow', arguments: { ms: 60000 } }, { timeout: 120_000 })), /did not finish within \[principals\."bob"\.limits\] timeoutMs \(1500 ms\)/);
    assert.equal(text(await alice.callTool({ name: 'svc.slow', arguments: { ms: 1600 } }, { timeout: 120_000 })), 'slow done', 'not alice\'s');
    await bob.callTool({ name: 'kiln_close_session', arguments: {} });
    await count(bob, `${tag}-a`);
    await count(bob, `${tag}-b`);
    assert.match(text(await bob.callTool({ name: 'svc.count', arguments: {}, _meta: { session: `${tag}-c` } })), /holds 2 sessions, the most \[principals\."bob"\.limits\] maxSessions allows/);
    await bob.callTool({ name: 'kiln_close_session', arguments: { session: `${tag}-a` } });
    await bob.callTool({ name: 'kiln_close_session', arguments: { session: `${tag}-b` } });
    await alice.close();
    await bob.close();
  }
});

test('principals: a 2025 MCP session is its creator\'s (another token gets 404); a task is its creator\'s', { timeout: 60_000 }, async (t) => {
  const { config } = workspace(t, '[mcp]\ntaskAfterMs = 0');
  const { url } = await serve(t, config);
  const post = (token, body, headers = {}) => fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  const init = await post(ALICE, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'a', version: '0' } } });
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  const hijack = await post(BOB, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'svc.count', arguments: {} } }, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  assert.equal(hijack.status, 404);
  assert.match(await hijack.text(), /no such MCP session/);
  const env = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'r', version: '0' } };
  const modern = (token, method, params, name) => post(token, { jsonrpc: '2.0', id: 2, method, params: { ...params, _meta: env } }, { 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name }).then((r) => r.json());
  const task = (await modern(ALICE, 'tools/call', { name: 'svc.slow', arguments: { ms: 2000 } }, 'svc.slow')).result;
  assert.equal(task.resultType, 'task');
  assert.equal((await modern(BOB, 'tasks/get', { taskId: task.taskId }, task.taskId)).error?.code, -32602, 'bob sees no such task');
  assert.equal((await modern(BOB, 'tasks/cancel', { taskId: task.taskId }, task.taskId)).error?.code, -32602);
  assert.ok(await waitUntil(async () => (await modern(ALICE, 'tasks/get', { taskId: task.taskId }, task.taskId)).result?.status === 'completed'), 'alice\'s task ran to its end');
});

test('OAuth: a JWT of the issuer, for this server, unexpired, is a principal; wrong audience, expired, another key or no expiry are 401', { timeout: 60_000 }, async (t) => {
  const issuer = 'http://127.0.0.1/issuer';
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const other = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const jwks = createServer((req, res) => {
    res.writeHead(req.url === '/jwks.json' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise((r) => jwks.listen(0, '127.0.0.1', r));
  t.after(() => jwks.close());
  const { dir } = workspace(t);
  const config = join(dir, 'oauth.toml');
  const audience = 'http://127.0.0.1:9/mcp';
  writeFileSync(config, `extensions = ["./svc.ts"]\n[http.oauth]\nissuer = "${issuer}"\njwksUri = "http://127.0.0.1:${jwks.address().port}/jwks.json"\naudience = "${audience}"\nscopes = ["mcp"]\n[principals."oauth:carol"]\ntools = ["svc.count"]\n[principals."oauth:*"]\ntools = ["svc.*"]\n`);
  const { url, base, stderr } = await serve(t, config, { KILN_TOKEN: '' });
  const sign = (claims, { key = privateKey, kid = 'k1', exp = '5m' } = {}) => {
    let j = new SignJWT({ scope: 'mcp', ...claims }).setProtectedHeader({ alg: 'RS256', kid }).setIssuedAt().setIssuer(issuer).setAudience(claims.aud ?? audience).setSubject(claims.sub ?? 'carol');
    if (exp) j = j.setExpirationTime(exp);
    return j.sign(key);
  };
  const carol = await client(t, url, await sign({}));
  assert.deepEqual((await carol.listTools()).tools.map((x) => x.name), ['kiln_close_session', 'svc.count'], 'carol\'s [principals."oauth:carol"] tools');
  assert.equal(await count(carol, 's'), 1);
  const dave = await client(t, url, await sign({ sub: 'dave' }));
  assert.equal(await count(dave, 's'), 1, 'another subject, another session space');
  assert.deepEqual((await dave.listTools()).tools.map((x) => x.name).sort(), ['kiln_close_session', 'svc.count', 'svc.slow'], 'a subject without a table of its own gets [principals."oauth:*"]');
  assert.equal(await count(carol, 's'), 2);
  const refused = async (token) => {
    const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}' });
    await r.text();
    return [r.status, r.headers.get('www-authenticate')];
  };
  for (const [what, token] of [
    ['wrong audience', await sign({ aud: 'http://elsewhere/mcp' })],
    ['expired', await sign({}, { exp: Math.floor(Date.now() / 1000) - 60 })],
    ['signed by another key', await sign({}, { key: other.privateKey })],
    ['no expiry', await sign({}, { exp: null })],
    ['no scope', await sign({ scope: 'read' })],
    ['HMAC-signed with the public key as its secret', await new SignJWT({ scope: 'mcp' }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).setIssuer(issuer).setAudience(audience).setSubject('carol').setExpirationTime('5m').sign(new TextEncoder().encode(JSON.stringify(jwk)))],
    ['a sub that is not a string', await new SignJWT({ scope: 'mcp', sub: ['carol'] }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setAudience(audience).setExpirationTime('5m').sign(privateKey)],
    ['unsigned (alg none)', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: issuer, aud: audience, sub: 'carol', scope: 'mcp', exp: Math.floor(Date.now() / 1000) + 300 })).toString('base64url')}.`],
  ]) {
    const [status, challenge] = await refused(token);
    assert.equal(status, 401, what);
    assert.match(challenge, /Bearer error="invalid_token", resource_metadata="http:\/\/127\.0\.0\.1:9\/\.well-known\/oauth-protected-resource\/mcp"/, what);
  }
  const meta = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json();
  assert.deepEqual(meta, { resource: audience, authorization_servers: [issuer], bearer_methods_supported: ['header'], scopes_supported: ['mcp'] });
  assert.ok(!stderr().includes(privateKey.toString()), 'no key in the log');
});

test('operability: health without a token, metrics behind one, one JSON line per call with no secret', { timeout: 60_000 }, async (t) => {
  const { config } = workspace(t);
  const { url, base, stderr } = await serve(t, config);
  assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
  const ready = await fetch(`${base}/readyz`, { headers: { host: 'evil.example' } });
  assert.equal(ready.status, 200, 'no Host check on health');
  const alice = await client(t, url, ALICE);
  await count(alice, 'm');
  await alice.callTool({ name: 'nope.nothing', arguments: {} });
  const scrape = (token) => fetch(`${base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  assert.equal((await scrape()).status, 401);
  assert.equal((await scrape(BOB)).status, 403, 'bob may not read them');
  for (const token of [SHARED, ALICE]) {
    const r = await scrape(token);
    assert.equal(r.status, 200);
    const body = await r.text();
    assert.match(body, /kiln_calls_total\{tool="svc\.count",outcome="ok"\} 1/);
    assert.match(body, /kiln_calls_total\{tool="other",outcome="error"\} 1/, 'an unknown tool name is not a label');
    assert.match(body, /kiln_call_duration_seconds_bucket\{le="0\.1",tool="svc\.count"\}/);
    assert.match(body, /kiln_sessions \d+/);
    assert.match(body, /kiln_guests \d+/);
    assert.match(body, /kiln_guest_memory_bytes \d+/);
  }
  const lines = stderr().trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const calls = lines.filter((l) => l.msg === 'call');
  const counted = calls.find((l) => l.tool === 'svc.count');
  assert.ok(counted, stderr());
  assert.equal(counted.principal, 'alice');
  assert.equal(counted.outcome, 'ok');
  assert.match(counted.session, /^[0-9a-f]{12}$/, 'the session as a digest');
  assert.ok(typeof counted.requestId === 'string' && typeof counted.durationMs === 'number' && typeof counted.time === 'string');
  for (const secret of [SHARED, ALICE, BOB]) assert.ok(!stderr().includes(secret), 'no token in the log');
});

test('SIGTERM drains: a call in flight finishes and is answered, /readyz says so, new sessions are refused, exit 0', { timeout: 60_000 }, async (t) => {
  const { config } = workspace(t);
  const { url, base, child, exited, stderr } = await serve(t, config);
  const alice = await client(t, url, ALICE);
  let progressed = false;
  const slow = alice.callTool({ name: 'svc.slow', arguments: { ms: 1500 } }, { timeout: 60_000, onprogress: () => { progressed = true; } });
  assert.ok(await waitUntil(() => progressed), 'the call is running');
  child.kill('SIGTERM');
  assert.ok(await waitUntil(async () => (await fetch(`${base}/readyz`).then((r) => r.status).catch(() => 0)) !== 200), 'not ready from the start of the drain');
  assert.equal(text(await slow), 'slow done', 'the call in flight was answered');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(stderr(), /SIGTERM: draining \(1 call\(s\) in flight\)/);
});

test('SIGTERM past [http] drainMs stops what still runs and answers it; SIGHUP reads the config again', { timeout: 60_000 }, async (t) => {
  const { config, dir } = workspace(t, '[http]\ndrainMs = 300');
  const { url, child, exited } = await serve(t, config);
  const alice = await client(t, url, ALICE);
  assert.ok(!(await alice.listTools()).tools.some((x) => x.name === 'extra.tool'));
  writeFileSync(join(dir, 'extra.ts'), "defineTool({ name: 'extra.tool', exposeAsTool: true, handler: async () => 'extra' });");
  const before = (await import('node:fs')).readFileSync(config, 'utf8');
  writeFileSync(config, before.replace('extensions = ["./svc.ts"]', 'extensions = ["./svc.ts", "./extra.ts"]'));
  child.kill('SIGHUP');
  assert.ok(await waitUntil(async () => (await alice.listTools()).tools.some((x) => x.name === 'extra.tool')), 'reloaded');
  let progressed = false;
  const slow = alice.callTool({ name: 'svc.slow', arguments: { ms: 60000 } }, { timeout: 60_000, onprogress: () => { progressed = true; } });
  assert.ok(await waitUntil(() => progressed));
  child.kill('SIGTERM');
  assert.match(text(await slow), /the server is stopping, and the call had not finished 300 ms later \(\[http\] drainMs\)/);
  assert.equal((await exited).code, 0);
});

test('principals: a script calls only the tools its principal may; the principal\'s limits hold inside its callees', { timeout: 60_000 }, async (t) => {
  const CAROL = `carol-${randomBytes(12).toString('hex')}`;
  const { config } = workspace(t, `[principals.carol]\ntokenSha256 = "${sha(CAROL)}"\ntools = ["run_script", "svc.*"]\n[principals.carol.limits]\ntimeoutMs = 1500\n`);
  const { url } = await serve(t, config);
  const carol = await client(t, url, CAROL);
  const script = async (code) => {
    const r = JSON.parse(text(await carol.callTool({ name: 'run_script', arguments: { code } }, { timeout: 60_000 })));
    return r.status === 'ok' ? JSON.stringify(r.result) : r.error.message;
  };
  assert.match(await script("await plugins['other.secret']({})"), /plugins\["other\.secret"\]: the script's caller may not call it \(\[principals\."carol"\] tools does not list it\)/);
  assert.doesNotMatch(await script("await plugins['other.secret']({})"), /only for alice/);
  assert.match(await script("await plugins['svc.count']({})"), /"n":\s*1/);
  // svc.slow declares timeoutMs 120000; through carol's script it stops at her 1500.
  assert.match(await script("await plugins['svc.slow']({ ms: 60000 })"), /did not finish within \[principals\."carol"\.limits\] timeoutMs \(1500 ms\)/);
});

test('principals: under [mcp] toolNames = "portable" a tools list written in advertised names holds for scripts too', { timeout: 60_000 }, async (t) => {
  const DORA = `dora-${randomBytes(12).toString('hex')}`;
  const { config } = workspace(t, `[principals.dora]\ntokenSha256 = "${sha(DORA)}"\ntools = ["run_script", "svc_*"]\n[mcp]\ntoolNames = "portable"\n`);
  const { url } = await serve(t, config);
  const dora = await client(t, url, DORA);
  assert.deepEqual((await dora.listTools()).tools.map((x) => x.name).sort(), ['kiln_close_session', 'run_script', 'svc_count', 'svc_slow']);
  const r = JSON.parse(text(await dora.callTool({ name: 'run_script', arguments: { code: "[await plugins['svc.count']({}), await plugins['other.secret']({}).catch((e) => e.name)]" } })));
  assert.deepEqual(r.result, [{ n: 1 }, 'PermissionError'], JSON.stringify(r));
});

test('a saved [principals] change applies to the next request: a removed table\'s token is refused, a narrowed tools list hides and refuses', { timeout: 60_000 }, async (t) => {
  const { config } = workspace(t);
  const { url, child } = await serve(t, config);
  const alice = await client(t, url, ALICE);
  const bob = await client(t, url, BOB);
  assert.equal(await count(bob, 'kept'), 1);
  assert.ok((await alice.listTools()).tools.some((x) => x.name === 'other.secret'));
  const before = (await import('node:fs')).readFileSync(config, 'utf8');
  writeFileSync(config, before.replace(/\[principals\.bob\][^]*?maxSessions = 2\n/, '').replace('metrics = true', 'metrics = true\ntools = ["svc.count"]'));
  child.kill('SIGHUP');
  const status = () => fetch(url, { method: 'POST', headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'b', version: '0' } } }) }).then(async (r) => (await r.text(), r.status));
  assert.ok(await waitUntil(async () => (await status()) === 401), 'bob\'s token is refused once his table is gone');
  await assert.rejects(count(bob, 'kept'), /the bearer token is not one this server takes/, 'and so is his open MCP session');
  const names = (await alice.listTools()).tools.map((x) => x.name);
  assert.deepEqual(names, ['kiln_close_session', 'svc.count'].filter((n) => names.includes(n)).sort(), names.join(','));
  assert.ok(!names.includes('other.secret'));
  assert.match(text(await alice.callTool({ name: 'other.secret', arguments: {} })), /no tool named "other\.secret" is exposed/);
  assert.equal(await count(alice, 'w'), 1, 'what alice still may call, she calls');
});

/** A 2025 client that answers every approval question with `answer` (an ElicitResult's content.allow). */
async function asking(t, url, token, answer) {
  const asked = [];
  const c = new Client({ name: 'svc', version: '0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'legacy' } });
  c.setRequestHandler('elicitation/create', async (req) => (asked.push(req.params.message), { action: 'accept', content: { allow: answer } }));
  t.after(() => c.close().catch(() => {}));
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return { c, asked };
}

test('tenants apart: an "always" answer is its principal\'s own; one tenant\'s flood makes room from its own sessions; notices name no other tenant\'s session', { timeout: 120_000 }, async (t) => {
  const CAROL = `carol-${randomBytes(12).toString('hex')}`;
  const { dir, config } = workspace(t, `[principals.carol]\ntokenSha256 = "${sha(CAROL)}"\n[sessions]\nmaxSessions = 4\n[approvals]\nstore = "approvals.json"\n[[approvals.rules]]\nop = ["command"]\ncommand = ["hi"]\nverdict = "require"\n`);
  writeFileSync(join(dir, 'cmd.ts'), `
defineTool({ name: 'cmd.hi', exposeAsTool: true, allow: { commands: { hi: { run: ['printf', 'hi'] } } }, handler: async ({ commands }) => commands.run('hi') });
defineTool({ name: 'cmd.dev', exposeAsTool: true, allow: { commands: { dev: { run: ['sleep', '60'], persistent: true } } }, handler: async ({ commands }) => (await commands.start('dev')).name });
`);
  const before = (await import('node:fs')).readFileSync(config, 'utf8');
  writeFileSync(config, before.replace('extensions = ["./svc.ts"]', 'extensions = ["./svc.ts", "./cmd.ts"]'));
  const { url, child } = await serve(t, config);
  // Alice's human answers "always"; Bob's same operation is still put to Bob's human.
  const alice = await asking(t, url, ALICE, 'always');
  const bob = await asking(t, url, CAROL, 'once');
  assert.equal(text(await alice.c.callTool({ name: 'cmd.hi', arguments: {} })), 'hi');
  assert.equal(text(await alice.c.callTool({ name: 'cmd.hi', arguments: {} })), 'hi');
  assert.equal(alice.asked.length, 1, 'alice\'s "always" holds for alice');
  assert.equal(text(await bob.c.callTool({ name: 'cmd.hi', arguments: {} })), 'hi');
  assert.equal(bob.asked.length, 1, 'carol\'s human was asked: alice\'s "always" is not hers');
  assert.match((await import('node:fs')).readFileSync(join(dir, 'approvals.json'), 'utf8'), /"principal": "alice"/);

  // [sessions] maxSessions = 4: alice holds one; carol opening five makes room from her own, never alice's.
  const a = await client(t, url, ALICE);
  assert.equal(await count(a, 'keep'), 1);
  const carol = await client(t, url, CAROL);
  for (let i = 0; i < 5; i++) assert.equal(await count(carol, `c${i}`), 1);
  assert.equal(await count(a, 'keep'), 2, 'alice\'s session survived carol\'s flood');

  // A persistent command of alice's in a session with a telling name; the grant goes; bob is told of the stop
  // without alice's session name.
  const notices = [];
  bob.c.setNotificationHandler('notifications/message', (n) => notices.push(JSON.stringify(n.params.data)));
  await bob.c.setLoggingLevel('info');
  assert.equal(text(await a.callTool({ name: 'cmd.dev', arguments: {}, _meta: { session: 'acme-merger' } })), 'dev');
  writeFileSync(config, (await import('node:fs')).readFileSync(config, 'utf8') + '\n[commands]\nenabled = false\n');
  child.kill('SIGHUP');
  assert.ok(await waitUntil(() => notices.some((n) => /stopped 1 command\(s\)/.test(n))), notices.join('\n'));
  assert.ok(!notices.some((n) => /acme-merger|alice/.test(n)), notices.join('\n'));
});

test('a principal removed mid-call is stopped at once, its scripts gain nothing, and its MCP sessions end', { timeout: 60_000 }, async (t) => {
  const CAROL = `carol-${randomBytes(12).toString('hex')}`;
  const { config } = workspace(t, `[principals.carol]\ntokenSha256 = "${sha(CAROL)}"\ntools = ["run_script", "svc.*"]\n`);
  const { url, child, stderr } = await serve(t, config);
  const carol = await client(t, url, CAROL);
  // Her script keeps trying a tool she may not call; once her table is gone she must not get it either.
  const code = "const seen = []; for (let i = 0; i < 600; i++) { try { seen.push(await plugins['other.secret']({})); } catch (e) { seen.push(e.name); } console.log('try', i); await new Promise((r) => setTimeout(r, 50)); } seen";
  const logged = [];
  carol.setNotificationHandler('notifications/message', (n) => logged.push(n.params));
  await carol.setLoggingLevel('info');
  const running = carol.callTool({ name: 'run_script', arguments: { code, timeoutMs: 120000 } }, { timeout: 20_000 }).then(text, (e) => String(e));
  assert.ok(await waitUntil(() => logged.length > 0, 30_000), 'the script is looping');
  const before = (await import('node:fs')).readFileSync(config, 'utf8');
  writeFileSync(config, before.replace(/\[principals\.carol\][^]*$/, ''));
  child.kill('SIGHUP');
  const out = await running;
  assert.doesNotMatch(out, /only for alice/, 'the revoked script never reached the tool');
  assert.match(out, /its principal was removed from the config/, stderr());
});

test('a principal may not be named "stdio"; a tools-listed kiln_extensions shows only the principal\'s tools', { timeout: 60_000 }, async (t) => {
  const EVE = `eve-${randomBytes(12).toString('hex')}`;
  const bad = workspace(t, `[principals.stdio]\ntokenSha256 = "${sha(EVE)}"\n`);
  const r = await kiln(['mcp', '--http', '127.0.0.1:0', '--config', bad.config], { env: { KILN_TOKEN: SHARED } });
  assert.equal(r.code, 1);
  const last = JSON.parse(r.stderr.trim().split('\n').at(-1)); // a JSON line, as every line over HTTP
  assert.equal(last.level, 'error');
  assert.match(last.msg, /\[principals\."stdio"\]: "stdio" is the name of kiln's local client/);
  const { config } = workspace(t, `[principals.dora]\ntokenSha256 = "${sha(EVE)}"\ntools = ["svc.*", "kiln_extensions"]\n`);
  const { url } = await serve(t, config);
  const dora = await client(t, url, EVE);
  const report = text(await dora.callTool({ name: 'kiln_extensions', arguments: {} }));
  assert.match(report, /svc\.count/);
  assert.doesNotMatch(report, /other\.secret/);
});

test('a port in use, or a token under 16 characters, ends kiln at start with exit 1 and says why', { timeout: 60_000 }, async (t) => {
  const taken = createServer();
  await new Promise((r) => taken.listen(0, '127.0.0.1', r));
  t.after(() => taken.close());
  const { config } = workspace(t);
  const busy = await kiln(['mcp', '--http', `127.0.0.1:${taken.address().port}`, '--config', config], { env: { KILN_TOKEN: SHARED } });
  assert.equal(busy.code, 1);
  assert.match(busy.stderr, /the address is in use \(EADDRINUSE\)/);
  const short = await kiln(['mcp', '--http', '127.0.0.1:0', '--config', config], { env: { KILN_TOKEN: 'short' } });
  assert.equal(short.code, 1);
  assert.match(short.stderr, /the bearer token \(KILN_TOKEN or \[http\] token\) is 5 characters; kiln takes tokens of at least 16/);
  assert.doesNotMatch(short.stderr, /serving \d+ tool/, 'refused before the extensions were loaded');
  for (const line of short.stderr.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), `a JSON line: ${line}`);
});
