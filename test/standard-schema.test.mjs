// Standard Schema validators as a tool's schemas (docs/extensions.md, "Typed schemas"): the build writes their
// JSON Schema for tools/list, the host checks calls against it, and the guest runs the validator's own validate.
// The zod example runs here in Node too, on the same code, and the guest must agree with it.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import { transform } from 'sucrase';
import { call, fixtures, kiln, mcp, root, tempDir } from './helpers.mjs';
import { readManifest } from '../dist/host/extensions/artifact.js';

/** extensions/typed.ts evaluated by Node with a defineTool that records its manifests: the same source. */
async function inNode(t) {
  const ts = readFileSync(join(root, 'extensions/typed.ts'), 'utf8');
  const js = transform(ts, { transforms: ['typescript'] }).code.replace(/from 'zod'/, `from '${import.meta.resolve('zod')}'`);
  const file = join(tempDir(t), 'typed.mjs');
  writeFileSync(file, js);
  const tools = [];
  globalThis.defineTool = (m) => tools.push(m);
  await import(pathToFileURL(file).href);
  delete globalThis.defineTool;
  return tools[0];
}

test('a zod schema: tools/list shows its JSON Schema, the host refuses a bad argument, zod runs in the guest as in Node', async (t) => {
  const node = await inNode(t);
  const { client } = await mcp(t, ['extensions/typed.ts']);
  const listed = (await client.listTools()).tools.find((x) => x.name === 'typed.count');
  const std = (s, io) => s['~standard'].jsonSchema[io]({ target: 'draft-2020-12' });
  assert.deepEqual(listed.inputSchema, std(node.inputSchema, 'input'), 'inputSchema is zod\'s own input JSON Schema');
  assert.deepEqual(listed.outputSchema, std(node.outputSchema, 'output'));
  assert.deepEqual(listed.inputSchema.required, ['text']);

  // The host's check, by the JSON Schema: zod never sees these.
  const tooLong = await call(client, 'typed.count', { text: 'x'.repeat(201) });
  assert.equal(tooLong.isError, true);
  assert.match(tooLong.text, /^InvalidArgumentsError: arguments for "typed.count" do not match its inputSchema: args\/text must NOT have more than 200 characters/);
  assert.match((await call(client, 'typed.count', { text: 'a', unit: 'lines' })).text, /args\/unit must be equal to one of the allowed values/);

  const validate = new Ajv2020({ strict: false }).compile(listed.outputSchema);
  for (const args of [{ text: '  two  words ' }, { text: 'abc', unit: 'chars' }, { text: '   ' }]) {
    const guest = await call(client, 'typed.count', args);
    const parsed = node.inputSchema.safeParse(args);
    if (!parsed.success) {
      // A refinement JSON Schema cannot say: the host lets it through, zod in the guest refuses it, as in Node.
      assert.equal(guest.isError, true);
      assert.equal(guest.text.split('\n')[0], `InvalidArgumentsError: arguments for "typed.count" do not match its inputSchema: text: ${parsed.error.issues[0].message}`);
      continue;
    }
    assert.equal(guest.isError, false, guest.text);
    assert.deepEqual(guest.json, node.handler({ args: parsed.data }), `the handler got zod's output for ${JSON.stringify(args)}`);
    assert.ok(validate(guest.json), JSON.stringify(validate.errors));
  }
});

test('valibot through toStandardJsonSchema builds; a validator that cannot write JSON Schema, or a hostile one, fails its file alone', async (t) => {
  const dir = tempDir(t);
  const files = ['valibot.ts', 'valibot-bare.ts', 'hostile-getter.js', 'hostile-junk.js', 'hostile-deep.js'];
  const r = await kiln(['build', ...files.map((f) => join(fixtures, 'standard', f)), '--out-dir', dir]);
  assert.equal(r.code, 1);
  const manifest = readManifest('valibot.wasm', readFileSync(join(dir, 'valibot.wasm')));
  assert.deepEqual(manifest.tools[0].inputSchema, {
    $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { text: { type: 'string', maxLength: 5 } }, required: ['text'],
  });
  assert.match(r.stderr, /valibot-bare\.ts:4:\d+: TypeError: defineTool: tool "std\.bare": inputSchema is a Standard Schema \(vendor "valibot"\) that cannot write itself as JSON Schema .*wrap a valibot schema in toStandardJsonSchema\(\) from @valibot\/to-json-schema/);
  assert.match(r.stderr, /hostile-getter\.js:3:\d+: TypeError: defineTool: tool "std\.getter": reading inputSchema's ~standard failed: no schema for you/);
  assert.match(r.stderr, /hostile-junk\.js:3:\d+: TypeError: defineTool: tool "std\.junk": inputSchema's ~standard\.jsonSchema\.input\(\) failed to give JSON Schema: circular reference/);
  assert.match(r.stderr, /hostile-deep\.js: tool "std\.deep": inputSchema nests deeper than 64 levels/);
});
