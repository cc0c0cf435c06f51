// Attacks on the build: a source extension reading host files through its imports (absolute paths, `../`,
// symlinks, a package pointing out of node_modules), code nested deep enough to crash a parser, and a top
// level that never ends. The file fails alone, the secret never appears anywhere, and the next build works.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, kiln, tempDir } from '../helpers.mjs';
import { attack, serve, sources } from './harness.mjs';

const SECRET = 'kiln-secret-9f2c41';
const GOOD = `defineTool({ name: 'good.ping', exposeAsTool: true, handler: () => 'pong' });`;

/** A secret outside the extension's directory: dir/secret/s.ts, with the extension in dir/ext/. */
function layout(t) {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'secret'));
  mkdirSync(join(dir, 'ext'));
  writeFileSync(join(dir, 'secret/s.ts'), `export const s = '${SECRET}';\n`);
  writeFileSync(join(dir, 'secret/s.json'), `{"s": "${SECRET}"}`);
  writeFileSync(join(dir, 'ext/good.ts'), GOOD);
  return dir;
}

const leak = (imp) => `import { s } from ${JSON.stringify(imp)};\ndefineTool({ name: 'leak.get', exposeAsTool: true, handler: () => s });\n`;

/** Serve ext/ (the attacking file and a good one); the attack fails alone and the secret is nowhere. */
async function contained(t, dir) {
  const { client, stderr } = await serve(t, [join(dir, 'ext')]);
  const tools = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(!tools.includes('leak.get'), 'the attacking file was loaded');
  assert.equal((await call(client, 'good.ping')).json, 'pong');
  const r = await call(client, 'leak.get');
  const audit = await call(client, 'kiln_extensions');
  assert.match(audit.text, /outside the extension's directory/);
  for (const text of [r.text, audit.text, stderr()]) assert.ok(!text.includes(SECRET), 'the secret leaked');
}

attack('bundle-absolute-import', 'import "/abs/secret.ts" from a source extension', async (t) => {
  const dir = layout(t);
  writeFileSync(join(dir, 'ext/leak.ts'), leak(join(dir, 'secret/s.ts')));
  await contained(t, dir);
});

attack('bundle-parent-import', 'import "../secret/s.ts"', async (t) => {
  const dir = layout(t);
  writeFileSync(join(dir, 'ext/leak.ts'), leak('../secret/s.ts'));
  await contained(t, dir);
});

attack('bundle-file-url-import', 'import "file:///…/secret.ts"', async (t) => {
  const dir = layout(t);
  writeFileSync(join(dir, 'ext/leak.ts'), leak(`file://${join(dir, 'secret/s.ts')}`));
  const { client } = await serve(t, [join(dir, 'ext')]);
  assert.ok(!(await client.listTools()).tools.some((x) => x.name === 'leak.get'));
  assert.ok(!(await call(client, 'kiln_extensions')).text.includes(SECRET));
});

attack('bundle-symlinked-file', 'a symlink inside the extension directory to a file outside it', async (t) => {
  const dir = layout(t);
  symlinkSync(join(dir, 'secret/s.ts'), join(dir, 'ext/link.ts'));
  writeFileSync(join(dir, 'ext/leak.ts'), leak('./link.ts'));
  await contained(t, dir);
});

attack('bundle-symlinked-dir', 'a symlinked directory inside the extension directory', async (t) => {
  const dir = layout(t);
  symlinkSync(join(dir, 'secret'), join(dir, 'ext/lib'));
  writeFileSync(join(dir, 'ext/leak.ts'), leak('./lib/s.ts'));
  await contained(t, dir);
});

attack('bundle-node-modules-symlink-out', 'a package in node_modules that is a symlink to a directory outside', async (t) => {
  const dir = layout(t);
  mkdirSync(join(dir, 'ext/node_modules'));
  writeFileSync(join(dir, 'secret/package.json'), JSON.stringify({ name: 'evil', main: 's.ts' }));
  symlinkSync(join(dir, 'secret'), join(dir, 'ext/node_modules/evil'));
  writeFileSync(join(dir, 'ext/leak.ts'), leak('evil'));
  await contained(t, dir);
});

attack('bundle-package-main-escapes', 'a package whose "main" points out of node_modules', async (t) => {
  const dir = layout(t);
  mkdirSync(join(dir, 'ext/node_modules/evil'), { recursive: true });
  writeFileSync(join(dir, 'ext/node_modules/evil/package.json'), JSON.stringify({ name: 'evil', main: '../../../secret/s.ts' }));
  writeFileSync(join(dir, 'ext/leak.ts'), leak('evil'));
  await contained(t, dir);
});

attack('bundle-json-import-outside', 'importing a JSON file outside the directory (with a query string)', async (t) => {
  const dir = layout(t);
  writeFileSync(join(dir, 'ext/leak.ts'), `import data from '../secret/s.json?raw';\ndefineTool({ name: 'leak.get', exposeAsTool: true, handler: () => data });\n`);
  const { client, stderr } = await serve(t, [join(dir, 'ext')]);
  assert.ok(!(await client.listTools()).tools.some((x) => x.name === 'leak.get'));
  assert.equal((await call(client, 'good.ping')).json, 'pong');
  assert.ok(!stderr().includes(SECRET) && !(await call(client, 'kiln_extensions')).text.includes(SECRET));
});

attack('bundle-build-cli', '`kiln build` of a file importing ../secret fails with a message naming the import', async (t) => {
  const dir = layout(t);
  writeFileSync(join(dir, 'ext/leak.ts'), leak('../secret/s.ts'));
  const out = join(tempDir(t), 'leak.wasm');
  const r = await kiln(['build', join(dir, 'ext/leak.ts'), '-o', out]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /leak\.ts: cannot import "[^"]*secret\/s\.ts": .*secret\/s\.ts is outside the extension's directory/);
  assert.ok(!r.stderr.includes(SECRET) && !r.stdout.includes(SECRET));
});

const nested = (n) => `defineTool({ name: 'deep.x', exposeAsTool: true, handler: () => ${'('.repeat(n)}1${')'.repeat(n)} });\n`;

attack('bundle-deep-nesting-source', 'a source nesting 5000 parentheses fails alone; the next file still builds', async (t) => {
  const dir = sources(t, { 'a-deep.ts': nested(5000), 'b-good.ts': GOOD });
  const { client } = await serve(t, [dir]);
  const audit = (await call(client, 'kiln_extensions')).json;
  assert.ok(audit.failures.some((f) => /a-deep\.ts/.test(f.file) && /nests brackets \d+ levels deep; kiln accepts at most 256/.test(f.error)), JSON.stringify(audit.failures));
  assert.equal((await call(client, 'good.ping')).json, 'pong');
});

// No bracket, yet a parser's recursion per level: a few thousand prefix operators, arrows, ternaries, `||`s or
// `else if`s overflow the bundler's native parser, which ends the process (a SIGSEGV no worker contains).
const chained = (expr) => `defineTool({ name: 'deep.x', exposeAsTool: true, handler: () => 1 });\nexport const v = ${expr};\n`;
attack('bundle-deep-chain-source', 'sources chaining 20000 operators, arrows or else-ifs without brackets fail alone; the server lives', async (t) => {
  const n = 20000;
  const dir = sources(t, {
    'a-not.ts': chained(`${'!'.repeat(n)}1`),
    'a-minus.ts': chained(`${'- '.repeat(n)}1`),
    'a-arrow.ts': chained(`${'a=>'.repeat(n)}1`),
    'a-or.ts': chained(Array(n).fill('v').join('||')),
    'a-else.ts': `var x = 1;\n${'if (x) x; else '.repeat(n)}x;\n` + chained('1'),
    'b-good.ts': GOOD,
  });
  const { client } = await serve(t, [dir]);
  const audit = (await call(client, 'kiln_extensions')).json;
  for (const f of ['a-not', 'a-minus', 'a-arrow', 'a-or', 'a-else']) {
    assert.ok(audit.failures.some((x) => x.file.includes(`${f}.ts`) && /chains \d+ operators and brackets in one expression; kiln accepts at most 1024/.test(x.error)), `${f}: ${JSON.stringify(audit.failures)}`);
  }
  assert.equal((await call(client, 'good.ping')).json, 'pong');
});

for (const [id, code] of [['parens', `${'('.repeat(700)}1${')'.repeat(700)}`], ['arrays', `${'['.repeat(2000)}${']'.repeat(2000)}`],
  ['objects', `${'{a:'.repeat(1500)}1${'}'.repeat(1500)}`], ['unary', `${'!'.repeat(100000)}1`], ['ternary', `${'1?'.repeat(3000)}1${':1'.repeat(3000)}`]]) {
  attack(`bundle-deep-script-${id}`, `run_script with deeply nested ${id} leaves the shared compiler working`, async (t) => {
    const { client } = await serve(t, [sources(t, { 'g.ts': GOOD })]);
    const r = await call(client, 'run_script', { code });
    assert.equal(r.json.status, 'error');
    const next = await call(client, 'run_script', { code: '6 * 7' });
    assert.equal(next.json.status, 'ok', JSON.stringify(next.json));
    assert.equal(next.json.result, 42);
  });
}

attack('bundle-toplevel-loop', 'a top-level infinite loop fails alone within [limits] timeoutMs', async (t) => {
  const dir = sources(t, { 'a-loop.ts': `const g = globalThis as any; for (;;) g.n = (g.n ?? 0) + 1;\n${GOOD.replace('good.ping', 'loop.never')}`, 'b-good.ts': GOOD });
  const { client } = await serve(t, [dir], { toml: '[limits]\ntimeoutMs = 1000\n' });
  assert.equal((await call(client, 'good.ping')).json, 'pong');
  const audit = (await call(client, 'kiln_extensions')).json;
  assert.ok(audit.failures.some((f) => /a-loop\.ts/.test(f.file) && /top level did not finish within 1000 ms/.test(f.error)), JSON.stringify(audit.failures));
});

// A package's browser build is preferred (bundle.ts): the browser field, as an entry point or as a file map,
// is one more way to name a file, and is held to the same containment as `main`.
attack('bundle-browser-field-escapes', 'a package whose "browser" entry points out of node_modules', async (t) => {
  const dir = layout(t);
  mkdirSync(join(dir, 'ext/node_modules/evil'), { recursive: true });
  writeFileSync(join(dir, 'ext/node_modules/evil/package.json'), JSON.stringify({ name: 'evil', main: 'index.js', browser: '../../../secret/s.ts' }));
  writeFileSync(join(dir, 'ext/node_modules/evil/index.js'), "export const s = 'harmless';\n");
  writeFileSync(join(dir, 'ext/leak.ts'), leak('evil'));
  await contained(t, dir);
});

attack('bundle-browser-map-escapes', 'a package whose "browser" map swaps its own file for one outside', async (t) => {
  const dir = layout(t);
  mkdirSync(join(dir, 'ext/node_modules/evil'), { recursive: true });
  writeFileSync(join(dir, 'ext/node_modules/evil/package.json'), JSON.stringify({ name: 'evil', main: 'index.js', browser: { './lib.js': '../../../secret/s.ts' } }));
  writeFileSync(join(dir, 'ext/node_modules/evil/index.js'), "export { s } from './lib.js';\n");
  writeFileSync(join(dir, 'ext/node_modules/evil/lib.js'), "export const s = 'harmless';\n");
  writeFileSync(join(dir, 'ext/leak.ts'), leak('evil'));
  await contained(t, dir);
});
