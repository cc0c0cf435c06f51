// Both MCP revisions kiln speaks, through real clients: the official Python SDK (PyPI mcp, pinned and
// hash-checked: scripts/requirements-mcp.txt) and the TypeScript SDK client, each on 2025-11-25 (initialize)
// and on 2026-07-28 (no handshake, the envelope on every request), over stdio and over HTTP. Every cell lists
// the tools page by page, calls, gets a tool error, progress, cancels a call, has an approval accepted and one
// declined (2025: an elicitation/create; 2026: input_required and a retry: the same question, the same
// choices), and keeps state in a session it names. Then the requestState of 2026 approvals is attacked
// (forged, altered, replayed, expired, foreign, bound to another call), each refusal proven by the marker file
// the command would have made being absent; one operation asks one question; a call asks one question a
// round; and the Tasks extension: a long call as a task, its approval through tasks/update, tasks/cancel.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { kilnBin, root, stderrMatch, tempDir, waitUntil } from './helpers.mjs';
import { startServer } from './http-server.mjs';

const REV = join(root, 'test/clients/rev.ts');
const PY = join(root, 'build/py/bin/python');
const TOKEN = 'test-token-0123456789abcdef';
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const ENVELOPE = (caps = { elicitation: { form: {} } }) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
});

/** A directory with a kiln.toml serving test/clients/rev.ts under [approvals] preset "strict", [mcp] pageSize 4. */
function workspace(t, extra = '') {
  const dir = tempDir(t);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = [${JSON.stringify(REV)}]\n[audit]\npath = "audit.jsonl"\n[approvals]\npreset = "strict"\n[mcp]\npageSize = 4\n${extra}\n`);
  return { dir, config, audit: join(dir, 'audit.jsonl') };
}

const auditLines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

/** `kiln mcp --http 127.0.0.1:0 --config …`, stopped when the test ends; resolves with its URL. */
async function httpServer(t, config, env = {}) {
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', config], {
    env: { ...process.env, KILN_TOKEN: TOKEN, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = (await stderrMatch(child, /at (http:\/\/\S+\/mcp)/))[1];
  return { url, child, stderr: () => stderr };
}

const EXPECTED_NAMES = ['kiln_extensions', 'kiln_close_session', 'run_script', 'rev.count', 'rev.echo', 'rev.fail', 'rev.page.a', 'rev.page.b',
  'rev.page.c', 'rev.page.d', 'rev.page.e', 'rev.progress', 'rev.touch', 'rev.wait'];

/** The Python SDK's run (test/clients/py/client.py): its JSON report. */
function pythonRun(args) {
  return new Promise((resolve, reject) => {
    execFile(PY, [join(root, 'test/clients/py/client.py'), ...args], { env: { ...process.env, KILN_NODE: process.execPath }, timeout: 300_000, maxBuffer: 1 << 24 },
      (err, stdout, stderr) => (err ? reject(new Error(`client.py ${args.slice(0, 2).join(' ')} failed: ${stderr || err.message}`)) : resolve(JSON.parse(stdout.trim().split('\n').pop()))));
  });
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

/** The TypeScript SDK's run: the same checks as client.py, in the same order. */
async function typescriptRun(t, kind, mode, target, markers) {
  const questions = [];
  const answers = [];
  const client = new Client({ name: 'ts-matrix', version: '0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: mode === MODERN ? { pin: MODERN } : 'legacy' },
  });
  client.setRequestHandler('elicitation/create', async (req) => {
    questions.push({ message: req.params.message, schema: req.params.requestedSchema });
    const action = answers.shift();
    return action === 'accept' ? { action, content: { allow: 'once' } } : { action };
  });
  const transport = kind === 'stdio'
    ? new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', '--config', target], stderr: 'ignore' })
    : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  t.after(() => client.close().catch(() => {}));
  await client.connect(transport);
  const report = { protocolVersion: client.getNegotiatedProtocolVersion() };
  const names = [];
  let pages = 0;
  for (let cursor; pages < 50;) {
    const page = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} });
    pages++;
    names.push(...page.tools.map((x) => x.name));
    if (!(cursor = page.nextCursor)) break;
  }
  report.list = { names, pages };
  // The SDK's own walk (listTools() without a cursor follows nextCursor) sees the same tools.
  assert.deepEqual((await client.listTools()).tools.map((x) => x.name), names, `${kind} ${mode}: listTools() walks every page`);
  let r = await client.callTool({ name: 'rev.echo', arguments: { x: 1, y: 'two' } });
  report.call = { isError: r.isError === true, structured: r.structuredContent, text: text(r) };
  r = await client.callTool({ name: 'rev.fail', arguments: {} });
  report.error = { isError: r.isError === true, text: text(r) };
  const updates = [];
  r = await client.callTool({ name: 'rev.progress', arguments: { n: 3 } }, { onprogress: (p) => updates.push(p) });
  report.progress = { isError: r.isError === true, structured: r.structuredContent, updates };
  const abort = new AbortController();
  const waiting = client.callTool({ name: 'rev.wait', arguments: {} }, { signal: abort.signal, onprogress: () => abort.abort('the test cancels it') });
  report.cancel = { returned: await waiting.then(() => true, () => false) };
  answers.push('accept', 'decline');
  const accepted = await client.callTool({ name: 'rev.touch', arguments: { path: join(markers, 'accepted') } });
  const declined = await client.callTool({ name: 'rev.touch', arguments: { path: join(markers, 'declined') } });
  report.approvals = { accepted: text(accepted), declined: text(declined), questions };
  const count = async (meta) => (await client.callTool({ name: 'rev.count', arguments: {}, ...(meta ? { _meta: meta } : {}) })).structuredContent.n;
  report.sessions = { named: [await count({ session: 'ts-work' }), await count({ session: 'ts-work' })], unnamed: [await count(), await count()] };
  await client.close();
  return report;
}

/** What every cell must have done; `kind`, `mode` name the cell. Returns the first question's text, made
 *  comparable across cells. */
async function checkReport(report, { kind, mode, dir, audit }) {
  const cell = `${kind} ${mode}`;
  assert.equal(report.protocolVersion, mode, `${cell}: the revision spoken`);
  assert.deepEqual(report.list.names, EXPECTED_NAMES, `${cell}: every tool once, in order`);
  assert.equal(report.list.pages, Math.ceil(EXPECTED_NAMES.length / 4), `${cell}: pages of 4 ([mcp] pageSize)`);
  assert.deepEqual(report.call, { isError: false, structured: { x: 1, y: 'two' }, text: '{"x":1,"y":"two"}' }, cell);
  assert.equal(report.error.isError, true, cell);
  assert.match(report.error.text, /boom: rev\.fail failed on purpose/, cell);
  assert.deepEqual(report.progress.structured, { steps: 3 }, cell);
  assert.ok(report.progress.updates.length >= 1 && report.progress.updates.every((u) => u.progress >= 1 && u.progress <= 3), `${cell}: progress ${JSON.stringify(report.progress.updates)}`);
  assert.equal(report.cancel.returned, false, `${cell}: the cancelled call did not return`);
  assert.ok(await waitUntil(() => auditLines(audit).some((l) => l.tool === 'rev.wait' && l.phase === 'end' && l.error === 'CancelledError')),
    `${cell}: the server ended the call as cancelled`);
  assert.equal(report.approvals.accepted, 'ran', cell);
  assert.ok(existsSync(join(dir, 'accepted')), `${cell}: the accepted command ran`);
  assert.match(report.approvals.declined, /PermissionError: tool "rev\.touch" may not run command "touch": the human declined/, cell);
  assert.ok(!existsSync(join(dir, 'declined')), `${cell}: the declined command never ran`);
  assert.equal(report.approvals.questions.length, 2, `${cell}: one question per approval`);
  // "For this session" is offered where the session outlives the call: not to a 2026 HTTP call naming none.
  const offered = report.approvals.questions[0].schema.properties.allow.oneOf.map((o) => o.const);
  assert.deepEqual(offered, kind === 'http' && mode === MODERN ? ['once'] : ['once', 'session'], `${cell}: choices`);
  assert.deepEqual(report.sessions.named, [1, 2], `${cell}: a named session keeps state`);
  assert.deepEqual(report.sessions.unnamed, kind === 'http' && mode === MODERN ? [1, 1] : [1, 2], `${cell}: the default session`);
  return report.approvals.questions[0].message.replace(dir, '<dir>');
}

for (const client of ['python', 'typescript']) {
  test(`${client} SDK client: both revisions over stdio and HTTP, the same tools, errors, progress, cancellation, approvals and sessions`, { timeout: 600_000 }, async (t) => {
    const questions = new Set();
    for (const kind of ['stdio', 'http']) {
      for (const mode of [LEGACY, MODERN]) {
        const w = workspace(t);
        let report;
        if (kind === 'stdio') {
          report = client === 'python' ? await pythonRun(['stdio', mode === LEGACY ? 'legacy' : MODERN, w.config, w.dir]) : await typescriptRun(t, 'stdio', mode, w.config, w.dir);
        } else {
          const { url } = await httpServer(t, w.config);
          report = client === 'python' ? await pythonRun(['http', mode === LEGACY ? 'legacy' : MODERN, url, TOKEN, w.dir]) : await typescriptRun(t, 'http', mode, url, w.dir);
        }
        questions.add(await checkReport(report, { kind, mode, ...w }));
        if (mode === MODERN) {
          const rounds = auditLines(w.audit).filter((l) => l.type === 'approval' && l.round);
          assert.ok(rounds.some((l) => l.event === 'asked') && rounds.some((l) => l.event === 'answered' && l.answer === 'once'), `${kind}: 2026 approvals are rounds`);
        }
      }
    }
    assert.equal(questions.size, 1, `one question text on every revision and transport: ${[...questions].join(' | ')}`);
  });
}

// ---- requestState ------------------------------------------------------------------------------------------

/** A raw 2026-07-28 client over HTTP: JSON-RPC requests with the envelope and the routing headers. */
function rawClient(url, caps) {
  let id = 0;
  return async (method, params = {}, name) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: { ...ENVELOPE(caps), ...(params._meta ?? {}) } } }),
    });
    const body = await res.text();
    const json = body.startsWith('{') ? JSON.parse(body) : JSON.parse(body.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).pop().slice(6));
    return json;
  };
}

const touch = (path, extra = {}) => ({ name: 'rev.touch', arguments: { path }, ...extra });
const accept = (allow = 'once') => ({ 'kiln.approval': { action: 'accept', content: { allow } } });
const payloadOf = (state) => JSON.parse(Buffer.from(state.split('.')[2], 'base64url').toString());
const refusedState = (r) => r.error?.code === -32602 && r.error?.data?.reason === 'invalid_request_state';
const refusals = (audit) => auditLines(audit).filter((l) => l.event === 'state-refused').map((l) => l.reason);

test('2026 approvals: a forged, altered, replayed, expired, foreign or misbound requestState is refused, and the command never runs', { timeout: 300_000 }, async (t) => {
  const key = Buffer.alloc(32, 7).toString('base64url');
  const w = workspace(t);
  const { url } = await httpServer(t, w.config, { KILN_STATE_KEY: key });
  const rpc = rawClient(url);
  const marker = join(w.dir, 'm');

  const first = (await rpc('tools/call', touch(marker), 'rev.touch')).result;
  assert.equal(first.resultType, 'input_required');
  assert.match(first.inputRequests['kiln.approval'].params.message, /^Tool "rev\.touch" wants to run command "touch": touch /);
  const state = first.requestState;
  const p = payloadOf(state);
  assert.equal(p.tool, 'rev.touch');
  assert.ok(!JSON.stringify(p).includes(marker), 'the state holds a digest of the arguments, never their values');

  const attempts = {
    'forged MAC': { ...touch(marker), requestState: state.slice(0, -2) + (state.at(-2) === 'A' ? 'B' : 'A') + state.at(-1), inputResponses: accept() },
    'altered payload': {
      ...touch(marker), inputResponses: accept('always'),
      requestState: state.split('.').map((s, i) => (i === 2 ? Buffer.from(JSON.stringify({ ...p, ask: { ...p.ask, offered: ['once', 'always'] } })).toString('base64url') : s)).join('.'),
    },
    'other arguments': { ...touch(join(w.dir, 'other')), requestState: state, inputResponses: accept() },
    'other session': { ...touch(marker, { _meta: { session: 'elsewhere' } }), requestState: state, inputResponses: accept() },
    'not a state': { ...touch(marker), requestState: 'ks1.nothing', inputResponses: accept() },
  };
  for (const [what, params] of Object.entries(attempts)) {
    const r = await rpc('tools/call', params, 'rev.touch');
    assert.ok(refusedState(r), `${what}: ${JSON.stringify(r)}`);
  }
  // Another tool's call with this state.
  assert.ok(refusedState(await rpc('tools/call', { name: 'rev.echo', arguments: { path: marker }, requestState: state, inputResponses: accept() }, 'rev.echo')), 'another tool');
  // A server with another key: the state is foreign there. One with the same key (a replica) honours it.
  const other = workspace(t);
  const foreign = rawClient((await httpServer(t, other.config, { KILN_STATE_KEY: Buffer.alloc(32, 9).toString('base64url') })).url);
  assert.ok(refusedState(await foreign('tools/call', { ...touch(marker), requestState: state, inputResponses: accept() }, 'rev.touch')), 'foreign');
  assert.deepEqual(refusals(other.audit), ['key']);
  assert.ok(!existsSync(marker), 'no refused state ran the command');
  assert.deepEqual(refusals(w.audit), ['mac', 'mac', 'binding', 'binding', 'malformed', 'binding']);

  // A retry answering something it was not offered is a refusal of the operation, never an approval.
  const offBase = (await rpc('tools/call', touch(marker), 'rev.touch')).result;
  const off = await rpc('tools/call', { ...touch(marker), requestState: offBase.requestState, inputResponses: accept('always') }, 'rev.touch');
  assert.match(off.result.content[0].text, /the answer was not one of those offered/);
  assert.ok(!existsSync(marker));
  // A retry that carries the state and no answer to it is refused; answers without a state mean nothing.
  const noAnswerBase = (await rpc('tools/call', touch(marker), 'rev.touch')).result;
  const noAnswer = await rpc('tools/call', { ...touch(marker), requestState: noAnswerBase.requestState }, 'rev.touch');
  assert.equal(noAnswer.error?.code, -32602);
  assert.match(noAnswer.error.message, /inputResponses\["kiln\.approval"\]/);
  assert.equal((await rpc('tools/call', { ...touch(marker), inputResponses: accept() }, 'rev.touch')).result.resultType, 'input_required', 'an answer without a state asks again');
  assert.ok(!existsSync(marker));

  // The state opens exactly once: on a replica (the same key), then never again.
  const replica = rawClient((await httpServer(t, workspace(t).config, { KILN_STATE_KEY: key })).url);
  const done = await replica('tools/call', { ...touch(marker), requestState: state, inputResponses: accept() }, 'rev.touch');
  assert.equal(done.result.content[0].text, 'ran');
  assert.ok(existsSync(marker), 'the approved command ran on the replica');
  rmSync(marker);
  const again = await replica('tools/call', { ...touch(marker), requestState: state, inputResponses: accept() }, 'rev.touch');
  assert.ok(refusedState(again), 'replayed');
  assert.ok(!existsSync(marker), 'the replay ran nothing');
});

test('2026 approvals: a state expires with [approvals] timeoutMs', { timeout: 120_000 }, async (t) => {
  const w = workspace(t);
  writeFileSync(w.config, readFileSync(w.config, 'utf8').replace('preset = "strict"', 'preset = "strict"\ntimeoutMs = 1000'));
  const rpc = rawClient((await httpServer(t, w.config)).url);
  const marker = join(w.dir, 'late');
  const { requestState } = (await rpc('tools/call', touch(marker), 'rev.touch')).result;
  const { exp } = payloadOf(requestState);
  assert.ok(await waitUntil(() => Date.now() > exp + 50, 30_000), 'the state expired');
  assert.ok(refusedState(await rpc('tools/call', { ...touch(marker), requestState, inputResponses: accept() }, 'rev.touch')));
  assert.deepEqual(refusals(w.audit), ['expired']);
  assert.ok(!existsSync(marker));
});

test('2026 approvals: the call waits for its answers: nothing before an approval runs twice, one question an operation', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'twice.ts'), `
defineTool({ name: 'twice.run', exposeAsTool: true,
  allow: { commands: { touch: { run: ['touch', '\${path}'] } }, fs: { write: ['out'] } },
  handler: async ({ commands, args, fs }) => {
    vars.set('runs', String(Number(vars.get('runs') ?? 0) + 1));   // before the first approval
    await commands.run('touch', { path: args.a });
    await commands.run('touch', { path: args.b });
    await fs.appendFile('out/ledger.txt', 'one line\\n');            // "allow once": one line
    return { runs: Number(vars.get('runs')) };
  } });`);
  mkdirSync(join(dir, 'out'));
  const config = join(dir, 'kiln.toml');
  // mode "ask" with no fs grant and strict's rule on writes: the append is one operation, asked once.
  writeFileSync(config, `extensions = ["./twice.ts"]\n[policy]\nmode = "ask"\n[grants."./twice.ts"]\ncommands = ["touch"]\n[approvals]\npreset = "strict"\n[fs]\nroot = "."\n`);
  const asked = [];
  const client = new Client({ name: 'rounds', version: '0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } });
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params.message.split('\n')[0]);
    return { action: 'accept', content: { allow: 'once' } };
  });
  t.after(() => client.close().catch(() => {}));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', '--config', config], cwd: dir, stderr: 'ignore' }));
  const r = await client.callTool({ name: 'twice.run', arguments: { a: join(dir, 'a'), b: join(dir, 'b') } }, { timeout: 120_000 });
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(asked.length, 3, `one question for each operation, one at a time: ${asked.join(' | ')}`);
  assert.match(asked[2], /append to the file "out\/ledger\.txt"|write the file "out\/ledger\.txt"/);
  assert.deepEqual(r.structuredContent, { runs: 1 }, 'the handler ran once: each retry resumed the call that asked');
  assert.equal(readFileSync(join(dir, 'out/ledger.txt'), 'utf8'), 'one line\n', '"allow once" appended once');
  assert.ok(existsSync(join(dir, 'a')) && existsSync(join(dir, 'b')));
});

test('2026 approvals on another replica: the retry runs the call again with its answers, each for exactly the operation asked', { timeout: 180_000 }, async (t) => {
  const key = Buffer.alloc(32, 3).toString('base64url');
  const srv = await startServer(t);
  const dir = tempDir(t);
  mkdirSync(join(dir, 'out'));
  // Each run picks what it does anew: a retry that runs it again asks for what it does this time.
  writeFileSync(join(dir, 'drift.ts'), `
defineTool({ name: 'drift.fetch', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] },
  handler: async ({ args }) => { const r = await fetch('http://127.0.0.1:${srv.port}/' + (args.fixed ? 'hello' : crypto.randomUUID())); await r.text(); return String(r.status); } });
defineTool({ name: 'drift.write', exposeAsTool: true, allow: { fs: { write: ['out'] } },
  handler: async ({ args, fs }) => { await fs.writeFile('out/' + args.name, args.fixed ? 'fixed' : crypto.randomUUID()); return 'written'; } });
defineTool({ name: 'drift.count', exposeAsTool: true, allow: { commands: { touch: { run: ['touch', '\${p}'] } } },
  handler: async ({ args, commands }) => { vars.set('runs', String(Number(vars.get('runs') ?? 0) + 1)); await commands.run('touch', { p: args.p }); return { runs: Number(vars.get('runs')) }; } });
`);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = ["./drift.ts"]\n[approvals]\npreset = "strict"\n[[approvals.rules]]\nop = ["net"]\nverdict = "require"\n[fs]\nroot = "."\n`);
  const a = rawClient((await httpServer(t, config, { KILN_STATE_KEY: key })).url);
  const b = rawClient((await httpServer(t, config, { KILN_STATE_KEY: key })).url);
  const fetched = () => srv.hits.filter((h) => h.path !== '/hello').length;

  // A and B share the key: B honours A's state, runs the call again, and its operation is asked anew when it
  // is not the one asked about (another URL, other bytes).
  for (const [params, what] of [[{ name: 'drift.fetch', arguments: {} }, /send an HTTP request: GET "http:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]{36}"/], [{ name: 'drift.write', arguments: { name: 'x' } }, /write the file "out\/x" \(36 bytes\)/]]) {
    const first = (await a('tools/call', params, params.name)).result;
    assert.equal(first.resultType, 'input_required');
    const onB = (await b('tools/call', { ...params, requestState: first.requestState, inputResponses: accept() }, params.name)).result;
    assert.equal(onB.resultType, 'input_required', `${params.name}: asked again on B: ${JSON.stringify(onB).slice(0, 300)}`);
    const [one, two] = [first, onB].map((r) => r.inputRequests['kiln.approval'].params.message.split('\n')[0]);
    assert.match(one, what);
    assert.match(two, what);
    // Another URL shows in the question; other bytes of the same size do not, and are asked about all the same.
    if (params.name === 'drift.fetch') assert.notEqual(one, two, 'another operation, another question');
  }
  assert.equal(fetched(), 0, 'no request went out unapproved');
  assert.ok(!existsSync(join(dir, 'out/x')), 'nothing was written unapproved');
  // The same operation on B: the answer covers it there.
  const fixed = (await a('tools/call', { name: 'drift.fetch', arguments: { fixed: true } }, 'drift.fetch')).result;
  const done = await b('tools/call', { name: 'drift.fetch', arguments: { fixed: true }, requestState: fixed.requestState, inputResponses: accept() }, 'drift.fetch');
  assert.equal(done.result.content[0].text, '200');
  // A call named in a session: B runs it from the top once (its vars are B's), and A's waiting call does nothing.
  const marker = join(dir, 'counted');
  const c1 = (await a('tools/call', { name: 'drift.count', arguments: { p: marker }, _meta: { session: 's' } }, 'drift.count')).result;
  const c2 = await b('tools/call', { name: 'drift.count', arguments: { p: marker }, _meta: { session: 's' }, requestState: c1.requestState, inputResponses: accept() }, 'drift.count');
  assert.deepEqual(c2.result.structuredContent, { runs: 1 });
  assert.ok(existsSync(marker));
});

test('2026 approvals: a call is never run again where it asked; a retry refused for its answer keeps its state; waiting calls are bounded; logs go to their own call', { timeout: 180_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'rr.ts'), `
defineTool({ name: 'rr.two', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => {
  await fetch('http://127.0.0.1:${srv.port}/hello?a');
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);   // the guest gives up on its own question
  try { await fetch('http://127.0.0.1:${srv.port}/hello?b', { signal: ac.signal }); } catch {}
  return 'done';
} });
defineTool({ name: 'rr.one', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => {
  const r = await fetch('http://127.0.0.1:${srv.port}/hello?one'); await r.text(); return 'one';
} });
`);
  const config = join(dir, 'kiln.toml');
  writeFileSync(config, `extensions = ["./rr.ts"]\n[audit]\npath = "audit.jsonl"\n[[approvals.rules]]\nop = ["net"]\nverdict = "require"\n[mcp]\nmaxWaitingCalls = 2\n`);
  const rpc = rawClient((await httpServer(t, config)).url);
  const audit = join(dir, 'audit.jsonl');

  // The question the guest abandoned: its retry is refused, and nothing ran twice.
  const q1 = (await rpc('tools/call', { name: 'rr.two', arguments: {}, _meta: { session: 's1' } }, 'rr.two')).result;
  const q2 = (await rpc('tools/call', { name: 'rr.two', arguments: {}, requestState: q1.requestState, inputResponses: accept(), _meta: { session: 's1' } }, 'rr.two')).result;
  assert.equal(q2.resultType, 'input_required', 'the second fetch is asked');
  assert.ok(await waitUntil(() => auditLines(audit).some((l) => l.event === 'answered' && l.answer === 'cancelled')), 'the guest gave up on it');
  const late = await rpc('tools/call', { name: 'rr.two', arguments: {}, requestState: q2.requestState, inputResponses: accept(), _meta: { session: 's1' } }, 'rr.two');
  assert.ok(refusedState(late), JSON.stringify(late));
  assert.deepEqual(refusals(audit), ['ended']);
  assert.equal(srv.hits.filter((h) => h.path === '/hello').length, 1, 'the approved fetch ran once');

  // A retry whose answer is malformed is refused without spending its state: the right retry then resumes.
  const one = (await rpc('tools/call', { name: 'rr.one', arguments: {} }, 'rr.one')).result;
  const bad = await rpc('tools/call', { name: 'rr.one', arguments: {}, requestState: one.requestState, inputResponses: { 'kiln.approval': { action: 'yes' } } }, 'rr.one');
  assert.equal(bad.error?.code, -32602);
  const good = await rpc('tools/call', { name: 'rr.one', arguments: {}, requestState: one.requestState, inputResponses: accept() }, 'rr.one');
  assert.equal(good.result.content[0].text, 'one');

  // At most [mcp] maxWaitingCalls of a client's calls wait; the next is refused unasked.
  const waiting = [];
  for (let i = 0; i < 2; i++) waiting.push((await rpc('tools/call', { name: 'rr.one', arguments: {} }, 'rr.one')).result);
  assert.ok(waiting.every((w) => w.resultType === 'input_required'));
  const third = (await rpc('tools/call', { name: 'rr.one', arguments: {} }, 'rr.one')).result;
  assert.match(third.content[0].text, /2 calls of this client already wait for a human's answer \(\[mcp\] maxWaitingCalls\)/);
  for (const w of waiting) await rpc('tools/call', { name: 'rr.one', arguments: {}, requestState: w.requestState, inputResponses: { 'kiln.approval': { action: 'decline' } } }, 'rr.one');
  assert.equal((await rpc('tools/call', { name: 'rr.one', arguments: {} }, 'rr.one')).result.resultType, 'input_required', 'room again');
});

test('2026 logs go to the request of the call whose guest logged them: run_script\'s session is its own', { timeout: 60_000 }, async (t) => {
  const w = workspace(t);
  const { url } = await httpServer(t, w.config);
  const post = (body) => fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run_script' },
    body: JSON.stringify(body),
  }).then((r) => r.text());
  const meta = (extra) => ({ ...ENVELOPE(), 'io.modelcontextprotocol/logLevel': 'debug', ...extra });
  const victim = post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_script', arguments: { session: 'victim', code: "await new Promise((r) => setTimeout(r, 500)); console.log('VICTIM-LOG'); 1" }, _meta: meta() } });
  const other = post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_script', arguments: { session: 'other', code: "await new Promise((r) => setTimeout(r, 1500)); 2" }, _meta: meta({ session: 'victim' }) } });
  const [v, o] = await Promise.all([victim, other]);
  assert.match(v, /VICTIM-LOG/, 'the log went with its own call');
  assert.doesNotMatch(o, /VICTIM-LOG/, 'and not to another call naming that session');
});

// ---- tasks ---------------------------------------------------------------------------------------------------

test('Tasks extension (2026): a call becomes a task; its approval goes through tasks/get and tasks/update; tasks/cancel stops it', { timeout: 120_000 }, async (t) => {
  const w = workspace(t, 'taskAfterMs = 0');
  const { url } = await httpServer(t, w.config);
  const tasks = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const rpc = rawClient(url, tasks);
  const marker = join(w.dir, 'tasked');
  const handle = (await rpc('tools/call', touch(marker), 'rev.touch')).result;
  assert.equal(handle.resultType, 'task');
  assert.equal(handle.status, 'working');
  const { taskId } = handle;
  let view;
  assert.ok(await waitUntil(async () => (view = (await rpc('tasks/get', { taskId }, taskId)).result).status === 'input_required'), 'the task asks');
  const [key] = Object.keys(view.inputRequests);
  assert.match(view.inputRequests[key].params.message, /^Tool "rev\.touch" wants to run command "touch"/);
  assert.ok(!existsSync(marker));
  assert.deepEqual(Object.keys((await rpc('tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { allow: 'once' } } } }, taskId)).result), ['resultType', '_meta']);
  assert.ok(await waitUntil(async () => (view = (await rpc('tasks/get', { taskId }, taskId)).result).status === 'completed'), 'the task completes');
  assert.equal(view.result.content[0].text, 'ran');
  assert.ok(existsSync(marker));

  // A client that does not declare the extension gets the answer itself, never a task.
  const plain = rawClient(url);
  assert.deepEqual((await plain('tools/call', { name: 'rev.echo', arguments: { a: 1 } }, 'rev.echo')).result.structuredContent, { a: 1 });
  assert.equal((await plain('tasks/get', { taskId }, taskId)).error?.code, -32021, 'tasks/* need the extension');

  // tasks/cancel: the call is stopped, the task ends cancelled.
  const waitTask = (await rpc('tools/call', { name: 'rev.wait', arguments: {} }, 'rev.wait')).result;
  await rpc('tasks/cancel', { taskId: waitTask.taskId }, waitTask.taskId);
  assert.ok(await waitUntil(async () => (await rpc('tasks/get', { taskId: waitTask.taskId }, waitTask.taskId)).result.status === 'cancelled'));
  assert.ok(await waitUntil(() => auditLines(w.audit).some((l) => l.tool === 'rev.wait' && l.phase === 'end' && l.outcome === 'error')), 'the call ended');
  // An unknown id is not found.
  assert.equal((await rpc('tasks/get', { taskId: 'no-such-task' }, 'no-such-task')).error?.code, -32602);
});
