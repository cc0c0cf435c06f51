// Loading never crashes and never misleads: every failure is reported for its own file and the rest serve;
// schemas MCP clients would reject fail their file at build time; manifest typos fail with a did-you-mean;
// draft 2020-12 schemas (zod 4's z.toJSONSchema()) validate, with defaults filled in and formats checked.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, kiln, mcp, tempDir } from './helpers.mjs';

const write = (dir, files) => { for (const [name, text] of Object.entries(files)) { mkdirSync(join(dir, name, '..'), { recursive: true }); writeFileSync(join(dir, name), text); } };

test('a manifest typo fails the build with a did-you-mean, at the tool and inside allow', async (t) => {
  const dir = tempDir(t);
  const cases = {
    'a.ts': ["defineTool({ name: 'a.x', exposeAsToool: true, handler: () => 1 });", /tool "a\.x" has an unknown key "exposeAsToool" \(did you mean "exposeAsTool"\?\)/],
    'b.ts': ["defineTool({ name: 'b.x', timeoutMS: 5, handler: () => 1 });", /unknown key "timeoutMS" \(did you mean "timeoutMs"\?\)/],
    'c.ts': ["defineTool({ name: 'c.x', inputschema: { type: 'object' }, handler: () => 1 });", /unknown key "inputschema" \(did you mean "inputSchema"\?\)/],
    'd.ts': ["defineTool({ name: 'd.x', allow: { nett: ['a.test'] }, handler: () => 1 });", /allow\.nett is not a capability kiln knows \(did you mean "net"\?\)/],
    'e.ts': ["defineTool({ name: 'e.x', allow: { commands: { ls: { run: ['ls'], outptu: 'json' } } }, handler: () => 1 });", /unknown key "outptu" \(did you mean "output"\?\)/],
  };
  for (const [file, [source, error]] of Object.entries(cases)) {
    writeFileSync(join(dir, file), source);
    const r = await kiln(['build', join(dir, file), '-o', join(dir, `${file}.wasm`)]);
    assert.equal(r.code, 1, `${file}: ${r.stdout}`);
    assert.match(r.stderr, error, file);
  }
});

test('an inputSchema whose root is not type "object" fails its file at build time, naming the tool', async (t) => {
  const dir = tempDir(t);
  for (const [i, schema] of [`{ type: 'array' }`, `{ type: ['object'] }`, `{ properties: { a: { type: 'string' } } }`, `{ $ref: '#/definitions/x', definitions: { x: { type: 'object' } } }`].entries()) {
    writeFileSync(join(dir, `s${i}.ts`), `defineTool({ name: 's${i}.x', inputSchema: ${schema}, handler: () => 1 });`);
    const r = await kiln(['build', join(dir, `s${i}.ts`), '-o', join(dir, `s${i}.wasm`)]);
    assert.equal(r.code, 1, schema);
    assert.match(r.stderr, new RegExp(`tool "s${i}\\.x": inputSchema must describe an object: its root needs "type": "object"`), schema);
  }
});

test('draft 2020-12 and draft-07 schemas validate, defaults reach the handler, formats are checked, warnings name the tool', async (t) => {
  const dir = tempDir(t);
  write(dir, {
    'z.ts': `
defineTool({ name: 'z.new', exposeAsTool: true, inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object',
  properties: { email: { type: 'string', format: 'email' }, tags: { type: 'array', prefixItems: [{ type: 'string' }], items: false }, size: { type: 'integer', default: 3 } },
  required: ['email'], additionalProperties: false }, handler: ({ args }: any) => args });
defineTool({ name: 'z.old', exposeAsTool: true, inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object',
  properties: { when: { type: 'string', format: 'date' }, mode: { enum: ['a', 'b'], default: 'a' } }, xKilnUnknown: 1 }, handler: ({ args }: any) => args });
`,
  });
  const { client, stderr } = await mcp(t, [join(dir, 'z.ts')]);
  const listed = (await client.listTools()).tools.map((x) => x.name).sort();
  assert.deepEqual(listed.filter((n) => n.startsWith('z.')), ['z.new', 'z.old'], 'the official client accepts the tool list');
  assert.deepEqual((await call(client, 'z.new', { email: 'a@b.test', tags: ['x'] })).json, { email: 'a@b.test', tags: ['x'], size: 3 });
  const badEmail = await call(client, 'z.new', { email: 'not an email' });
  assert.equal(badEmail.isError, true);
  assert.match(badEmail.text, /must match format "email"/);
  const badTuple = await call(client, 'z.new', { email: 'a@b.test', tags: ['x', 'y'] });
  assert.equal(badTuple.isError, true, '2020-12 prefixItems/items: false are honoured');
  assert.deepEqual((await call(client, 'z.old', { when: '2026-11-23' })).json, { when: '2026-11-23', mode: 'a' });
  assert.equal((await call(client, 'z.old', { when: 'yesterday' })).isError, true);
  assert.match(stderr(), /tool "z\.old": inputSchema: .*unknown keyword: "xKilnUnknown"/);
});

test('one bad file never stops the others: every kind of failure is reported for its file and the good one serves', async (t) => {
  const dir = tempDir(t);
  write(dir, {
    'good.ts': "defineTool({ name: 'good.ping', exposeAsTool: true, handler: () => 'pong' });",
    'syntax.ts': "defineTool({ name: 'syntax.x', handler: () => { return 1 ",
    'throws.ts': "throw new Error('top level failed');",
    'missing.ts': "import { nope } from './does-not-exist.js';\ndefineTool({ name: 'missing.x', handler: () => nope });",
    'typo.ts': "defineTool({ name: 'typo.x', exposeAsToool: true, handler: () => 1 });",
    'arrayroot.ts': "defineTool({ name: 'arrayroot.x', exposeAsTool: true, inputSchema: { type: 'array' }, handler: () => 1 });",
    'draft4.ts': "defineTool({ name: 'draft4.x', exposeAsTool: true, inputSchema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, handler: () => 1 });",
    'badschema.ts': "defineTool({ name: 'badschema.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } }, handler: () => 1 });",
    'helper.ts': 'export const helper = 1;',
    'hidden.ts': "defineTool({ name: 'hidden.x', handler: () => 1 });",
  });
  const { client, stderr } = await mcp(t, [dir]);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('good.ping'));
  assert.equal((await call(client, 'good.ping')).json, 'pong');
  for (const n of ['syntax.x', 'missing.x', 'typo.x', 'arrayroot.x', 'draft4.x', 'badschema.x', 'hidden.x']) assert.ok(!names.includes(n), n);
  const log = stderr();
  for (const file of ['syntax.ts', 'throws.ts', 'missing.ts', 'typo.ts', 'arrayroot.ts', 'draft4.ts', 'badschema.ts']) {
    assert.match(log, new RegExp(`not loaded: [^\\n]*${file.replace('.', '\\.')}`), file);
  }
  assert.match(log, /helper\.ts: not served: it registers no tools/);
  assert.match(log, /hidden\.ts: defines 1 tool\(s\) but exposes none over MCP/);
  assert.match(log, /serving 1 tool\(s\) from 2 extension\(s\) over stdio \(and 1 callable only through plugins\[\.\.\.\]\)/);
  assert.doesNotMatch(log, /internal error/);
});

test('a directory is scanned without test files, node_modules, dot-directories and kiln.toml\'s exclude patterns', async (t) => {
  const dir = tempDir(t);
  const tool = (name) => `defineTool({ name: '${name}', exposeAsTool: true, handler: () => '${name}' });`;
  write(dir, {
    'tools/a.ts': tool('a.x'),
    'tools/a.test.ts': tool('atest.x'),
    'tools/b.spec.js': tool('bspec.x'),
    'tools/node_modules/pkg/index.js': tool('nm.x'),
    'tools/.hidden/h.ts': tool('hidden.x'),
    'tools/drafts/d.ts': tool('draft.x'),
    'tools/deep/c.wip.ts': tool('wip.x'),
    'tools/deep/c.ts': tool('c.x'),
    'kiln.toml': 'extensions = ["./tools", "./tools/a.test.ts"]\nexclude = ["drafts/**", "*.wip.ts"]\n',
  });
  const { client } = await mcp(t, ['--config', join(dir, 'kiln.toml')]);
  const names = (await client.listTools()).tools.map((x) => x.name).filter((n) => !n.startsWith('kiln_') && n !== 'run_script').sort();
  assert.deepEqual(names, ['a.x', 'atest.x', 'c.x'], 'a test file named explicitly is loaded; found by scanning, it is not');
  const bad = tempDir(t);
  write(bad, { 'kiln.toml': 'extensions = ["."]\nexclude = "drafts"\n' });
  const r = await kiln(['mcp', '--config', join(bad, 'kiln.toml')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /`exclude` must be a list of glob patterns/);
});

test('kiln build DIR -o OUTDIR builds every extension under DIR at the same relative paths; helpers and tests are skipped', async (t) => {
  const dir = tempDir(t);
  write(dir, {
    'src/a.ts': "import { x } from './lib/util.ts';\ndefineTool({ name: 'a.x', exposeAsTool: true, handler: () => x });",
    'src/lib/util.ts': 'export const x = 42;',
    'src/deep/b.js': "defineTool({ name: 'b.x', exposeAsTool: true, handler: () => 'b' });",
    'src/a.test.ts': "defineTool({ name: 'atest.x', handler: () => 1 });",
    'src/broken.ts': 'defineTool({ name: ',
  });
  const out = join(dir, 'out');
  const r = await kiln(['build', join(dir, 'src'), '-o', out]);
  assert.equal(r.code, 1, 'one input failed');
  assert.match(r.stdout, /out\/a\.wasm/);
  assert.match(r.stdout, /out\/deep\/b\.wasm/);
  assert.doesNotMatch(r.stdout, /a\.test|util\.wasm/);
  assert.match(r.stderr, /util\.ts: not built: it registers no tools/);
  assert.match(r.stderr, /error: .*broken\.ts/);
  const { client } = await mcp(t, [out]);
  assert.equal((await call(client, 'a.x')).json, 42);
  assert.equal((await call(client, 'b.x')).json, 'b');
});

test('built sources are cached on disk by the content of every input: unchanged inputs reuse the build, a changed import or a corrupt entry rebuilds', async (t) => {
  const dir = tempDir(t);
  const cache = join(dir, 'cache');
  write(dir, {
    'ext/a.ts': "import { word } from './words.ts';\ndefineTool({ name: 'a.say', exposeAsTool: true, handler: () => word });",
    'ext/words.ts': "export const word = 'one';",
  });
  const env = { KILN_BUILD_CACHE: cache };
  const say = async () => {
    const { client } = await mcp(t, [join(dir, 'ext')], { env });
    const r = (await call(client, 'a.say')).json;
    await client.close();
    return r;
  };
  assert.equal(await say(), 'one');
  // a.ts's entry is the one whose build read two files (a.ts and words.ts; words.ts has an entry of its own)
  const entry = readdirSync(cache).find((f) => f.endsWith('.json') && JSON.parse(readFileSync(join(cache, f), 'utf8')).inputs.length === 2);
  assert.ok(entry, readdirSync(cache).join(', '));
  const artifact = join(cache, entry.replace(/\.json$/, '.wasm'));
  const first = statSync(artifact).mtimeMs;
  assert.equal(await say(), 'one');
  assert.equal(statSync(artifact).mtimeMs, first, 'the second start used the cached build');
  writeFileSync(join(dir, 'ext/words.ts'), "export const word = 'two';");
  assert.equal(await say(), 'two', 'a changed import is rebuilt, not served stale');
  writeFileSync(artifact, 'corrupt');
  assert.equal(await say(), 'two', 'a corrupt entry is rebuilt, never trusted');
  assert.notEqual(readFileSync(artifact, 'utf8'), 'corrupt');
});
