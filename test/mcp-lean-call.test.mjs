// The lean path of tools/call over stdio (host/mcp/lean-call.ts), driven with raw JSON-RPC lines so that what
// reaches the server is exactly what the test wrote: a plain call is answered as the SDK would answer it; a
// malformed one still gets the SDK's own JSON-RPC error; `notifications/cancelled` naming a call stops it and
// suppresses its answer, and the guest hears the client's reason.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { kilnBin, tempDir, waitUntil } from './helpers.mjs';

const SOURCE = `
defineTool({ name: 'l.echo', exposeAsTool: true, handler: ({ args }) => ({ got: args }) });
defineTool({ name: 'l.text', exposeAsTool: true, handler: () => 'plain' });
defineTool({ name: 'l.wait', exposeAsTool: true, timeoutMs: 600000, handler: async ({ signal }) => {
  vars.set('started', 'yes');
  await new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 20000);
    signal.addEventListener('abort', () => { clearTimeout(t); vars.set('reason', signal.reason.message); reject(signal.reason); });
  });
  return 'waited';
} });
defineTool({ name: 'l.vars', exposeAsTool: true, handler: () => ({ started: vars.get('started') ?? null, reason: vars.get('reason') ?? null }) });
`;

async function rawServer(t) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'l.ts'), SOURCE);
  const child = spawn(process.execPath, [kilnBin, 'mcp', dir], { stdio: ['pipe', 'pipe', 'ignore'] });
  t.after(() => child.kill('SIGKILL'));
  const answers = new Map();
  const raw = new Map(); // id -> the answer's line as sent
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    for (let nl; (nl = buf.indexOf('\n')) >= 0; buf = buf.slice(nl + 1)) {
      const line = buf.slice(0, nl);
      const m = JSON.parse(line);
      if ('id' in m) { answers.set(m.id, m); raw.set(m.id, line); }
    }
  });
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
  const answer = async (id, ms = 20_000) => {
    assert.ok(await waitUntil(() => answers.has(id), ms), `no answer to ${JSON.stringify(id)}`);
    return answers.get(id);
  };
  send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  await answer(0);
  send({ method: 'notifications/initialized' });
  return { send, answer, answers, raw };
}

test('a plain call is answered as the SDK would; malformed params still get the SDK\'s JSON-RPC error', { timeout: 60_000 }, async (t) => {
  const { send, answer, raw } = await rawServer(t);
  send({ id: 'a', method: 'tools/call', params: { name: 'l.echo', arguments: { x: 1 } } });
  assert.deepEqual(await answer('a'), { jsonrpc: '2.0', id: 'a', result: { content: [{ type: 'text', text: '{"got":{"x":1}}' }], structuredContent: { got: { x: 1 } } } });
  send({ id: 2, method: 'tools/call', params: { name: 'l.text', _meta: { session: 'other' } } });
  assert.deepEqual((await answer(2)).result, { content: [{ type: 'text', text: 'plain' }] });
  send({ id: 3, method: 'tools/call', params: { name: 'l.echo', arguments: [1, 2] } });
  const bad = await answer(3);
  assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
  send({ id: 4, method: 'tools/call', params: { name: 42 } });
  assert.ok((await answer(4)).error, 'a tool name that is not a string is a JSON-RPC error');
  send({ id: 5, method: 'tools/call', params: { name: 'nope' } });
  assert.equal((await answer(5)).result.isError, true);
  // Byte for byte the SDK's shape: "result" first, the result's keys in its schema's order.
  assert.equal(raw.get('a'), '{"result":{"content":[{"type":"text","text":"{\\"got\\":{\\"x\\":1}}"}],"structuredContent":{"got":{"x":1}}},"jsonrpc":"2.0","id":"a"}');
  assert.equal(raw.get(5), '{"result":{"content":[{"type":"text","text":"KilnError: no tool named \\"nope\\" is exposed by this server"}],"isError":true},"jsonrpc":"2.0","id":5}');
  // An own "__proto__" in the arguments is dropped, as the SDK's parsing drops it.
  send({ id: 6, method: 'tools/call', params: { name: 'l.echo', arguments: JSON.parse('{"__proto__":{"x":1},"y":2}') } });
  assert.deepEqual((await answer(6)).result.structuredContent, { got: { y: 2 } });
});

test('notifications/cancelled stops a call and suppresses its answer; the guest hears the reason', { timeout: 60_000 }, async (t) => {
  const { send, answer, answers } = await rawServer(t);
  send({ id: 10, method: 'tools/call', params: { name: 'l.wait', arguments: {} } });
  await new Promise((r) => setTimeout(r, 500)); // the handler is waiting now
  send({ method: 'notifications/cancelled', params: { requestId: 10, reason: 'raw stop' } });
  send({ id: 11, method: 'tools/call', params: { name: 'l.vars' } });
  const state = (await answer(11)).result.structuredContent;
  assert.equal(state.started, 'yes');
  assert.match(state.reason, /raw stop/);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(answers.has(10), false, 'a cancelled call was answered');
});
