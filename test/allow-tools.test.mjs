// allow.tools: a tool calls another extension's tool through plugins[...] only if its allow.tools names it;
// its own file's tools are always callable; scripts may call any tool. The refused call's side effect is
// absent, and annotations count only what a tool can really reach.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, mcp, tempDir } from './helpers.mjs';

const A = `
defineTool({ name: 'a.pure', exposeAsTool: true, handler: () => 'pure' });
defineTool({ name: 'a.caller', exposeAsTool: true, allow: { tools: ['b.echo'] }, handler: async ({ args }) => {
  try { return { ok: await plugins[args.tool]({ v: 1 }) }; } catch (e) { return { error: e.name + ': ' + e.message }; }
} });
defineTool({ name: 'a.sibling', exposeAsTool: true, handler: () => plugins['a.pure']({}) });
`;
const B = `
defineTool({ name: 'b.echo', exposeAsTool: true, handler: ({ args }) => args });
`;
const C = (marker) => `
defineTool({ name: 'b.secret', exposeAsTool: true, allow: { commands: { touch: { run: ['touch', ${JSON.stringify(marker)}] } } },
  handler: async ({ commands }) => { await commands.run('touch'); return 'touched'; } });
`;

async function setup(t) {
  const dir = tempDir(t);
  const marker = join(dir, 'touched');
  writeFileSync(join(dir, 'a.ts'), A);
  writeFileSync(join(dir, 'b.ts'), B);
  writeFileSync(join(dir, 'c.ts'), C(marker));
  const { client } = await mcp(t, [dir]);
  return { client, marker };
}

test('plugins[...] reaches another extension only through allow.tools; its own file always; scripts anything', { timeout: 60_000 }, async (t) => {
  const { client, marker } = await setup(t);
  assert.deepEqual((await call(client, 'a.caller', { tool: 'b.echo' })).json, { ok: { v: 1 } });
  const refused = (await call(client, 'a.caller', { tool: 'b.secret' })).json;
  assert.equal(refused.error, 'PermissionError: tool "a.caller" may not call "b.secret": it belongs to another extension and is not in allow.tools (b.echo); add "b.secret" to allow.tools');
  assert.equal(existsSync(marker), false, 'the refused tool ran');
  assert.equal((await call(client, 'a.sibling')).text, 'pure', "a tool of the caller's own file is always callable");
  const script = (await call(client, 'run_script', { code: "await plugins['b.secret']({})" })).json;
  assert.equal(script.status, 'ok', JSON.stringify(script));
  assert.equal(existsSync(marker), true, 'a script may call any tool');
});

test('annotations count only the tools a tool can reach', { timeout: 60_000 }, async (t) => {
  const { client } = await setup(t);
  const { tools } = await client.listTools();
  const hints = (name) => tools.find((x) => x.name === name).annotations;
  // a.pure's file reaches b.echo (a.caller's allow.tools) and b.echo's file, never c.ts's command.
  assert.equal(hints('a.pure').readOnlyHint, true);
  assert.equal(hints('b.echo').readOnlyHint, true);
  assert.equal(hints('b.secret').destructiveHint, true);
});

test('allow.tools must be an array of tool names', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'bad.ts'), "defineTool({ name: 'bad.one', exposeAsTool: true, allow: { tools: ['not a name!'] }, handler: () => 1 });");
  const { client, stderr } = await mcp(t, [dir]);
  assert.equal((await client.listTools()).tools.some((x) => x.name === 'bad.one'), false);
  assert.match(stderr(), /allow\.tools must be an array of tool names/);
});
