// Tool results and tool metadata as MCP clients see them, with the official SDK clients v2 and v1 (whose
// schema validation rejects a malformed tools/list or result): strings as text, objects as structured
// content, outputSchema listed and enforced, bytes as image content sniffed by their first bytes, mixed
// content through kiln.content, and annotations derived from the capabilities.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { call, kiln, kilnBin, mcp, tempDir } from './helpers.mjs';

// A 1×1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const SOURCE = `
const png = Uint8Array.from(atob('${PNG}'), (c) => c.charCodeAt(0));
const typed = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false };
defineTool({ name: 'res.text', exposeAsTool: true, handler: () => 'plain words' });
defineTool({ name: 'res.deep', exposeAsTool: true, handler: ({ args }) => { let v: any = 1; for (let i = 0; i < args.n; i++) v = args.obj ? { v } : [v]; return v; } });
defineTool({ name: 'res.depthof', exposeAsTool: true, handler: ({ args }) => { let d = 0; for (let v = args.v; typeof v === 'object'; v = v[0]) d++; return d; } });
defineTool({ name: 'res.obj', exposeAsTool: true, handler: () => ({ a: 1, b: [1, 2] }) });
defineTool({ name: 'res.arr', exposeAsTool: true, handler: () => [1, 2] });
defineTool({ name: 'res.typed', title: 'Typed result', exposeAsTool: true, outputSchema: typed,
  handler: ({ args }) => (args.bad ? { n: 'not a number' } : { n: 42 }) });
defineTool({ name: 'res.png', exposeAsTool: true, handler: () => png });
defineTool({ name: 'res.buffer', exposeAsTool: true, handler: () => png.buffer });
defineTool({ name: 'res.fakeimage', exposeAsTool: true, handler: () => new TextEncoder().encode('<svg onload=alert(1)>') });
defineTool({ name: 'res.liar', exposeAsTool: true, handler: () => kiln.content([{ type: 'image', data: png, mimeType: 'image/jpeg' }]) });
defineTool({ name: 'res.mixed', exposeAsTool: true, handler: () =>
  kiln.content(['Here is the chart:', png, { type: 'resource_link', uri: 'file:///reports/q3.csv', name: 'q3.csv', mimeType: 'text/csv' }]) });
defineTool({ name: 'res.badpart', exposeAsTool: true, handler: () => kiln.content([{ type: 'resource', resource: { uri: 'file:///etc/passwd' } }]) });
defineTool({ name: 'res.cmd', exposeAsTool: true, annotations: { readOnlyHint: true, destructiveHint: false }, allow: { commands: { hi: { run: ['echo', 'hi'] } } }, handler: () => 1 });
defineTool({ name: 'res.net', exposeAsTool: true, annotations: { openWorldHint: false }, allow: { net: ['127.0.0.1'] }, handler: () => 1 });
defineTool({ name: 'res.cautious', exposeAsTool: true, annotations: { readOnlyHint: false }, handler: () => 1 });
`;

async function serve(t) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'res.ts'), SOURCE);
  return { dir, ...(await mcp(t, [dir])) };
}

test('results: text, structured content, images, mixed content; refusals are tool errors', async (t) => {
  const { client } = await serve(t);
  await client.listTools(); // the v2 client then checks structured results against each tool's outputSchema
  const callTool = (name, args = {}) => client.callTool({ name, arguments: args });

  assert.deepEqual(await callTool('res.text'), { content: [{ type: 'text', text: 'plain words' }] });
  assert.deepEqual(await callTool('res.obj'), { content: [{ type: 'text', text: '{"a":1,"b":[1,2]}' }], structuredContent: { a: 1, b: [1, 2] } });
  assert.deepEqual(await callTool('res.arr'), { content: [{ type: 'text', text: '[1,2]' }] });
  assert.deepEqual((await callTool('res.typed')).structuredContent, { n: 42 });
  const wrong = await callTool('res.typed', { bad: true });
  assert.equal(wrong.isError, true);
  assert.match(wrong.content[0].text, /^InvalidResultError: tool "res\.typed" returned a result that does not match its outputSchema: result\/n must be number/);

  for (const name of ['res.png', 'res.buffer']) assert.deepEqual((await callTool(name)).content, [{ type: 'image', data: PNG, mimeType: 'image/png' }]);
  const fake = await callTool('res.fakeimage');
  assert.equal(fake.isError, true);
  assert.match(fake.content[0].text, /not a PNG, JPEG, GIF or WebP image/);
  const liar = await callTool('res.liar');
  assert.equal(liar.isError, true);
  assert.match(liar.content[0].text, /is image\/png, not the image\/jpeg it declares/);

  assert.deepEqual((await callTool('res.mixed')).content, [
    { type: 'text', text: 'Here is the chart:' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
    { type: 'resource_link', uri: 'file:///reports/q3.csv', name: 'q3.csv', mimeType: 'text/csv' },
  ]);
  const badpart = await callTool('res.badpart');
  assert.equal(badpart.isError, true);
  assert.match(badpart.content[0].text, /has type "resource"; kiln sends text, image and resource_link parts/);
});

test('tools/list: title and outputSchema; annotations derived from what the tool can reach (claims only more cautious)', async (t) => {
  const { client } = await serve(t);
  const tools = Object.fromEntries((await client.listTools()).tools.map((x) => [x.name, x]));
  assert.equal(tools['res.typed'].title, 'Typed result');
  assert.equal(tools['res.typed'].outputSchema.required[0], 'n');
  // This file has a tool with a command, and every loaded tool can call it through plugins[...]: none is
  // read-only, whatever it claims (res.cmd claims readOnlyHint and not destructive).
  assert.deepEqual(tools['res.cmd'].annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  assert.deepEqual(tools['res.text'].annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });

  const annotationsOf = async (source) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'a.ts'), source);
    const { client: c } = await mcp(t, [dir]);
    return Object.fromEntries((await c.listTools()).tools.filter((x) => x.name.startsWith('a.')).map((x) => [x.name, x.annotations]));
  };
  const pure = await annotationsOf(`
defineTool({ name: 'a.pure', exposeAsTool: true, handler: () => 1 });
defineTool({ name: 'a.cautious', exposeAsTool: true, annotations: { readOnlyHint: false, idempotentHint: false }, handler: () => 1 });
defineTool({ name: 'a.destroys', exposeAsTool: true, annotations: { destructiveHint: true }, handler: () => 1 });
defineTool({ name: 'a.closed', exposeAsTool: true, annotations: { openWorldHint: true }, handler: () => 1 });`);
  assert.deepEqual(pure['a.pure'], { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  assert.deepEqual(pure['a.cautious'], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
  assert.deepEqual(pure['a.destroys'], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
  assert.deepEqual(pure['a.closed'], { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true });
  // A tool with allow.net makes every tool that can call it open-world, and not read-only (allow.net cannot
  // restrict methods: it can send DELETE); claiming otherwise changes nothing.
  const net = await annotationsOf(`
defineTool({ name: 'a.pure', exposeAsTool: true, handler: () => 1 });
defineTool({ name: 'a.net', exposeAsTool: true, annotations: { openWorldHint: false }, allow: { net: ['127.0.0.1'] }, handler: () => 1 });`);
  assert.deepEqual(net['a.pure'], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  assert.deepEqual(net['a.net'], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  // An unexposed helper with a command (reachable only through plugins[...]) still counts, also through exec.
  const hidden = await annotationsOf(`
defineTool({ name: 'a.proxy', exposeAsTool: true, annotations: { readOnlyHint: true }, handler: () => plugins['a.helper']({}) });
defineTool({ name: 'a.helper', allow: { exec: { rm: { run: ['true'] } } }, handler: () => 1 });`);
  assert.deepEqual(hidden['a.proxy'], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
});

test('the v1 SDK client accepts the tool list and the results (its own schema validation)', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'res.ts'), SOURCE);
  const transport = new StdioV1({ command: process.execPath, args: [kilnBin, 'mcp', dir], stderr: 'ignore' });
  const client = new ClientV1({ name: 'kiln-test-v1', version: '0.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const { tools } = await client.listTools();
  assert.ok(tools.some((x) => x.name === 'res.typed' && x.outputSchema && x.annotations?.destructiveHint === true));
  assert.deepEqual((await client.callTool({ name: 'res.typed', arguments: {} })).structuredContent, { n: 42 });
  assert.equal((await client.callTool({ name: 'res.mixed', arguments: {} })).content.length, 3);
  assert.deepEqual((await client.callTool({ name: 'res.text', arguments: {} })).content, [{ type: 'text', text: 'plain words' }]);
});

test('a manifest with an outputSchema that is not an object schema, or bad annotations, fails its file at build', async (t) => {
  const dir = tempDir(t);
  const { kiln } = await import('./helpers.mjs');
  for (const [body, re] of [
    ["outputSchema: { type: 'array' }", /outputSchema must describe an object/],
    ["outputSchema: { type: 'object', properties: { a: { type: 'nope' } } }", /outputSchema is not a valid JSON Schema/],
    ["annotations: { readOnlyHint: 'yes' }", /annotations\.readOnlyHint must be true or false/],
    ["annotations: { readonlyHint: true }", /unknown key "readonlyHint" \(did you mean "readOnlyHint"\?\)/],
    ['title: 42', /title must be a string/],
  ]) {
    const file = join(dir, 'bad.ts');
    writeFileSync(file, `defineTool({ name: 'bad.one', exposeAsTool: true, ${body}, handler: () => ({}) });`);
    const r = await kiln(['build', file, '-o', join(dir, 'bad.wasm')]);
    assert.notEqual(r.code, 0, body);
    assert.match(r.stderr, re, body);
  }
});

// V8's JSON.stringify and structured clone fail a few thousand levels down (JSON.parse does not): a result or
// arguments past 1000 levels are refused with an error that says so, instead of a crash or a silent timeout.
test('results and arguments nested past 1000 levels are refused with a clear error; 1000 pass', { timeout: 60_000 }, async (t) => {
  const { client } = await serve(t);
  const nested = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v; };
  assert.equal((await call(client, 'res.deep', { n: 999 })).isError, false);
  for (const [n, obj] of [[1001, false], [1001, true], [5000, false]]) {
    const r = await call(client, 'res.deep', { n, obj });
    assert.equal(r.isError, true);
    assert.match(r.text, /^InvalidResultError: tool "res.deep" returned a result nested more than 1000 levels deep/);
  }
  // Deeper still, the guest's own JSON.stringify reaches its stack limit first (Node's does at ~4,000 levels):
  // the call fails with that RangeError's message, and nothing crashes.
  const deeper = await call(client, 'res.deep', { n: 100_000 });
  assert.equal(deeper.isError, true);
  assert.match(deeper.text, /^TypeError: the handler's result is not JSON-serialisable: Maximum call stack size exceeded/);
  assert.equal((await call(client, 'res.depthof', { v: nested(999) })).json, 999);
  const deep = await call(client, 'res.depthof', { v: nested(1001) });
  assert.equal(deep.isError, true);
  assert.match(deep.text, /^InvalidArgumentsError: arguments for "res.depthof" nest more than 1000 levels deep/);
  assert.equal((await call(client, 'res.text')).text, 'plain words', 'the session goes on');
});

test('json-depth: brackets inside strings do not count; the first level too deep is enough', async () => {
  const { textNestsDeeper, valueNestsDeeper } = await import('../dist/host/untrusted/json-depth.js');
  assert.equal(textNestsDeeper('[[1]]', 2), false);
  assert.equal(textNestsDeeper('[[[1]]]', 2), true);
  assert.equal(textNestsDeeper('["[[[[", {"a": "{{{{\\"}}]', 2), false);
  assert.equal(textNestsDeeper('["\\"", [[1]]]', 2), true, 'an escaped quote does not end the string early');
  assert.equal(valueNestsDeeper({ a: [{ b: 1 }] }, 3), false);
  assert.equal(valueNestsDeeper({ a: [{ b: [] }] }, 3), true);
  assert.equal(valueNestsDeeper('x', 0), false);
});

test('a result holding a Promise (a forgotten await) is an error naming where, over MCP and kiln run; awaited, it is the value Node gives', async (t) => {
  const dir = tempDir(t);
  const source = `const lookup = async (id) => ({ id, name: 'Ada' });
export const shapes = {
  user: () => ({ user: lookup('1') }),
  items: () => ({ items: [1, 2, lookup('3')] }),
  odd: () => ({ 'a b': { deep: [{ x: { then: () => {} } }] } }),
  viaToJSON: () => ({ d: { toJSON: () => lookup('4') } }),
  awaited: async () => ({ user: await lookup('1'), items: [1, await lookup('3')], empty: {}, text: '{}' }),
};
for (const [name, handler] of Object.entries(shapes)) if (typeof defineTool === 'function') defineTool({ name: 'aw.' + name, exposeAsTool: true, handler });
`;
  writeFileSync(join(dir, 'aw.ts'), source);
  const { client } = await mcp(t, [join(dir, 'aw.ts')]);
  const expected = {
    'aw.user': 'TypeError: result.user is a Promise: did you forget await?',
    'aw.items': 'TypeError: result.items[2] is a Promise: did you forget await?',
    'aw.odd': 'TypeError: result["a b"].deep[0].x is a thenable (it has a then method): did you forget await?',
    'aw.viaToJSON': 'TypeError: result.d is a Promise: did you forget await?',
  };
  for (const [name, message] of Object.entries(expected)) {
    const r = await call(client, name);
    assert.equal(r.isError, true, name);
    assert.equal(r.text.split('\n')[0], message);
  }
  // The same code awaited: the value Node's JSON gives (an empty object and a "{}" string are no Promise).
  writeFileSync(join(dir, 'aw.mjs'), source);
  const { shapes } = await import(join(dir, 'aw.mjs'));
  assert.deepEqual((await call(client, 'aw.awaited')).json, JSON.parse(JSON.stringify(await shapes.awaited())));

  // A script's value too.
  writeFileSync(join(dir, 'script.js'), "const p = Promise.resolve(1);\n({ ok: await p, late: [p] })\n");
  const r = await kiln(['run', join(dir, 'script.js')], { cwd: dir });
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /TypeError: result\.late\[0\] is a Promise: did you forget await\?/);
});
