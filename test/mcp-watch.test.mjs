// `kiln mcp --watch`, with the real SDK client: a changed source is rebuilt and served without a restart and
// the client is told (notifications/tools/list_changed); a new file joins, a deleted one leaves; a broken save
// keeps the last good version serving and says why on stderr.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, mcp, tempDir, waitUntil } from './helpers.mjs';

test('watch mode: edits, new files, deletions and broken saves, with list_changed', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'w.ts');
  writeFileSync(file, "defineTool({ name: 'w.v', exposeAsTool: true, handler: () => 'one' });");
  const notices = [];
  const { client, stderr } = await mcp(t, ['--watch', dir], {
    beforeConnect: (c) => c.setNotificationHandler('notifications/message', (n) => { if (n.params.logger === 'kiln') notices.push(n.params); }),
  });
  let changes = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes++; });
  const names = async () => (await client.listTools()).tools.map((x) => x.name).filter((n) => n.startsWith('w.') || n.startsWith('x.')).sort();
  assert.equal((await call(client, 'w.v')).text, 'one');

  // An edit that changes a tool's behaviour and adds a tool.
  writeFileSync(file, "defineTool({ name: 'w.v', exposeAsTool: true, handler: () => 'two' });\ndefineTool({ name: 'w.extra', exposeAsTool: true, handler: () => 3 });");
  assert.ok(await waitUntil(() => changes >= 1, 30_000), `no list_changed; stderr: ${stderr()}`);
  assert.deepEqual(await names(), ['w.extra', 'w.v']);
  assert.equal((await call(client, 'w.v')).text, 'two');

  // A broken save: the last good version keeps serving, and stderr says why.
  const before = changes;
  writeFileSync(file, "defineTool({ name: 'w.v', exposeAsTool: true, handler: () => { return 'three' ");
  assert.ok(await waitUntil(() => /its last good version keeps serving/.test(stderr()), 30_000), stderr());
  // The client is told too, from logger "kiln" (it cannot see the server's stderr).
  assert.ok(await waitUntil(() => notices.some((n) => /its last good version keeps serving/.test(n.data)), 5000), JSON.stringify(notices));
  assert.ok(notices.some((n) => n.level === 'info' && /^reloaded: /.test(n.data)), JSON.stringify(notices));
  assert.equal((await call(client, 'w.v')).text, 'two');
  assert.equal(changes, before, 'nothing changed for the client');

  // A new file joins; deleting it takes its tool away.
  writeFileSync(join(dir, 'x.ts'), "defineTool({ name: 'x.new', exposeAsTool: true, handler: () => 'new' });");
  assert.ok(await waitUntil(async () => (await names()).includes('x.new'), 30_000), stderr());
  assert.equal((await call(client, 'x.new')).text, 'new');
  rmSync(join(dir, 'x.ts'));
  assert.ok(await waitUntil(async () => !(await names()).includes('x.new'), 30_000), stderr());
  assert.ok(changes >= before + 2, `list_changed for the new and the deleted file (${changes})`);
});
