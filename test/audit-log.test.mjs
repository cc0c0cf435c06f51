// [audit] path: one JSON line per tool call (start, end) and per capability decision, through a real MCP
// client; refusals are recorded as deny with their reason; query strings, bodies, command output and argument
// values never reach the file; it rotates by size and every line of both files parses.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, mcp, tempDir } from './helpers.mjs';
import { startServer } from './http-server.mjs';

const SOURCE = (port) => `
defineTool({ name: 'au.cmd', exposeAsTool: true, allow: { commands: { say: { run: ['echo', 'OUTPUT-MARK-\${word}'] } } },
  handler: async ({ commands, args }) => (await commands.run('say', { word: args.word })).trim() });
defineTool({ name: 'au.fetch', exposeAsTool: true, allow: { net: ['127.0.0.1:${port}'] }, handler: async ({ args }) => {
  try { return (await fetch(args.url, { method: 'POST', body: 'BODY-MARK' })).status; } catch (e) { return e.name; }
} });
`;

const lines = (file) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

test('the audit log records calls and decisions, never secrets, and rotates', { timeout: 60_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'au.ts'), SOURCE(srv.port));
  writeFileSync(join(dir, 'kiln.toml'), 'extensions = ["au.ts"]\n[audit]\npath = "audit.jsonl"\nmaxBytes = 4096\n');
  const { client } = await mcp(t, ['--config', join(dir, 'kiln.toml')]);
  const log = join(dir, 'audit.jsonl');
  assert.equal((await call(client, 'au.cmd', { word: 'ARG-MARK' })).text, 'OUTPUT-MARK-ARG-MARK');
  assert.equal((await call(client, 'au.fetch', { url: `http://127.0.0.1:${srv.port}/hello?token=QUERY-MARK` })).json, 200);
  assert.equal((await call(client, 'au.fetch', { url: 'http://localhost:9/x?token=QUERY-MARK' })).text, 'PermissionError');
  const all = lines(log);
  const calls = all.filter((r) => r.type === 'call');
  assert.deepEqual(calls.map((r) => [r.tool, r.phase, r.outcome ?? null]), [
    ['au.cmd', 'start', null], ['au.cmd', 'end', 'ok'], ['au.fetch', 'start', null], ['au.fetch', 'end', 'ok'], ['au.fetch', 'start', null], ['au.fetch', 'end', 'ok'],
  ]);
  const decisions = all.filter((r) => r.type === 'decision').map((r) => [r.op, r.target, r.verdict]);
  assert.deepEqual(decisions, [
    ['commands.run', 'say', 'allow'],
    ['http.fetch', `POST http://127.0.0.1:${srv.port}/hello`, 'allow'],
    ['http.fetch', 'POST http://localhost:9/x', 'deny'],
  ]);
  const denied = all.find((r) => r.verdict === 'deny');
  assert.match(denied.reason, /not in allow\.net/);
  for (const r of all) {
    assert.equal(typeof r.time, 'string');
    assert.equal(r.session, 'default');
    assert.match(r.sha256, /^[0-9a-f]{64}$/);
  }
  const text = readFileSync(log, 'utf8');
  for (const secret of ['QUERY-MARK', 'BODY-MARK', 'OUTPUT-MARK', 'ARG-MARK']) assert.equal(text.includes(secret), false, `${secret} reached the audit log`);

  // Rotation: past 4096 bytes the file moves to .1 and a new one starts; both stay valid JSON lines.
  for (let i = 0; i < 20; i++) await call(client, 'au.cmd', { word: 'x' });
  assert.ok(existsSync(`${log}.1`), 'no rotation');
  assert.ok(readFileSync(log).length <= 4096);
  assert.ok(lines(`${log}.1`).length > 0 && lines(log).length > 0);
});

test('[audit] settings are checked', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'kiln.toml'), '[audit]\nmaxBytes = 10\n');
  const { kiln } = await import('./helpers.mjs');
  const r = await kiln(['mcp', '--config', join(dir, 'kiln.toml')]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /\[audit\] maxBytes must be an integer of at least 4096/);
  writeFileSync(join(dir, 'kiln.toml'), '[audit]\nkeep = 0\n');
  const k = await kiln(['mcp', '--config', join(dir, 'kiln.toml')]);
  assert.notEqual(k.code, 0);
  assert.match(k.stderr, /\[audit\] keep must be an integer from 1 to 1000/);
});
