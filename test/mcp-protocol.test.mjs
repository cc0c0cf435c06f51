// The protocol's details, with real clients and raw JSON-RPC on real processes: tools/list pages (a cursor that
// stays good while the tools change, a cursor kiln did not make refused, one page on request); names advertised
// as model APIs accept them ([mcp] toolNames = "portable"), collisions served by none; stdin closing after a
// request lets its whole answer out (both revisions), and a question to a client that closed its input ends
// at once; a 2025 HTTP stream broken mid-call resumes from Last-Event-ID; 2026 discovery, cache hints,
// per-request logging and the routing headers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { call, kiln, kilnBin, mcp, root, stderrMatch, tempDir, waitUntil } from './helpers.mjs';

const MODERN = '2026-07-28';
const TOKEN = 'test-token-0123456789abcdef';
const ENVELOPE = (extra = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, ...extra,
});
const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };

/** `kiln mcp ...args` as a raw process: `lines` are the JSON messages it wrote to stdout. */
function rawStdio(t, args, opts = {}) {
  const child = spawn(process.execPath, [kilnBin, 'mcp', ...args], { cwd: opts.cwd ?? root, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const lines = [];
  let buf = '';
  let bytes = 0;
  child.stdout.on('data', (d) => {
    bytes += d.length;
    buf += d;
    for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) lines.push(JSON.parse(buf.slice(0, i)));
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, send: (m) => child.stdin.write(JSON.stringify(m) + '\n'), exited, bytes: () => bytes, stderr: () => stderr };
}

test('tools/list pages: every tool once while tools are added between pages; a made-up cursor is refused; pageSize 0 is one page', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const ext = join(dir, 'ext');
  mkdirSync(ext);
  writeFileSync(join(ext, 'b.ts'), "for (const n of ['b1', 'b2', 'b3', 'b4', 'b5', 'b6']) defineTool({ name: 'p.' + n, exposeAsTool: true, handler: () => n });");
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, 'extensions = ["./ext"]\n[mcp]\npageSize = 4\n');
  const { client } = await mcp(t, ['--watch', '--config', config]);
  let changed = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => void changed++);
  const page = (cursor) => client.request({ method: 'tools/list', params: cursor ? { cursor } : {} });
  const first = await page();
  assert.deepEqual(first.tools.map((x) => x.name), ['kiln_extensions', 'kiln_close_session', 'run_script', 'p.b1']);
  // Tools that sort before and after the cursor join between pages: the walk goes on from where it was.
  writeFileSync(join(ext, 'a.ts'), "defineTool({ name: 'p.a1', exposeAsTool: true, handler: () => 1 }); defineTool({ name: 'p.c1', exposeAsTool: true, handler: () => 1 });");
  assert.ok(await waitUntil(() => changed > 0), 'the new file loaded');
  const rest = [];
  for (let cursor = first.nextCursor; cursor;) {
    const p = await page(cursor);
    rest.push(...p.tools.map((x) => x.name));
    cursor = p.nextCursor;
  }
  assert.deepEqual(rest, ['p.b2', 'p.b3', 'p.b4', 'p.b5', 'p.b6', 'p.c1'], 'no tool twice, none skipped after the cursor');
  await assert.rejects(page('bm90IGEgY3Vyc29y'), (e) => e.code === -32602 && /is not one kiln gave/.test(e.message));
  // One page when the operator asks for it.
  writeFileSync(config, 'extensions = ["./ext"]\n[mcp]\npageSize = 0\n');
  assert.ok(await waitUntil(async () => (await page()).tools.length === 11), 'all 11 on one page');
  assert.equal((await page()).nextCursor, undefined);
});

test('[mcp] toolNames = "portable": names as model APIs take them, both spellings called, collisions served by none; kiln inspect and kiln_extensions show it', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'n.ts'), `
defineTool({ name: 'notes.add', exposeAsTool: true, handler: async ({ args }) => 'added ' + args.text });
defineTool({ name: 'notes.save', exposeAsTool: true, handler: async () => 'dot' });
defineTool({ name: 'notes_save', exposeAsTool: true, handler: async () => 'underscore' });
defineTool({ name: 'run.script', exposeAsTool: true, handler: async () => 'shadow' });
`);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, 'extensions = ["./n.ts"]\n[mcp]\ntoolNames = "portable"\n');
  const { client, stderr } = await mcp(t, ['--config', config]);
  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name);
  assert.deepEqual(names, ['kiln_extensions', 'kiln_close_session', 'run_script', 'notes_add']);
  assert.match(stderr(), /kiln: tools "notes\.save", "notes_save" are not served over MCP/, 'the operator is told at start');
  assert.ok(names.every((n) => /^[a-zA-Z0-9_-]{1,64}$/.test(n)));
  assert.deepEqual(tools[3]._meta, { 'kiln/name': 'notes.add' }, 'the tool it stands for');
  assert.equal((await call(client, 'notes_add', { text: 'x' })).text, 'added x');
  assert.equal((await call(client, 'notes.add', { text: 'y' })).text, 'added y', 'its own name still calls it');
  for (const name of ['notes_save', 'notes.save', 'run.script']) {
    const r = await call(client, name);
    assert.equal(r.isError, true, name);
    assert.match(r.text, /is not served over MCP: under \[mcp\] toolNames = "portable" .* would all be advertised as/, name);
  }
  assert.match((await call(client, 'no.such')).text, /no tool named "no\.such" is exposed by this server$/);
  // plugins[...] calls each by its own name.
  const script = await call(client, 'run_script', { code: "[await plugins['notes.save']({}), await plugins['notes_save']({})]" });
  assert.deepEqual(script.json.result, ['dot', 'underscore']);
  const report = (await call(client, 'kiln_extensions')).json;
  assert.equal(report.operator.toolNames, 'portable');
  const byName = Object.fromEntries(report.extensions[0].tools.map((x) => [x.name, x.advertisedAs]));
  assert.deepEqual(byName, { 'notes.add': 'notes_add', 'notes.save': null, notes_save: null, 'run.script': null });
  assert.deepEqual(report.extensions[0].tools.find((x) => x.name === 'notes.save').nameClash, ['notes.save', 'notes_save']);
  assert.deepEqual(report.extensions[0].tools.find((x) => x.name === 'run.script').nameClash, ['run.script', 'run_script']);
  assert.ok(report.warnings.some((w) => /"notes\.save", "notes_save" are not served over MCP: under \[mcp\] toolNames = "portable" they would all be advertised as "notes_save"/.test(w)), report.warnings.join('\n'));
  assert.ok(report.warnings.some((w) => /"run\.script" is not served over MCP: .* it would be advertised as "run_script", the built-in tool's name/.test(w)), report.warnings.join('\n'));

  const artifact = join(dir, 'n.wasm');
  assert.equal((await kiln(['build', join(dir, 'n.ts'), '-o', artifact])).code, 0);
  const shown = await kiln(['inspect', artifact, '--config', config]);
  assert.match(shown.stdout, /notes\.add {2}\[MCP tool\]\n {4}portable {5}notes_add \(its name under \[mcp\] toolNames = "portable", which .*kiln\.toml sets\)/);
  assert.match(shown.stdout, /notes\.save {2}\[MCP tool\]\n {4}portable {5}notes_save: not served under \[mcp\] toolNames = "portable", where "notes\.save" and "notes_save" would all be advertised as "notes_save"/);
  assert.match(shown.stdout, /run\.script {2}\[MCP tool\]\n {4}portable {5}run_script: not served .* where "run\.script" and "run_script" would all/);
  const json = JSON.parse((await kiln(['inspect', artifact, '--json', '--config', config])).stdout);
  assert.equal(json.tools.find((x) => x.name === 'notes.add').advertisedAs, 'notes_add');
});

test('stdin closing right after a request: its whole answer is written, on both revisions, and kiln exits 0', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'many.ts'), "for (let i = 0; i < 600; i++) defineTool({ name: 'many.t' + String(i).padStart(3, '0'), exposeAsTool: true, description: 'x'.repeat(300), inputSchema: { type: 'object', properties: { a: { type: 'string', description: 'y'.repeat(60) } } }, handler: async () => i });");
  writeFileSync(join(dir, 'kiln.toml'), 'extensions = ["./many.ts"]\n[mcp]\npageSize = 0\n');
  for (const modern of [false, true]) {
    const s = rawStdio(t, ['--config', join(dir, 'kiln.toml')]);
    if (!modern) s.send(INITIALIZE);
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: modern ? { _meta: ENVELOPE() } : {} });
    s.child.stdin.end();
    assert.equal(await s.exited, 0, s.stderr());
    const list = s.lines.find((l) => l.id === 1);
    assert.ok(list, `the tools/list answer arrived (${s.bytes()} bytes)`);
    assert.equal(list.result.tools.length, 603);
    assert.ok(s.bytes() > 300_000, `${s.bytes()} bytes`);
  }
});

test('stdin closing while a call waits for a 2025 approval ends the wait at once: the call is refused, kiln exits 0', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'a.ts'), "defineTool({ name: 'a.touch', exposeAsTool: true, allow: { commands: { touch: { run: ['touch', '${p}'] } } }, handler: async ({ commands, args }) => { await commands.run('touch', { p: args.p }); return 'ran'; } });");
  writeFileSync(join(dir, 'kiln.toml'), 'extensions = ["./a.ts"]\n[approvals]\npreset = "strict"\ntimeoutMs = 600000\n');
  const s = rawStdio(t, ['--config', join(dir, 'kiln.toml')]);
  s.send({ ...INITIALIZE, params: { ...INITIALIZE.params, capabilities: { elicitation: { form: {} } } } });
  assert.ok(await waitUntil(() => s.lines.some((l) => l.id === 0)));
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'a.touch', arguments: { p: join(dir, 'marker') } } });
  assert.ok(await waitUntil(() => s.lines.some((l) => l.method === 'elicitation/create')), 'the question was put');
  s.child.stdin.end();
  assert.equal(await s.exited, 0);
  const answer = s.lines.find((l) => l.id === 1);
  assert.match(answer.result.content[0].text, /may not run command "touch": the client could not be asked \(.*the client closed its input\)/);
});

test('2025 HTTP: events carry ids; a stream broken mid-call is resumed with Last-Event-ID and brings the result', { timeout: 120_000 }, async (t) => {
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', join(root, 'test/clients/rev.ts')], { env: { ...process.env, KILN_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const url = (await stderrMatch(child, /at (http:\/\/\S+\/mcp)/))[1];
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify(INITIALIZE) });
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  const h = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  // A call that reports progress, read until its first event with data, then dropped.
  const abort = new AbortController();
  const res = await fetch(url, { method: 'POST', headers: h, signal: abort.signal, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'rev.progress', arguments: { n: 3 }, _meta: { progressToken: 'p' } } }) });
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const reader = res.body.getReader();
  let seen = '';
  let lastId;
  while (!lastId) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before an event with data');
    seen += Buffer.from(value).toString();
    const m = /id: (\S+)\n(?:retry: \d+\n)?(?:event: message\n)?data: \{/.exec(seen) ?? /event: message\nid: (\S+)\ndata: \{/.exec(seen);
    if (m) lastId = m[1];
  }
  abort.abort();
  // The server may not have seen the first stream go yet (409: the stream still has its connection): ask again.
  let replay;
  assert.ok(await waitUntil(async () => {
    replay = await fetch(url, { method: 'GET', headers: { ...h, accept: 'text/event-stream', 'last-event-id': lastId } });
    if (replay.status === 409) await replay.text();
    return replay.status !== 409;
  }));
  assert.equal(replay.status, 200);
  const text = await replay.text(); // the stream closes once the call's answer is sent
  const messages = [...text.matchAll(/^data: (\{.*\})$/gm)].map((m) => JSON.parse(m[1]));
  const result = messages.find((m) => m.id === 7);
  assert.ok(result, `the result was replayed: ${text}`);
  assert.deepEqual(result.result.structuredContent, { steps: 3 });
  assert.ok([...text.matchAll(/^id: /gm)].length >= 1, 'replayed events carry ids');
});

test('2026: server/discover with cache hints and the Tasks extension; per-request logs only when asked; headers checked', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'l.ts'), "defineTool({ name: 'l.say', exposeAsTool: true, handler: async () => { console.log('said by the guest'); return 'ok'; } });");
  writeFileSync(join(dir, 'kiln.toml'), 'extensions = ["./l.ts"]\n[mcp]\nlistTtlMs = 5000\n');
  const s = rawStdio(t, ['--config', join(dir, 'kiln.toml')]);
  s.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: ENVELOPE() } });
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: ENVELOPE() } });
  s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'l.say', arguments: {}, _meta: ENVELOPE() } });
  s.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'l.say', arguments: {}, _meta: ENVELOPE({ 'io.modelcontextprotocol/logLevel': 'info' }) } });
  assert.ok(await waitUntil(() => [1, 2, 3, 4].every((id) => s.lines.some((l) => l.id === id))), s.stderr());
  const discover = s.lines.find((l) => l.id === 1).result;
  assert.deepEqual(discover.supportedVersions, [MODERN]);
  assert.deepEqual(discover.capabilities.extensions, { 'io.modelcontextprotocol/tasks': {} });
  assert.deepEqual([discover.ttlMs, discover.cacheScope], [5000, 'private']);
  const list = s.lines.find((l) => l.id === 2).result;
  assert.deepEqual([list.resultType, list.ttlMs, list.cacheScope], ['complete', 5000, 'private']);
  assert.equal(s.lines.find((l) => l.id === 3).result.resultType, 'complete');
  const logs = s.lines.filter((l) => l.method === 'notifications/message');
  assert.equal(logs.length, 1, `one log line, for the call that asked: ${JSON.stringify(logs)}`);
  assert.deepEqual([logs[0].params.data, logs[0].params.logger], ['said by the guest', 'l.ts']);
  assert.ok(s.lines.indexOf(logs[0]) < s.lines.findIndex((l) => l.id === 4), 'sent before its call\'s answer');
  s.child.stdin.end();
  assert.equal(await s.exited, 0);

  // Over HTTP the routing headers must agree with the body.
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', join(dir, 'kiln.toml')], { env: { ...process.env, KILN_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const url = (await stderrMatch(child, /at (http:\/\/\S+\/mcp)/))[1];
  const post = (headers, body) => fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  const callBody = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'l.say', arguments: {}, _meta: ENVELOPE() } };
  const good = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'l.say' }, callBody);
  assert.equal(good.status, 200);
  assert.equal((await good.json()).result.content[0].text, 'ok');
  const wrongName = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'other' }, callBody);
  assert.equal(wrongName.status, 400);
  const noEnvelope = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' }, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  assert.equal(noEnvelope.status, 400);
  assert.equal((await noEnvelope.json()).error.code, -32602);
  // A 2026 request opens no MCP session.
  assert.equal(good.headers.get('mcp-session-id'), null);
});

test('the TypeScript client in "auto" mode finds 2026-07-28 on stdio; in "legacy" mode it gets 2025-11-25 from the same server', { timeout: 60_000 }, async (t) => {
  for (const [mode, want] of [['auto', MODERN], ['legacy', '2025-11-25']]) {
    const client = new Client({ name: 'neg', version: '0' }, { versionNegotiation: { mode } });
    t.after(() => client.close().catch(() => {}));
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', join(root, 'extensions/hello.ts')], stderr: 'ignore' }));
    assert.equal(client.getNegotiatedProtocolVersion(), want, mode);
    assert.equal((await call(client, 'hello.greet', { name: mode })).json.message, `Hello, ${mode}!`);
    await client.close();
  }
});
