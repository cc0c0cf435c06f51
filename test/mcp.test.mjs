// `kiln mcp` through a real MCP client over stdio.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, fixtures, kiln, kilnBin, mcp, root, tempDir } from './helpers.mjs';

test('tools/list shows exposed tools with their schemas, plus the audit tool', async (t) => {
  const { client } = await mcp(t, ['extensions/', `${fixtures}/good/ferridriver-style.js`]);
  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name);
  assert.ok(names.includes('kiln_extensions'));
  assert.ok(names.includes('hello.greet'));
  assert.ok(names.includes('compat.echo'), 'an extension written to the ferridriver contract loads unchanged');
  const greet = tools.find((x) => x.name === 'hello.greet');
  assert.equal(greet.description, 'Greet someone by name');
  assert.deepEqual(greet.inputSchema.properties.name, { type: 'string', description: 'who to greet' });
});

test('tools that are not exposeAsTool are callable from plugins but not over MCP', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'hidden.ts'), `
defineTool({ name: 'x.helper', handler: ({ args }) => args.n * 2 });
defineTool({ name: 'x.public', exposeAsTool: true, handler: async ({ args }) => ({ doubled: await plugins['x.helper']({ n: args.n }) }) });
`);
  const { client } = await mcp(t, [dir]);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(!names.includes('x.helper'));
  assert.deepEqual((await call(client, 'x.public', { n: 21 })).json, { doubled: 42 });
  const hidden = await call(client, 'x.helper', { n: 1 });
  assert.equal(hidden.isError, true);
  assert.match(hidden.text, /no tool named "x.helper" is exposed/);
});

test('arguments are validated before the handler runs; the handler is never entered on a mismatch', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const bad = await call(client, 'probe.counted', { n: 'three' });
  assert.equal(bad.isError, true);
  assert.match(bad.text, /^InvalidArgumentsError: arguments for "probe.counted" do not match its inputSchema: args\/n must be integer/);
  const extra = await call(client, 'probe.counted', { n: 1, evil: true });
  assert.equal(extra.isError, true);
  assert.equal((await call(client, 'probe.count')).json.count, 0, 'the handler did not run');
  assert.deepEqual((await call(client, 'probe.counted', { n: 3 })).json, { n: 3, count: 1 });
});

test('a handler that throws is an isError result: message first, source-mapped stack after', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const r = await call(client, 'probe.throws');
  assert.equal(r.isError, true);
  const [first, ...rest] = r.text.split('\n');
  assert.equal(first, 'RangeError: the probe failed on purpose');
  const lines = readFileSync(`${fixtures}/good/probe.ts`, 'utf8').split('\n');
  const line = lines.findIndex((l) => l.includes("throw new RangeError('the probe failed")) + 1;
  // Line and column of the original .ts: V8 points at \`new\`, quickjs-ng at the constructor's name.
  const col = lines[line - 1].indexOf('new RangeError') + 1;
  assert.match(rest.join('\n'), new RegExp(`at handler \\(probe\\.ts:${line}:(${col}|${col + 4})\\)`));
  assert.doesNotMatch(r.text, /<null>/, 'no frame of kiln\'s own prelude is shown');
});

test('a capability the tool did not declare is refused on the host side', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const r = await call(client, 'probe.undeclared', { name: 'rm' });
  assert.equal(r.isError, true);
  assert.match(r.text, /^PermissionError: tool "probe.undeclared" did not declare a command named "rm" in allow.commands \(it declares: echo\)/);
});

test('sessions from _meta.session keep separate state', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  assert.equal((await call(client, 'probe.state', {}, { session: 'a' })).json.calls, 1);
  assert.equal((await call(client, 'probe.state', {}, { session: 'a' })).json.calls, 2);
  assert.equal((await call(client, 'probe.state', {}, { session: 'b' })).json.calls, 1);
  const bad = await call(client, 'probe.state', {}, { session: 'no spaces allowed' });
  assert.equal(bad.isError, true);
  assert.match(bad.text, /session name .* must be/);
});

test('kiln_extensions audits every loaded file, its tools, capabilities and hashes; failures are listed', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`, `${fixtures}/broken/duplicate.ts`, 'extensions/hello.ts']);
  const plain = (await call(client, 'kiln_extensions')).json;
  assert.match(plain.engine.id, /^[0-9a-f]{64}$/);
  const probe = plain.extensions.find((e) => e.file.endsWith('probe.ts'));
  assert.match(probe.artifactSha256, /^[0-9a-f]{64}$/);
  assert.equal(probe.engine, plain.engine.id);
  const undeclared = probe.tools.find((x) => x.name === 'probe.undeclared');
  assert.deepEqual(undeclared.allow.commands.echo.run, ['echo', '${word}']);
  assert.equal(probe.tools.find((x) => x.name === 'probe.loop').timeoutMs, 200);
  assert.equal(undeclared.inputSchema, undefined);
  assert.equal(plain.failures.length, 1);
  assert.match(plain.failures[0].error, /duplicate\.ts:7/);
  const withSchema = (await call(client, 'kiln_extensions', { include_schema: true })).json;
  const counted = withSchema.extensions.find((e) => e.file.endsWith('probe.ts')).tools.find((x) => x.name === 'probe.counted');
  assert.deepEqual(counted.inputSchema.required, ['n']);
});

test('a name two extensions define is served by neither; a built-in cannot be shadowed', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'a.ts'), "defineTool({ name: 'dup.tool', exposeAsTool: true, handler: () => 'a' });");
  writeFileSync(join(dir, 'b.ts'), "defineTool({ name: 'dup.tool', exposeAsTool: true, handler: () => 'b' });");
  writeFileSync(join(dir, 'c.ts'), "defineTool({ name: 'kiln_extensions', exposeAsTool: true, handler: () => 'fake' });");
  const { client, stderr } = await mcp(t, [dir]);
  const dup = await call(client, 'dup.tool');
  assert.equal(dup.isError, true, dup.text);
  assert.ok(!(await client.listTools()).tools.some((x) => x.name === 'dup.tool'));
  assert.ok(Array.isArray((await call(client, 'kiln_extensions')).json.extensions), 'the built-in audit tool cannot be shadowed');
  assert.match(stderr(), /tool "dup.tool" is not served: it is defined by 2 files \(.*a\.ts, .*b\.ts\)/);
  assert.match(stderr(), /c\.ts: tool name "kiln_extensions" is reserved/);
});

test('kiln.toml lists the extensions to load', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'kiln.toml'), `extensions = ["${join(root, 'extensions')}"]\n`);
  const { client } = await mcp(t, [], { cwd: dir });
  assert.equal((await call(client, 'hello.greet', { name: 'toml' })).json.message, 'Hello, toml!');
  const broken = tempDir(t);
  writeFileSync(join(broken, 'kiln.toml'), 'extensions = [1, 2');
  const r = await kiln(['mcp'], { cwd: broken });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /kiln\.toml: not valid TOML/);
});

test('stdout carries only protocol, and the server exits when stdin closes', async (t) => {
  const child = spawn(process.execPath, [kilnBin, 'mcp', 'extensions/'], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  const answered = new Promise((resolve) => child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('"id":2')) resolve();
  }));
  const send = (msg) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
  send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  send({ method: 'notifications/initialized' });
  send({ id: 2, method: 'tools/call', params: { name: 'hello.greet', arguments: { name: 'raw' } } });
  await answered;
  child.stdin.end();
  assert.equal(await exited, 0); // a server that stays up fails the file at its --test-timeout
  for (const line of out.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), `non-protocol output on stdout: ${line}`);
});

test('discovery is recursive and serves every source kind: .js .cjs .mjs .jsx .ts .cts .mts .tsx', async (t) => {
  const dir = tempDir(t);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(join(dir, 'deep/er'), { recursive: true });
  const files = {
    'a.js': "defineTool({ name: 'kind.js', exposeAsTool: true, handler: () => 'js' });",
    'b.cjs': "const tag = require('./deep/tag.cjs');\ndefineTool({ name: 'kind.cjs', exposeAsTool: true, handler: () => tag });",
    'deep/tag.cjs': "module.exports = 'cjs';",
    'c.mjs': "export const x = 1;\ndefineTool({ name: 'kind.mjs', exposeAsTool: true, handler: () => 'mjs' });",
    'd.jsx': "const React = { createElement: (t, p, ...c) => `<${t}>${c.join('')}</${t}>` };\ndefineTool({ name: 'kind.jsx', exposeAsTool: true, handler: () => <b>jsx</b> });",
    'deep/er/e.ts': "const f = (s: string): string => s;\ndefineTool({ name: 'kind.ts', exposeAsTool: true, handler: () => f('ts') });",
    'f.cts': "const g: string = 'cts';\ndefineTool({ name: 'kind.cts', exposeAsTool: true, handler: () => g });",
    'g.mts': "enum Kind { Mts = 'mts' }\ndefineTool({ name: 'kind.mts', exposeAsTool: true, handler: () => Kind.Mts });",
    'h.tsx': "const id = <T,>(x: T): T => x;\ndefineTool({ name: 'kind.tsx', exposeAsTool: true, handler: () => id('tsx') });",
    'types.d.ts': 'declare const notAnExtension: number;',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const { client, stderr } = await mcp(t, [dir]);
  for (const kind of ['js', 'cjs', 'mjs', 'ts', 'cts', 'mts', 'tsx']) {
    assert.deepEqual(await call(client, `kind.${kind}`), { isError: false, text: kind, json: kind }, stderr());
  }
  assert.equal((await call(client, 'kind.jsx')).json, '<b>jsx</b>');
  const audit = (await call(client, 'kiln_extensions')).json;
  assert.equal(audit.failures.length, 0, JSON.stringify(audit.failures));
  // deep/tag.cjs is loaded too (a file with no tools is still an extension); .d.ts files are not
  assert.ok(!audit.extensions.some((e) => e.file.endsWith('.d.ts')));
});
