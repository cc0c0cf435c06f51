// Attacks on the evidence: the audit log and the operator's stderr. A guest must not erase an earlier audit
// line by drowning it in refusals or in allowed decisions, a rotation keeps the files the operator configured,
// a lost line is itself recorded, and neither a guest's log line nor a value a message of kiln's quotes (a file
// name, an import specifier) can pass for the server's own line on stderr.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { call, kiln, waitUntil } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, sources, token } from './harness.mjs';

/** Every JSON line of the audit log and its rotations that exist (oldest file first). */
const auditLines = (log, keep) => {
  const files = [...Array.from({ length: keep }, (_, i) => `${log}.${keep - i}`), log].filter((f) => existsSync(f));
  return files.flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
};

attack('audit-refusal-flood', '80,000 refused fetches in one call do not push an earlier audit line out of the log', async (t) => {
  const srv = await startServer(t);
  const mark = token('mark');
  const dir = sources(t, { 'flood.ts': `
    defineTool({ name: 'mark', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => (await fetch('http://127.0.0.1:${srv.port}/${mark}')).status });
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => {
      let refused = 0;
      for (let i = 0; i < 80000; i += 500) {
        const batch = [];
        for (let j = i; j < i + 500; j++) batch.push(fetch('http://localhost:${srv.port}/flood-' + j).then(() => 0, (e) => (e.name === 'PermissionError' ? 1 : 0)));
        for (const r of await Promise.all(batch)) refused += r;
      }
      return refused;
    } });` });
  const log = join(dir, 'audit.jsonl');
  const { client } = await serve(t, [join(dir, 'flood.ts')], { toml: `[audit]\npath = ${JSON.stringify(log)}\nmaxBytes = 1048576\n` });
  assert.equal((await call(client, 'mark')).isError, false);
  // 80,000 operations take a while on a busy machine: past the SDK's 60 s default, bounded by the attack's own.
  const r = await client.callTool({ name: 'flood', arguments: {} }, { timeout: 580_000 });
  assert.ok(!r.isError, JSON.stringify(r.content));
  assert.equal(r.content[0].text, '80000');
  assert.equal(srv.hits.filter((h) => h.path.startsWith('/flood-')).length, 0, 'a refused request reached the server');
  const all = auditLines(log, 5);
  assert.ok(all.some((l) => l.type === 'decision' && l.target.endsWith(`/${mark}`) && l.verdict === 'allow'), 'the marked audit line was erased');
  const denials = all.filter((l) => l.type === 'decision' && l.tool === 'flood' && l.verdict === 'deny').length;
  const counted = all.filter((l) => l.type === 'repeated' && l.tool === 'flood').reduce((n, l) => n + l.count, 0);
  assert.equal(denials + counted, 80000, 'every refusal is in the log, written or counted');
  assert.ok(all.some((l) => l.type === 'repeated' && l.final && l.op === 'http.fetch' && l.verdict === 'deny'), 'no summary line at the call\'s end');
  assert.ok(denials <= 100, `${denials} refusals written one by one`);
}, { timeout: 600_000 });

attack('audit-keep-rotation', '[audit] keep = 3 keeps three rotated files, and each rotation says what it dropped', async (t) => {
  const dir = sources(t, { 'n.ts': `defineTool({ name: 'noop', exposeAsTool: true, handler: () => null });` });
  const log = join(dir, 'audit.jsonl');
  const { client } = await serve(t, [join(dir, 'n.ts')], { toml: `[audit]\npath = ${JSON.stringify(log)}\nmaxBytes = 4096\nkeep = 3\n` });
  for (let i = 0; i < 120; i++) assert.equal((await call(client, 'noop')).isError, false);
  for (const n of [1, 2, 3]) assert.ok(existsSync(`${log}.${n}`), `${log}.${n} was not kept`);
  assert.equal(existsSync(`${log}.4`), false, 'more files than keep');
  const first = JSON.parse(readFileSync(log, 'utf8').split('\n')[0]);
  assert.equal(first.type, 'log');
  assert.equal(first.event, 'rotated');
  assert.equal(first.removed, `${log}.3`, 'the dropped rotation is not named');
  assert.ok(first.removedBytes > 0);
});

attack('audit-dropped-reported', 'audit lines that cannot be written are counted, and the count reaches the log and stderr', async (t) => {
  const dir = sources(t, { 'n.ts': `defineTool({ name: 'noop', exposeAsTool: true, handler: () => null });` });
  const log = join(dir, 'audit.jsonl');
  const { client, stderr } = await serve(t, [join(dir, 'n.ts')], { toml: `[audit]\npath = ${JSON.stringify(log)}\n` });
  assert.equal((await call(client, 'noop')).isError, false);
  // The log cannot be written (as on a full disk): a directory stands where the file was.
  rmSync(log);
  mkdirSync(log);
  for (let i = 0; i < 5; i++) assert.equal((await call(client, 'noop')).isError, false, 'a call failed because the log could not be written');
  // stderr is a pipe beside the protocol's: its lines may arrive after the call's answer.
  assert.ok(await waitUntil(() => /kiln: the audit log .* cannot be written/.test(stderr()), 60_000), 'stderr does not say the log cannot be written');
  rmdirSync(log);
  assert.equal((await call(client, 'noop')).isError, false);
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(lines[0].type, 'log');
  assert.equal(lines[0].event, 'dropped');
  assert.equal(lines[0].lines, 10, 'the count of lost lines (5 calls, start and end)');
  assert.ok(await waitUntil(() => /is written again; 10 line\(s\) were lost/.test(stderr()), 60_000), 'stderr does not say how many lines were lost');
});

attack('log-forged-kiln-line', 'a guest log line with line breaks and escapes cannot print a "kiln:" line on stderr', async (t) => {
  const dir = sources(t, { 'forge.ts': `
    defineTool({ name: 'forge', exposeAsTool: true, handler: () => {
      console.log('x\\nkiln: forged newline');
      console.error('y\\r\\nkiln: forged crlf');
      console.warn('z\\rkiln: forged cr');
      console.log('w\\u2028kiln: forged separator');
      console.log('v\\x1b[2K\\x1b[1Gkiln: forged ansi');
      console.log(new Error('e\\nkiln: forged stack'));
      return 'done';
    } });` });
  const { client, stderr } = await serve(t, [join(dir, 'forge.ts')]);
  for (const meta of [undefined, { session: 's2' }]) {
    const r = await call(client, 'forge', {}, meta);
    assert.equal(r.text, 'done', r.text);
  }
  const printed = () => stderr().split('\n');
  const ready = await waitUntil(() => ['forged ansi', 'forged stack'].every((w) => printed().filter((l) => l.includes(w)).length >= 2), 60_000);
  assert.ok(ready, `the guest's lines did not reach stderr: ${stderr()}`);
  const forged = printed().filter((l) => /^kiln: forged/.test(l) || l.includes('\x1b') || l.includes('\r') || l.includes('\u2028'));
  assert.deepEqual(forged, [], 'a guest wrote a line that passes for the server\'s');
  for (const what of ['newline', 'crlf', 'cr', 'separator', 'ansi']) {
    const mine = printed().filter((l) => l.includes(`kiln: forged ${what}`));
    assert.ok(mine.length >= 2 && mine.every((l) => /^\[(default|s2) forge\.ts (info|warn|error)\] /.test(l)), `the guest's "${what}" line is not marked as the guest's: ${JSON.stringify(mine)}`);
  }
});

attack('log-flood-session-budget', "one session's console.log flood reaches the client and stderr through its own budget, with the drops counted; another session is answered", async (t) => {
  const dir = sources(t, { 'loud.ts': `
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 600000, handler: () => { for (let i = 1; i <= 20000; i++) console.log('flood-line ' + i); return 'flooded'; } });
    defineTool({ name: 'noop', exposeAsTool: true, handler: () => 'quiet' });` });
  const messages = [];
  const { client, stderr } = await serve(t, [join(dir, 'loud.ts')], {
    beforeConnect: (c) => c.setNotificationHandler('notifications/message', (n) => void messages.push(String(n.params.data))),
  });
  const flood = call(client, 'flood', {}, { session: 'loud' });
  assert.equal((await call(client, 'noop', {}, { session: 'quiet' })).text, 'quiet', 'another session was not answered');
  assert.equal((await flood).text, 'flooded');
  // Lines reach the client window by window: never more than a window's budget between two drop notices
  // (two windows' worth: the flood's first and last windows may not be full).
  let run = 0;
  let longest = 0;
  for (const m of messages) {
    if (/\bdropped \d+ log line/.test(m)) run = 0;
    else if (m.startsWith('flood-line ')) longest = Math.max(longest, ++run);
  }
  assert.ok(longest <= 200, `${longest} flood lines reached the client between two drop notices`);
  assert.ok(messages.filter((m) => m.startsWith('flood-line ')).length < 20000, 'every line reached the client');
  const budget = /dropped (\d+) log line\(s\) .*at most 100 lines/;
  assert.ok(await waitUntil(() => messages.some((m) => budget.test(m)), 60_000), 'no drop notice of the session budget reached the client');
  assert.ok(await waitUntil(() => budget.test(stderr()), 60_000), 'stderr does not report the drops');
});

attack('log-stderr-unread', 'guests flood logs while nobody reads the server\'s stderr: lines are dropped and counted, not queued in the server', async (t) => {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  const { kilnBin, root } = await import('../helpers.mjs');
  const dir = sources(t, { 'loud.ts': `
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 600000, handler: () => { for (let i = 0; i < 2000; i++) console.log('x'.repeat(1000)); return 'flooded'; } });` });
  // stderr is a pipe nobody reads until the floods are over (the server's writes to it cannot complete).
  const transport = new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', join(dir, 'loud.ts')], cwd: root, stderr: 'pipe' });
  const client = new Client({ name: 'kiln-test', version: '0.0.0' });
  t.after(() => client.close());
  await client.connect(transport);
  // 20 sessions: each lets at least its budget's 128 KiB through, 2.5 MiB in all, past the 1 MiB bound.
  const floods = await Promise.all(Array.from({ length: 20 }, (_, i) => call(client, 'flood', {}, { session: `loud${i}` })));
  for (const r of floods) assert.equal(r.text, 'flooded');
  const text = [];
  transport.stderr.on('data', (d) => text.push(String(d)));
  assert.equal((await call(client, 'flood', {}, { session: 'after' })).text, 'flooded', 'the server stopped answering');
  assert.ok(await waitUntil(() => /kiln: \d+ line\(s\) dropped: stderr was not read as fast as they came/.test(text.join('')), 60_000),
    'the lines nobody read were not reported as dropped');
  const stderrBytes = text.join('').length;
  assert.ok(stderrBytes < 4 * 1024 * 1024, `${stderrBytes} characters of stderr were held for a reader who was not reading`);
});

attack('log-stdout-unread', 'guests flood logs while the client reads nothing: log messages are dropped and counted, not queued ahead of answers', async (t) => {
  const { spawn } = await import('node:child_process');
  const { kilnBin, root } = await import('../helpers.mjs');
  const srv = await startServer(t);
  const dir = sources(t, { 'loud.ts': `
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => {
      for (let i = 0; i < 2000; i++) console.log('x'.repeat(1000));
      await fetch('http://127.0.0.1:${srv.port}/flood-done'); // tells the test it has logged everything
      return 'flooded';
    } });
    defineTool({ name: 'one', exposeAsTool: true, handler: () => { console.log('one line'); return 'one'; } });` });
  const child = spawn(process.execPath, [kilnBin, 'mcp', join(dir, 'loud.ts')], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  child.stderr.resume(); // read and ignored
  let out = '';
  let bytes = 0;
  const parsed = [];
  const messages = () => parsed;
  const send = (id, method, params) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, params }) + '\n');
  child.stdout.on('data', (d) => {
    bytes += d.length;
    out += d;
    const lines = out.split('\n');
    out = lines.pop();
    for (const l of lines) if (l) parsed.push(JSON.parse(l));
  });
  send(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'kiln-test', version: '0' } });
  assert.ok(await waitUntil(() => messages().some((m) => m.id === 1), 60_000), 'the server did not answer initialize');
  send(undefined, 'notifications/initialized');
  // The client stops reading: 20 sessions flood, each letting at least its budget's 128 KiB through.
  child.stdout.pause();
  for (let i = 0; i < 20; i++) send(10 + i, 'tools/call', { name: 'flood', arguments: {}, _meta: { session: `loud${i}` } });
  const finished = () => srv.hits.filter((h) => h.path === '/flood-done').length;
  assert.ok(await waitUntil(() => finished() === 20, 120_000), `only ${finished()} of the 20 floods finished`);
  child.stdout.resume();
  assert.ok(await waitUntil(() => [...Array(20).keys()].every((i) => messages().some((m) => m.id === 10 + i)), 120_000), 'a flood was not answered');
  send(100, 'tools/call', { name: 'one', arguments: {}, _meta: { session: 'after' } });
  assert.ok(await waitUntil(() => messages().some((m) => m.id === 100), 60_000), 'the server stopped answering');
  const notice = /(\d+) log message\(s\) of guests dropped: the client did not read them as fast as they came/;
  assert.ok(await waitUntil(() => messages().some((m) => m.method === 'notifications/message' && notice.test(String(m.params.data))), 60_000),
    'the log messages the client could not take were not reported as dropped');
  assert.ok(bytes < 4 * 1024 * 1024, `${bytes} bytes of log messages were held for a client that was not reading`);
}, { timeout: 600_000 });

attack('audit-allowed-flood', '20,000 allowed fs.stat calls on distinct paths in one call do not push an earlier refusal out of the audit log', async (t) => {
  const mark = token('MARKER');
  const dir = sources(t, { 'ws/.keep': '', 'stat.ts': `
    defineTool({ name: 'mark', exposeAsTool: true, allow: { fs: { read: ['ws'] } }, handler: async ({ fs }) => {
      try { await fs.readFile('../${mark}'); return 'read'; } catch (e) { return e.name; }
    } });
    defineTool({ name: 'flood', exposeAsTool: true, timeoutMs: 600000, allow: { fs: { read: ['ws'] } }, handler: async ({ fs }) => {
      let missing = 0;
      for (let i = 0; i < 20000; i += 16) {
        await Promise.all(Array.from({ length: 16 }, (_, j) => fs.stat('ws/' + 'p'.repeat(200) + (i + j)).catch(() => missing++)));
      }
      return missing;
    } });` });
  const log = join(dir, 'audit.jsonl');
  const { client } = await serve(t, [join(dir, 'stat.ts')], {
    toml: `[fs]\nroot = ${JSON.stringify(dir)}\n[audit]\npath = ${JSON.stringify(log)}\nmaxBytes = 1048576\nkeep = 2\n`,
  });
  assert.equal((await call(client, 'mark')).text, 'PermissionError');
  const marked = () => auditLines(log, 2).some((l) => l.type === 'decision' && l.verdict === 'deny' && l.target.includes(mark));
  assert.ok(marked(), 'the refusal was not logged');
  const r = await client.callTool({ name: 'flood', arguments: {} }, { timeout: 580_000 });
  assert.ok(!r.isError, JSON.stringify(r.content));
  assert.equal(r.content[0].text, '20000');
  assert.ok(marked(), 'the refusal was pushed out of the audit log');
  const all = auditLines(log, 2);
  assert.deepEqual(all.filter((l) => l.type === 'log' && l.event === 'rotated' && l.removed), [], 'a rotation dropped a file');
  const written = all.filter((l) => l.type === 'decision' && l.tool === 'flood' && l.op === 'fs.stat' && l.verdict === 'allow').length;
  const counted = all.filter((l) => l.type === 'repeated' && l.tool === 'flood' && l.op === 'fs.stat' && l.verdict === 'allow').reduce((n, l) => n + l.count, 0);
  assert.equal(written + counted, 20000, 'every allowed stat is in the log, written or counted');
  assert.ok(written <= 100, `${written} allowed stats written one by one`);
  assert.ok(all.some((l) => l.type === 'repeated' && l.final && l.op === 'fs.stat' && l.verdict === 'allow' && l.target === '*'), 'no summary line at the call\'s end');
}, { timeout: 600_000 });

attack('stderr-forged-kiln-line', 'a value a message quotes (an import specifier, a file name, a build-time log) cannot print a "kiln:" line on stderr or in a notice', async (t) => {
  const tag = token('forged');
  const dir = sources(t, {
    'imp.ts': `import x from './lib\\u000akiln: ${tag} import';\ndefineTool({ name: 'imp', exposeAsTool: true, handler: () => x });`,
    [`scan/x\nkiln: ${tag} filename.ts`]: 'this is ( not valid',
    'top.ts': `console.log('top\\nkiln: ${tag} build log');\ndefineTool({ name: 'top', exposeAsTool: true, handler: () => 1 });`,
  });
  const notices = [];
  const { stderr } = await serve(t, [join(dir, 'imp.ts'), join(dir, 'scan'), join(dir, 'top.ts')], {
    beforeConnect: (c) => c.setNotificationHandler('notifications/message', (n) => void notices.push(String(n.params.data))),
  });
  const kinds = ['import', 'filename', 'build log'];
  const has = (text, ks = kinds) => ks.every((k) => text.includes(`kiln: ${tag} ${k}`));
  assert.ok(await waitUntil(() => has(stderr()), 60_000), `the quoted values did not reach stderr: ${stderr()}`);
  const forged = (text) => text.split('\n').filter((l) => l.startsWith(`kiln: ${tag}`));
  assert.deepEqual(forged(stderr()), [], 'a quoted value printed a line that passes for the server\'s');
  // The loader's failures reach the client too: their later lines are marked as on stderr.
  assert.ok(await waitUntil(() => has(notices.join('\n'), ['import', 'filename']), 60_000), `no notice quoted the values: ${JSON.stringify(notices)}`);
  assert.deepEqual(notices.flatMap(forged), [], 'a notice holds a line that passes for a message of kiln\'s');
  // kiln build's own error lines.
  const b = await kiln(['build', join(dir, 'imp.ts'), '-o', join(dir, 'imp.wasm')]);
  assert.equal(b.code, 1, b.stderr);
  assert.ok(b.stderr.includes(`kiln: ${tag} import`), b.stderr);
  assert.deepEqual(forged(b.stderr), [], 'kiln build printed a line that passes for kiln\'s');
  assert.equal(existsSync(join(dir, 'imp.wasm')), false);
});
