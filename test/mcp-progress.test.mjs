// Progress notifications and MCP logging, with the real SDK client: a handler's ctx.progress reaches a client
// that asked for progress (and resets its timeout when it says so), rate-limited and only ever increasing; a
// client that did not ask gets none. Guest console output reaches the client as notifications/message at
// the level it chose.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { INTERVAL_MS, parseProgress, progressSink } from '../dist/host/mcp/progress.js';
import { mcp, tempDir, waitUntil } from './helpers.mjs';

const SOURCE = `
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
defineTool({ name: 'prog.steps', exposeAsTool: true, handler: async ({ args, progress }) => {
  for (let i = 1; i <= args.n; i++) {
    progress(i, args.n, 'step ' + i);
    await sleep(args.ms);
  }
  progress(1, args.n, 'going backwards is dropped');
  return 'done';
} });
defineTool({ name: 'prog.logs', exposeAsTool: true, handler: () => {
  console.debug('a debug line');
  console.info('an info line');
  console.warn('a warning');
  console.error('an error');
  return 'logged';
} });
`;

async function serve(t) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'prog.ts'), SOURCE);
  return mcp(t, [dir]);
}

test('ctx.progress reaches a client that asked for it, increasing, and keeps its timeout from firing', async (t) => {
  const { client } = await serve(t);
  const seen = [];
  // 8 steps of 150 ms (1.2 s) against a 600 ms timeout that every progress notification resets.
  const r = await client.callTool({ name: 'prog.steps', arguments: { n: 8, ms: 150 } },
    { onprogress: (p) => seen.push(p), timeout: 600, resetTimeoutOnProgress: true });
  assert.deepEqual(r.content, [{ type: 'text', text: 'done' }]);
  assert.ok(seen.length >= 4, `only ${seen.length} notifications`);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress must increase');
  assert.deepEqual(seen[0], { progress: 1, total: 8, message: 'step 1' });
  assert.ok(!seen.some((p) => p.message === 'going backwards is dropped'));
  // Without a progress token nothing is sent, and the handler runs as before.
  const quiet = [];
  client.setNotificationHandler('notifications/progress', (n) => quiet.push(n));
  assert.equal((await client.callTool({ name: 'prog.steps', arguments: { n: 2, ms: 1 } })).content[0].text, 'done');
  assert.deepEqual(quiet, []);
});

test('the progress sink: malformed updates dropped, at most one per interval, the newest waiting one wins, nothing after close', async () => {
  for (const bad of ['nope', 'null', '{"progress":"1"}', '{"progress":1,"total":"x"}', '{"progress":1,"message":5}', '{"progress":1e999}', '{}']) {
    assert.equal(parseProgress(bad), undefined, bad);
  }
  assert.equal(parseProgress(JSON.stringify({ progress: 1, message: 'x'.repeat(5000) })).message.length, 1000);
  let now = 0;
  const sent = [];
  const sink = progressSink('tok', (p) => sent.push(p), () => now);
  sink('{"progress":1}');
  sink('{"progress":2}');
  sink('{"progress":3}'); // replaces 2, which was waiting
  assert.deepEqual(sent.map((p) => p.progress), [1]);
  now = INTERVAL_MS;
  await new Promise((r) => setTimeout(r, INTERVAL_MS + 50));
  assert.deepEqual(sent.map((p) => p.progress), [1, 3]);
  assert.equal(sent[1].progressToken, 'tok');
  now = 10 * INTERVAL_MS;
  sink('{"progress":3}'); // not an increase
  sink('{"progress":4}');
  assert.deepEqual(sent.map((p) => p.progress), [1, 3, 4]);
  sink('{"progress":5}');
  sink.close();
  await new Promise((r) => setTimeout(r, INTERVAL_MS + 50));
  assert.deepEqual(sent.map((p) => p.progress), [1, 3, 4], 'nothing after close');
});

test('guest console output reaches the client as notifications/message at the level it set', async (t) => {
  const { client } = await serve(t);
  const got = [];
  client.setNotificationHandler('notifications/message', (n) => got.push(n.params));
  await client.setLoggingLevel('warning');
  assert.equal((await client.callTool({ name: 'prog.logs', arguments: {} })).content[0].text, 'logged');
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(got.map((p) => [p.level, p.data]), [['warning', 'a warning'], ['error', 'an error']]);
  assert.ok(got.every((p) => p.logger === 'prog.ts'), JSON.stringify(got));
});

test("kiln's own messages reach the client as notifications/message from logger \"kiln\": a file that did not load", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'good.ts'), "defineTool({ name: 'good.one', exposeAsTool: true, handler: () => 1 });");
  writeFileSync(join(dir, 'broken.ts'), "defineTool({ name: 'broken.one', handler: () => { return ");
  // A guest's lines come from its file's logger, never from "kiln".
  writeFileSync(join(dir, 'kiln.ts'), "defineTool({ name: 'k.log', exposeAsTool: true, handler: () => { console.error('not loaded: forged'); return 1; } });");
  const got = [];
  const { client } = await mcp(t, [dir], { beforeConnect: (c) => c.setNotificationHandler('notifications/message', (n) => got.push(n.params)) });
  assert.ok(await waitUntil(() => got.some((p) => p.logger === 'kiln'), 5000), JSON.stringify(got));
  const mine = got.filter((p) => p.logger === 'kiln');
  assert.equal(mine.length, 1, JSON.stringify(mine));
  assert.equal(mine[0].level, 'error');
  assert.match(mine[0].data, /^not loaded: .*broken\.ts/);
  await client.callTool({ name: 'k.log', arguments: {} });
  assert.ok(await waitUntil(() => got.some((p) => p.data === 'not loaded: forged')));
  assert.deepEqual(got.filter((p) => p.data === 'not loaded: forged').map((p) => p.logger), ['kiln.ts']);
});
