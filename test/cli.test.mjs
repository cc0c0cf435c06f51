// The command line: help for every subcommand, documented exit codes, --version.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, kiln, mcp, root, tempDir } from './helpers.mjs';

test('every subcommand has --help (exit 0), and the overview documents the exit codes', async () => {
  for (const cmd of ['build', 'inspect', 'run', 'mcp']) {
    for (const flag of ['--help', '-h']) {
      const r = await kiln([cmd, flag]);
      assert.equal(r.code, 0, `${cmd} ${flag}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage:\\n  kiln ${cmd} `), `${cmd} ${flag}`);
    }
  }
  const overview = await kiln(['--help']);
  assert.equal(overview.code, 0);
  assert.match(overview.stdout, /exit codes: 0 success; 1 .*; 2 a usage error/);
});

test('a usage error exits 2 with the reason; --version prints the version', async () => {
  const bogus = await kiln(['mcp', '--bogus']);
  assert.equal(bogus.code, 2);
  assert.match(bogus.stderr, /^kiln: Unknown option '--bogus'/);
  assert.equal((await kiln(['nonsense'])).code, 2);
  const v = await kiln(['--version']);
  assert.equal(v.code, 0);
  assert.equal(v.stdout.trim(), JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
  // A script that is not there is the user's error (1, the reason), not an internal one (70, a stack).
  const missing = await kiln(['run', join(root, 'no-such-script.js')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^kiln: kiln run: cannot read .*no-such-script\.js: no such file\n$/);
});

test('kiln run checks arguments exactly as the server does, with a validator compiled once and then read from the cache', async (t) => {
  const dir = tempDir(t);
  // A schema no other test uses, so the first run here compiles it.
  const marker = `m${process.pid}${Date.now()}`;
  writeFileSync(join(dir, 'v.ts'), `defineTool({ name: 'v.go', exposeAsTool: true, inputSchema: { type: 'object', properties: { ${marker}: { type: 'integer', minimum: 3 } }, required: ['${marker}'], additionalProperties: false }, handler: ({ args }: any) => args.${marker} * 2 });`);
  writeFileSync(join(dir, 'bad.js'), `await plugins['v.go']({ ${marker}: 1, extra: true })`);
  writeFileSync(join(dir, 'good.js'), `await plugins['v.go']({ ${marker}: 4 })`);
  const { client } = await mcp(t, [join(dir, 'v.ts')]);
  const server = await call(client, 'v.go', { [marker]: 1, extra: true });
  assert.equal(server.isError, true);
  const cacheDir = join(root, 'build/cache/validators');
  const cached = () => (existsSync(cacheDir) ? readdirSync(cacheDir).filter((f) => readFileSync(join(cacheDir, f), 'utf8').includes(marker)).length : 0);
  assert.equal(cached(), 0, 'not compiled before');
  for (const round of ['miss', 'hit']) {
    const bad = await kiln(['run', join(dir, 'bad.js'), join(dir, 'v.ts')]);
    assert.equal(bad.code, 1, round);
    assert.equal(bad.stderr.trim().split('\n')[0], `error: ${server.text.split('\n')[0]}`, `${round}: the same message as the server's`);
    assert.equal(cached(), 1, `${round}: one compiled validator for the schema`);
  }
  const good = await kiln(['run', join(dir, 'good.js'), join(dir, 'v.ts')]);
  assert.equal(good.stdout.trim(), '8', good.stderr);
});

test('kiln run accepts a schema that refers to another tool\'s $id, as the server does', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'r.ts'), `defineTool({ name: 'r.base', inputSchema: { $id: 'urn:kiln-test:point', type: 'object', properties: { x: { type: 'number' } }, required: ['x'] }, handler: () => 1 });
defineTool({ name: 'r.use', inputSchema: { type: 'object', properties: { p: { $ref: 'urn:kiln-test:point' } }, required: ['p'] }, handler: ({ args }: any) => args.p.x + 1 });`);
  writeFileSync(join(dir, 'ok.js'), "await plugins['r.use']({ p: { x: 41 } })");
  writeFileSync(join(dir, 'bad.js'), "await plugins['r.use']({ p: { x: 'no' } })");
  const ok = await kiln(['run', join(dir, 'ok.js'), join(dir, 'r.ts')]);
  assert.equal(ok.stdout.trim(), '42', ok.stderr);
  const bad = await kiln(['run', join(dir, 'bad.js'), join(dir, 'r.ts')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /InvalidArgumentsError: arguments for "r.use" do not match its inputSchema: args\/p\/x must be number/);
});

test('kiln run validates a schema with pattern on the validation thread (the bundled CLI starts it) and fills in defaults', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'p.ts'), `defineTool({ name: 'p.go', inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { code: { type: 'string', pattern: '^[a-z]+$' }, n: { type: 'integer', default: 7 } }, required: ['code'] }, handler: ({ args }: any) => args });`);
  writeFileSync(join(dir, 'ok.js'), "await plugins['p.go']({ code: 'abc' })");
  writeFileSync(join(dir, 'bad.js'), "await plugins['p.go']({ code: 'ABC' })");
  const ok = await kiln(['run', join(dir, 'ok.js'), join(dir, 'p.ts')]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { code: 'abc', n: 7 }, 'the default reached the handler');
  const bad = await kiln(['run', join(dir, 'bad.js'), join(dir, 'p.ts')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /InvalidArgumentsError: arguments for "p\.go" do not match its inputSchema: args\/code must match pattern/);
});

test('an error thrown by a tool reaches a calling script with its own name and message (a plain Error too)', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'e.ts'), "defineTool({ name: 'e.plain', handler: () => { throw new Error('boom'); } });\ndefineTool({ name: 'e.type', handler: () => { throw new TypeError('tboom'); } });\n" +
    "class NotFound extends Error { name = 'NotFound'; }\ndefineTool({ name: 'e.custom', handler: () => { throw new NotFound('no such thing: x'); } });\n" +
    "defineTool({ name: 'e.colon', handler: () => { throw new Error('Config: missing key'); } });");
  writeFileSync(join(dir, 'e.js'), "const out = []; for (const n of ['e.plain', 'e.type', 'e.custom', 'e.colon']) { try { await plugins[n]() } catch (e) { out.push([e.name, e.message]) } } out");
  const r = await kiln(['run', join(dir, 'e.js'), join(dir, 'e.ts')]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [['Error', 'boom'], ['TypeError', 'tboom'], ['NotFound', 'no such thing: x'], ['Error', 'Config: missing key']]);
  assert.doesNotMatch(r.stderr, /exposes none over MCP/, 'a script calls every tool: kiln run says nothing of what MCP clients would see');
});

test('a handler that returns or throws a value whose reading throws (a revoked Proxy, throwing traps) fails at once with an error, and the guest goes on', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'p.js'), `const revoked = () => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; };
const evil = () => new Proxy({}, { get() { throw evil(); }, getPrototypeOf() { throw evil(); }, has() { throw evil(); } });
defineTool({ name: 'p.revoked', handler: () => revoked() });
defineTool({ name: 'p.throwEvil', handler: () => { throw evil(); } });
defineTool({ name: 'p.rejectEvil', handler: async () => { throw evil(); } });
defineTool({ name: 'p.toJsonEvil', handler: () => ({ toJSON() { throw evil(); } }) });
defineTool({ name: 'p.fine', handler: () => 'fine' });
`);
  writeFileSync(join(dir, 's.js'), `const out = [];
for (const n of ['p.revoked', 'p.throwEvil', 'p.rejectEvil', 'p.toJsonEvil', 'p.fine']) {
  try { out.push(await plugins[n]()); } catch (e) { out.push(e.name + ': ' + e.message); }
}
out`);
  const r = await kiln(['run', '--timeout-ms', '30000', join(dir, 's.js'), join(dir, 'p.js')]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.length, 5);
  for (const line of out.slice(0, 4)) {
    assert.doesNotMatch(line, /time limit|reset|discarded/i, 'answered at once, not stopped at its deadline');
    assert.match(line, /Error/);
  }
  assert.equal(out[4], 'fine', 'the same guest answers the next call');
});
