// The bundler as packages meet it (host/build/bundle.ts): JSON imports, a package's browser or worker build
// preferred, dynamic import() inlined wherever it is in the graph, and a Node builtin that carries authority
// refused with a message that names the importing file, its package and the way out (node-builtins.test.mjs
// has the built-ins that resolve). Each case is a real `kiln build` and a real
// guest (`kiln run`, `kiln mcp`); the packages are small ones written into a temporary node_modules.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { call, kiln, mcp, root, tempDir } from './helpers.mjs';

/** A directory holding `files` ({ relative path: text, or a value written as JSON }). */
function tree(t, files) {
  const dir = tempDir(t);
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), typeof body === 'string' ? body : JSON.stringify(body));
  }
  return dir;
}

/** Build `dir/main` and call its tool `tool` with `args` through `kiln run`; resolves with the result. */
async function buildAndCall(dir, main, tool, args = {}) {
  const b = await kiln(['build', join(dir, main), '-o', join(dir, 'main.wasm')]);
  assert.equal(b.code, 0, b.stderr);
  writeFileSync(join(dir, 'call.js'), `await plugins[${JSON.stringify(tool)}](${JSON.stringify(args)})`);
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'main.wasm')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** No message may carry one of the bundler's internal module ids (NUL-prefixed, with a plugin's query). */
function assertNoInternalIds(text) {
  assert.ok(!text.includes('\0'), `a NUL byte in: ${JSON.stringify(text)}`);
  assert.doesNotMatch(text, /\\u\{0\}|\\0|\\x00|commonjs-(external|proxy|module)|\?commonjs|node-resolve:|\u001b\[/, 'an internal module id or a terminal colour');
}

test('JSON files are imported: default and named imports, require() with and without the extension, in packages', async (t) => {
  const data = { name: 'kiln', list: [1, 2, { deep: true }], text: 'é€😀 "quoted"', 'not-an-identifier': 1 };
  const dir = tree(t, {
    'data.json': data,
    'main.ts': `import data from './data.json';
import { name, list } from './data.json';
import tables from 'cjsjson';
defineTool({ name: 'json.get', handler: () => ({ data, name, list, tables }) });
`,
    'node_modules/cjsjson/package.json': { name: 'cjsjson', version: '1.0.0', main: 'index.js' },
    'node_modules/cjsjson/index.js': "module.exports = { table: require('./table'), v: require('./meta.json').v };\n",
    'node_modules/cjsjson/table.json': [['a', 1], ['b', 2]],
    'node_modules/cjsjson/meta.json': { v: '1.2.3' },
  });
  assert.deepEqual(await buildAndCall(dir, 'main.ts', 'json.get'), {
    data, name: 'kiln', list: data.list, tables: { table: [['a', 1], ['b', 2]], v: '1.2.3' },
  });
});

test('a malformed JSON file fails the build naming the file', async (t) => {
  const dir = tree(t, { 'bad.json': '{"a": 1,, }', 'main.ts': "import d from './bad.json';\ndefineTool({ name: 'bad.json', handler: () => d });\n" });
  const r = await kiln(['build', join(dir, 'main.ts'), '-o', join(dir, 'main.wasm')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /main\.ts: .*bad\.json.*(JSON|Unexpected)/);
  assertNoInternalIds(r.stderr);
});

test('a package\'s browser or worker build is preferred: export conditions, the browser field, its file map', async (t) => {
  const dir = tree(t, {
    'main.ts': `import cond from 'cond';
import worker from 'wk';
import field from 'bfield';
import mapped from 'bmap';
defineTool({ name: 'pick.which', handler: () => ({ cond, worker, field, mapped }) });
`,
    // exports conditions: "node" is never chosen, "browser" is
    'node_modules/cond/package.json': { name: 'cond', version: '1.0.0', exports: { '.': { node: './node.js', browser: './browser.js', default: './default.js' } } },
    'node_modules/cond/node.js': "import fs from 'node:fs';\nexport default 'node:' + typeof fs;\n",
    'node_modules/cond/browser.js': "export default 'browser';\n",
    'node_modules/cond/default.js': "export default 'default';\n",
    // a "worker" build ahead of the Node-flavoured import build
    'node_modules/wk/package.json': { name: 'wk', version: '1.0.0', exports: { '.': { worker: './worker.js', import: './import.js' } } },
    'node_modules/wk/worker.js': "export default 'worker';\n",
    'node_modules/wk/import.js': "import http from 'node:http';\nexport default 'import:' + typeof http;\n",
    // the browser field as the main entry (a CommonJS package whose main needs Node)
    'node_modules/bfield/package.json': { name: 'bfield', version: '1.0.0', main: 'main.js', browser: 'browser.js' },
    'node_modules/bfield/main.js': "module.exports = 'main:' + typeof require('fs').readFileSync;\n",
    'node_modules/bfield/browser.js': "module.exports = 'browser field';\n",
    // the browser field as a map: a Node-only file replaced, a builtin replaced by an empty module
    'node_modules/bmap/package.json': { name: 'bmap', version: '1.0.0', main: 'index.js', browser: { './lib/node.js': './lib/web.js', fs: false } },
    'node_modules/bmap/index.js': "const fs = require('fs');\nmodule.exports = [typeof fs, typeof fs.readFileSync, require('./lib/node.js')];\n",
    'node_modules/bmap/lib/node.js': "module.exports = require('child_process').execSync('id').toString();\n",
    'node_modules/bmap/lib/web.js': "module.exports = 'web';\n",
  });
  assert.deepEqual(await buildAndCall(dir, 'main.ts', 'pick.which'), { cond: 'browser', worker: 'worker', field: 'browser field', mapped: ['object', 'undefined', 'web'] });
});

test('kiln build names each package whose build for browsers it chose, and each that uses document or window', async (t) => {
  const dir = tree(t, {
    'main.ts': `import cond from 'cond';
import full from 'cond/full';
import worker from 'wk';
import field from 'bfield';
import plain from 'plain';
import { make } from 'domy';
import guarded from 'guarded';
import detects from 'detects';
import { used } from 'shaken';
defineTool({ name: 'note.all', handler: () => ({ cond, full, worker, field, plain, guarded: guarded(), detects: detects(), used: used(), dom: typeof make }) });
`,
    'node_modules/cond/package.json': { name: 'cond', version: '1.0.0', exports: { '.': { browser: './browser.js', default: './default.js' }, './full': './default.js' } },
    'node_modules/cond/browser.js': "export default 'browser';\n",
    'node_modules/cond/default.js': "export default 'default';\n",
    'node_modules/wk/package.json': { name: 'wk', version: '2.0.0', exports: { worker: './worker.js', import: './import.js' } },
    'node_modules/wk/worker.js': "export default 'worker';\n",
    'node_modules/wk/import.js': "export default 'import';\n",
    'node_modules/bfield/package.json': { name: 'bfield', version: '3.0.0', main: 'main.js', browser: 'browser.js' },
    'node_modules/bfield/main.js': "module.exports = 'main';\n",
    'node_modules/bfield/browser.js': "module.exports = 'browser field';\n",
    // conditions that do not choose a browser build: no note
    'node_modules/plain/package.json': { name: 'plain', version: '1.0.0', exports: { node: './node.js', default: './index.js' } },
    'node_modules/plain/index.js': "export default 'plain';\n",
    'node_modules/domy/package.json': { name: 'domy', version: '0.3.0', main: 'index.js' },
    'node_modules/domy/index.js': "exports.make = (html) => { const d = document.createElement('div'); d.innerHTML = html; d.dataset.base = window.location.href; return d; };\nexports.base = () => window.location.href;\n",
    // a `typeof window` test and a local named document are no use of the globals
    'node_modules/guarded/package.json': { name: 'guarded', version: '1.0.0', main: 'index.js' },
    'node_modules/guarded/index.js': "const document = { title: 'own' };\nmodule.exports = () => (typeof window === 'undefined' ? document.title : 'browser');\n",
    // feature detection (is-callable's document.all, a typeof-tested branch) is no use either
    'node_modules/detects/package.json': { name: 'detects', version: '1.0.0', main: 'index.js' },
    'node_modules/detects/index.js': "var all = typeof document === 'object' && document.all !== undefined ? document.all : {};\nmodule.exports = () => [typeof all, typeof window === 'undefined' ? 'none' : window.name];\n",
    // what tree-shaking drops says nothing
    'node_modules/shaken/package.json': { name: 'shaken', version: '1.0.0', type: 'module', main: 'index.js', sideEffects: false },
    'node_modules/shaken/index.js': "export const used = () => 'used';\nexport const dropped = () => document.body;\n",
  });
  const b = await kiln(['build', join(dir, 'main.ts'), '-o', join(dir, 'main.wasm')]);
  assert.equal(b.code, 0, b.stderr);
  const notes = b.stderr.split('\n').filter((l) => l.startsWith('note: '));
  const doc = 'docs/extensions.md, "Which build of a package"';
  assert.deepEqual(notes.filter((l) => l.includes('resolved to')), [
    `note: ${join(dir, 'main.ts')}: "bfield" resolved to browser.js, bfield@3.0.0's build for browsers (chosen by the "browser" field), instead of its default entry main.js; a browser build may do less: to use another entry, import it by its subpath (see ${doc})`,
    `note: ${join(dir, 'main.ts')}: "cond" resolved to browser.js, cond@1.0.0's build for browsers (chosen by the "browser" export condition), instead of its default entry default.js; a browser build may do less: to use another entry, import it by its subpath (see ${doc})`,
    `note: ${join(dir, 'main.ts')}: "wk" resolved to worker.js, wk@2.0.0's build for browsers (chosen by the "worker" export condition), instead of its default entry import.js; a browser build may do less: to use another entry, import it by its subpath (see ${doc})`,
  ]);
  const globals = notes.filter((l) => l.includes(' uses '));
  assert.equal(globals.length, 1, b.stderr);
  assert.match(globals[0], /^note: .*main\.ts: domy@0\.3\.0 uses `document` and `window` \(first at node_modules\/domy\/index\.js:1\), which extensions do not have .*linkedom's parseHTML.*docs\/extensions\.md, "Packages that need a browser"/);
  writeFileSync(join(dir, 'call.js'), "await plugins['note.all']({})");
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'main.wasm')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  // the subpath import is the way to the default entry
  assert.deepEqual(JSON.parse(r.stdout), { cond: 'browser', full: 'default', worker: 'worker', field: 'browser field', plain: 'plain', guarded: 'own', detects: ['object', 'none'], used: 'used', dom: 'function' });
});

test('the builder\'s NODE_ENV never changes an artifact: the "production" condition is always the one chosen', async (t) => {
  const dir = tree(t, {
    'main.ts': "import mode from 'envpkg';\ndefineTool({ name: 'env.mode', handler: () => mode });\n",
    'node_modules/envpkg/package.json': { name: 'envpkg', version: '1.0.0', exports: { '.': { development: './dev.js', production: './prod.js', default: './default.js' } } },
    'node_modules/envpkg/dev.js': "export default 'development';\n",
    'node_modules/envpkg/prod.js': "export default 'production';\n",
    'node_modules/envpkg/default.js': "export default 'default';\n",
  });
  const dev = await kiln(['build', join(dir, 'main.ts'), '-o', join(dir, 'dev.wasm')], { env: { NODE_ENV: 'development' } });
  assert.equal(dev.code, 0, dev.stderr);
  assert.equal(await buildAndCall(dir, 'main.ts', 'env.mode'), 'production');
  assert.equal(dev.stdout.split(' ')[0], createHash('sha256').update(readFileSync(join(dir, 'main.wasm'))).digest('hex'));
});

const DYNAMIC = {
  'main.ts': `import { lazy } from 'esmdyn';
import cjs from 'cjsdyn';
const top = await import('./local.ts');
defineTool({
  name: 'dyn.all',
  exposeAsTool: true,
  handler: async () => ({ top: top.v, inner: (await import('./local.ts')).v, lazy: await lazy(), cjs: await cjs(), cycle: (await import('./cycle-a.js')).a }),
});
defineTool({ name: 'dyn.computed', exposeAsTool: true, handler: async ({ args }) => (await import(args.m)).v });
`,
  'local.ts': "export const v: string = 'local';\n",
  'cycle-a.js': "import { b } from './cycle-b.js';\nexport const a = 'a' + b;\n",
  'cycle-b.js': "export const b = 'b';\nexport const back = () => import('./cycle-a.js');\n",
  'node_modules/esmdyn/package.json': { name: 'esmdyn', version: '1.0.0', type: 'module', main: 'index.js', sideEffects: false },
  'node_modules/esmdyn/index.js': "export const lazy = async () => (await import('./part.js')).p;\nexport const unused = () => import('./unused.js');\n",
  'node_modules/esmdyn/part.js': "export const p = 'part';\n",
  'node_modules/esmdyn/unused.js': "export const u = 1;\n",
  'node_modules/cjsdyn/package.json': { name: 'cjsdyn', version: '1.0.0', main: 'index.js' },
  'node_modules/cjsdyn/index.js': "module.exports = () => import('./lazy.mjs').then((m) => m.v);\n",
  'node_modules/cjsdyn/lazy.mjs': "export const v = 'cjs-lazy';\n",
};
const DYNAMIC_RESULT = { top: 'local', inner: 'local', lazy: 'part', cjs: 'cjs-lazy', cycle: 'ab' };

test('dynamic import() anywhere in the graph is inlined: the author\'s files, ESM and CommonJS packages, cycles', async (t) => {
  const dir = tree(t, DYNAMIC);
  assert.deepEqual(await buildAndCall(dir, 'main.ts', 'dyn.all'), DYNAMIC_RESULT);
  // A specifier computed at run time cannot be bundled: the build succeeds, and the call fails with an error.
  writeFileSync(join(dir, 'computed.js'), "await plugins['dyn.computed']({ m: './local.ts' }).then(() => 'loaded', (e) => e.name + ': ' + e.message)");
  const r = await kiln(['run', join(dir, 'computed.js'), join(dir, 'main.wasm')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(JSON.parse(r.stdout), /could not load module/);
});

test('kiln mcp serves a source whose graph has dynamic imports, next to one that fails, without an internal error', async (t) => {
  const dir = tree(t, {
    ...DYNAMIC,
    'builtin.ts': "import { execSync } from 'node:child_process';\ndefineTool({ name: 'bad.exec', exposeAsTool: true, handler: () => String(execSync('id')) });\n",
  });
  const { client, stderr } = await mcp(t, [join(dir, 'main.ts'), join(dir, 'builtin.ts')], { cwd: dir });
  const tools = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(tools.includes('dyn.all') && !tools.includes('bad.exec'), tools.join(','));
  assert.deepEqual((await call(client, 'dyn.all')).json, DYNAMIC_RESULT);
  const audit = await call(client, 'kiln_extensions');
  assert.match(audit.text, /cannot import \\"node:child_process\\" \(imported by builtin\.ts\): it is a Node builtin/);
  assert.doesNotMatch(stderr(), /internal error/);
  assertNoInternalIds(audit.text + stderr());
});

test('a Node builtin fails that file with the importing file, its package and the way out; never an internal id', async (t) => {
  const dir = tree(t, {
    'esm.ts': "import { hash } from 'esmcrypto';\ndefineTool({ name: 'esm.hash', handler: () => hash('x') });\n",
    'cjs.ts': "import read from 'cjsfs';\ndefineTool({ name: 'cjs.read', handler: () => read() });\n",
    'missing.ts': "import x from 'cjsmissing';\ndefineTool({ name: 'cjs.missing', handler: () => x });\n",
    'good.ts': "defineTool({ name: 'good.ok', handler: () => 'ok' });\n",
    'node_modules/esmcrypto/package.json': { name: 'esmcrypto', version: '3.1.4', type: 'module', exports: { '.': { node: './node.js', default: './index.js' } } },
    'node_modules/esmcrypto/index.js': "import { connect } from 'node:tls';\nexport const hash = (s) => connect(s);\n",
    'node_modules/@scope/cjsfs/package.json': { name: '@scope/cjsfs', version: '2.0.0', main: 'lib/index.js' },
    'node_modules/@scope/cjsfs/lib/index.js': "const fs = require('fs');\nmodule.exports = () => fs.readFileSync('/etc/hostname', 'utf8');\n",
    'node_modules/cjsfs/package.json': { name: 'cjsfs', version: '1.0.0', main: 'index.js' },
    'node_modules/cjsfs/index.js': "module.exports = require('@scope/cjsfs');\n",
    'node_modules/cjsmissing/package.json': { name: 'cjsmissing', version: '0.1.0', main: 'index.js' },
    'node_modules/cjsmissing/index.js': "module.exports = require('not-installed-anywhere');\n",
  });
  const out = tempDir(t);
  const r = await kiln(['build', ...['esm.ts', 'cjs.ts', 'missing.ts', 'good.ts'].map((f) => join(dir, f)), '--out-dir', out]);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /[0-9a-f]{64} {2}.*good\.wasm/, 'the good file still built');
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 3, r.stderr);
  const way = (rest) => new RegExp(`it is a Node builtin that extensions do not get \\(.*\\); .* offers no browser build without it \\(kiln prefers one\\): use a package made for browsers; use ${rest} \\(see docs/extensions\\.md, "Node builtins"\\)$`);
  assert.match(lines[0], /esm\.ts: cannot import "node:tls" \(imported by node_modules\/esmcrypto\/index\.js, in package esmcrypto@3\.1\.4\): /);
  assert.match(lines[0], way("fetch or the handler's request, with allow\\.net"));
  assert.match(lines[1], /cjs\.ts: cannot import "fs" \(imported by node_modules\/@scope\/cjsfs\/lib\/index\.js, in package @scope\/cjsfs@2\.0\.0\): /);
  assert.match(lines[1], way("the handler's fs \\(ctx\\.fs, shaped like node:fs/promises\\), with allow\\.fs"));
  assert.match(lines[2], /missing\.ts: cannot import "not-installed-anywhere" \(imported by node_modules\/cjsmissing\/index\.js, in package cjsmissing@0\.1\.0\): it is not a file or an installed package$/);
  assertNoInternalIds(r.stderr);
});

test('several refused builtins: the one with a replacement of its own named every time, the others listed', async (t) => {
  const dir = tree(t, {
    'several.ts': "import get from 'nodeonly';\ndefineTool({ name: 'ev.several', handler: () => get() });\n",
    'node_modules/nodeonly/package.json': { name: 'nodeonly', version: '1.0.0', main: 'index.js' },
    'node_modules/nodeonly/index.js': "const util = require('util');\nconst zlib = require('zlib');\nconst v8 = require('v8');\nconst http = require('http');\nmodule.exports = () => [util, zlib, v8, http].length;\n",
    // two files of a package import the same builtin: the message names the first by path, not whichever
    // rollup happened to resolve first (z.js, loaded first, usually is)
    'twice.ts': "import two from 'twofiles';\ndefineTool({ name: 'ev.twice', handler: () => two });\n",
    'node_modules/twofiles/package.json': { name: 'twofiles', version: '1.0.0', main: 'index.js' },
    'node_modules/twofiles/index.js': "module.exports = [require('./z.js'), require('./a.js')];\n",
    'node_modules/twofiles/z.js': "module.exports = require('http').STATUS_CODES;\n",
    'node_modules/twofiles/a.js': "module.exports = require('http').METHODS;\n",
  });
  const r = await kiln(['build', join(dir, 'several.ts'), join(dir, 'twice.ts'), '--out-dir', tempDir(t)]);
  assert.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[1], /twice\.ts: cannot import "http" \(imported by node_modules\/twofiles\/a\.js, in package twofiles@1\.0\.0\): /);
  // util resolves (a built-in with no authority); of the rest, http has a replacement of its own; the way out
  // said once.
  assert.match(lines[0], /several\.ts: cannot import "http" \(imported by node_modules\/nodeonly\/index\.js, in package nodeonly@1\.0\.0\): .*: use a package made for browsers; use fetch or the handler's request, with allow\.net \(see docs\/extensions\.md, "Node builtins"\); also unresolved: "v8", "zlib"$/);
  assert.equal(lines[0].split('use a package made for browsers').length, 2, 'the way out said once');
});

test('a require() of a builtin inside try/catch (an optional dependency) builds, and the package\'s fallback runs', async (t) => {
  const dir = tree(t, {
    'main.ts': "import which from 'optthreads';\ndefineTool({ name: 'opt.which', handler: () => which });\n",
    'node_modules/optthreads/package.json': { name: 'optthreads', version: '1.0.0', main: 'index.js' },
    'node_modules/optthreads/index.js': "let c;\ntry { c = require('worker_threads'); } catch (e) { c = null; }\nmodule.exports = c ? 'node threads' : 'fallback';\n",
  });
  assert.equal(await buildAndCall(dir, 'main.ts', 'opt.which'), 'fallback');
});

// Pattern modifiers and duplicate named groups are ES2025; Node 20's RegExp lacks both. The bundle keeps each
// literal as written, and the build judges a literal by the specification (host/build/regex-literals.ts). The
// expectations are the specification's; where the builder's Node has the syntax, Node runs the same code too.
const REGEX_CODE = `const date = () => /(?<y>\\d{4})-\\d\\d|\\d\\d-(?<y>\\d{4})/g;
  const a = date(), b = date();
  a.exec('2025-01 07-2026');
  const slash = /(?i:a\\/b)[/]/;
  return [/(?i:a)b/.test('Ab'), /(?i:a)b/.test('AB'), a.lastIndex, b.lastIndex, a !== b, a.exec('2025-01 07-2026').groups.y,
    slash.test('A/b/'), slash.source, /(?-i:a)B/i.test('ab'), /(?<n>x)|(?<n>y)/v.exec('y').groups.n, /(?i:é)/u.flags];`;
const REGEX_RESULT = [true, false, 7, 0, true, '2026', true, '(?i:a\\/b)[/]', true, 'y', 'u'];

test('regex literals newer than the builder\'s Node build and run as written, in .ts, .js and CommonJS packages; a bad literal or syntax error names file:line:col once', async (t) => {
  const dir = tree(t, {
    'node_modules/rxpkg/package.json': { name: 'rxpkg', version: '1.0.0', main: 'index.js' },
    'node_modules/rxpkg/index.js': 'module.exports = (s) => /(?i:x)y/.test(s);\n',
    'rx.ts': `import xy from 'rxpkg';\ndefineTool({ name: 'rx.ts', handler: (): unknown => { ${REGEX_CODE} } });\n` +
      `defineTool({ name: 'rx.pkg', handler: () => [xy('Xy'), xy('XY')] });\n` +
      `defineTool({ name: 'rx.fail', handler: () => { if (/(?i:a)/.test('A')) throw new Error('after'); } });\n`,
    'rx.js': `defineTool({ name: 'rx.js', handler: () => { ${REGEX_CODE} } });\n`,
    'call.js': `const out = [await plugins['rx.ts']({}), await plugins['rx.js']({}), await plugins['rx.pkg']({})];
try { await plugins['rx.fail']({}); } catch (e) { out.push(e.stack); }
out`,
    'badre.js': 'defineTool({ name: "bad.re", handler: () => {\n  return /(?<y>a)(?<y>b)/.test("ab");\n} });\n',
    'badre.ts': 'const n: number = 1;\ndefineTool({ name: "bad.ts", handler: (a: { x: number }, b: string | number = n) => /(?<y>a)(?<y>b)/.test("ab") });\n',
    'syntax.js': 'defineTool({ name: "bad.js", handler: () => {\n  return 1 +;\n} });\n',
    'syntax.ts': 'defineTool({ name: "bad.ts", handler: () => { return 1 +; } });\n',
    // the bundler's parser takes a decorator; the guest's compiler does not: its error, too, names the position once.
    'decorator.js': 'const dec = (c) => c;\n@dec class A {}\ndefineTool({ name: "bad.dec", handler: () => A });\n',
  });
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'rx.ts'), join(dir, 'rx.js')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const [ts, js, pkg, stack] = JSON.parse(r.stdout);
  assert.deepEqual(ts, REGEX_RESULT);
  assert.deepEqual(js, REGEX_RESULT);
  assert.deepEqual(pkg, [true, false]);
  // The literal is put back at its own length: the line's later columns still map to the source.
  const lines = readFileSync(join(dir, 'rx.ts'), 'utf8').split('\n');
  const at = lines.findIndex((l) => l.includes('rx.fail'));
  assert.match(stack, new RegExp(`at handler \\(rx\\.ts:${at + 1}:${lines[at].indexOf("Error('after')") + 1}\\)`), stack);
  let nodeTakes = true;
  try { new RegExp('(?i:a)|(?<n>x)|(?<n>y)'); } catch { nodeTakes = false; }
  if (nodeTakes) assert.deepEqual(new Function(REGEX_CODE)(), REGEX_RESULT, 'Node on the same code');
  else t.diagnostic(`Node ${process.version} lacks pattern modifiers or duplicate named groups: compared with the specification`);
  const files = ['badre.js', 'badre.ts', 'syntax.js', 'syntax.ts', 'decorator.js'];
  const b = await kiln(['build', ...files, '--out-dir', join(dir, 'out')], { cwd: dir });
  assert.equal(b.code, 1);
  const errors = b.stderr.trim().split('\n').filter((l) => l.startsWith('error: '));
  assert.equal(errors.length, files.length, b.stderr);
  assert.doesNotMatch(b.stderr, /^\s+at /m, 'no position repeated as a stack frame');
  for (const [file, expected] of [
    ['badre.js', 'badre.js:2:10: Invalid regular expression: /(?<y>a)(?<y>b)/: Duplicate capture group name'],
    ['badre.ts', 'badre.ts:2:85: Invalid regular expression: /(?<y>a)(?<y>b)/: Duplicate capture group name'],
    ['syntax.js', 'syntax.js:2:13: Unexpected token'],
    ['syntax.ts', 'syntax.ts:1:'],
    ['decorator.js', "decorator.js:2:1: SyntaxError: unexpected token in expression: '@'"],
  ]) {
    const message = errors.find((l) => l.startsWith(`error: ${file}: `)).slice(`error: ${file}: `.length);
    assert.ok(message.startsWith(expected), message);
    assert.equal(message.match(/:\d+:\d+|\(\d+:\d+\)/g).length, 1, `one position: ${message}`);
    assert.doesNotMatch(message, /Error transforming| in \S*\.[jt]s$/, message);
  }
});

test('a package\'s "sideEffects": false is honoured even where it is wrong: lodash-es\'s template then lacks its `_`, as Node does given the same modules', async (t) => {
  const fixture = join(root, 'test/fixtures/lodash-template.js');
  const dir = tempDir(t);
  writeFileSync(join(dir, 'call.js'), "await plugins['lodash.template']({})");
  const r = await kiln(['run', join(dir, 'call.js'), fixture], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const li = '<li>a</li><li>b</li>';
  assert.deepEqual(JSON.parse(r.stdout), { documented: 'TypeError', imports: li });
  // Node fails as the guest does when given only the modules the bundler keeps (first: a module is evaluated
  // once per process, and lodash-es's entry, imported next, makes `_` lodash for every later call)...
  const { default: template } = await import('lodash-es/template.js');
  assert.throws(() => template('<% _.forEach(users, function(u) { %><li><%- u %></li><% }); %>')({ users: ['a'] }), TypeError);
  // ...and succeeds on the fixture: it evaluates every module the entry imports, lodash.default.js among them.
  globalThis.defineTool ??= () => {};
  assert.deepEqual((await import(pathToFileURL(fixture).href)).run(), { documented: li, imports: li });
});

// The bundle is made in passes that name a package's file `kiln-package:<path>`, an author's module a package
// imports `kiln-author:<path>`, and the joined modules `kiln-joined:…` (host/build/bundle.ts): an author who
// writes those names gets nothing the passes did not judge. A file outside the extension, named that way, is refused, and no byte of it reaches the artifact.
test('an import spelled like the bundler\'s own module names reaches no file: kiln-package:, kiln-author: and kiln-joined: are refused', async (t) => {
  const dir = tree(t, {
    'secret/token.txt': 'export default "SECRET-TOKEN-BYTES";\n',
    'app/node_modules/tiny/package.json': { name: 'tiny', version: '1.0.0', type: 'module', main: 'index.js' },
    'app/node_modules/tiny/index.js': 'export const t = 1;\n',
  });
  const app = join(dir, 'app');
  const secret = join(dir, 'secret/token.txt');
  const spellings = [`kiln-package:${secret}`, `kiln-author:${secret}`, `kiln-author:${join(app, 'ok.js')}`, 'kiln-joined:author/../../secret/token.txt', 'kiln-joined:packages/../../secret/token.txt', 'kiln-joined:packages/p0.js'];
  for (const [i, spelling] of spellings.entries()) {
    for (const form of ['static', 'dynamic']) {
      const main = `atk${i}-${form}.js`;
      writeFileSync(join(app, main), `import { t } from 'tiny';\n` + (form === 'static'
        ? `import s from ${JSON.stringify(spelling)};\ndefineTool({ name: 'atk', handler: () => [t, s] });\n`
        : `defineTool({ name: 'atk', handler: async () => [t, await import(${JSON.stringify(spelling)})] });\n`));
      const out = join(app, `${main}.wasm`);
      const r = await kiln(['build', join(app, main), '-o', out]);
      assert.equal(r.code, 1, `${form} ${spelling} built: ${r.stderr}`);
      assert.match(r.stderr, /cannot import/, r.stderr);
      assertNoInternalIds(r.stderr);
      assert.throws(() => readFileSync(out), /ENOENT/, 'no artifact is written');
    }
  }
  // The same package, imported as itself, builds: the refusals above are the spellings', not the package's.
  writeFileSync(join(app, 'ok.js'), "import { t } from 'tiny';\ndefineTool({ name: 'ok', handler: () => t });\n");
  const ok = await kiln(['build', join(app, 'ok.js'), '-o', join(app, 'ok.wasm')]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.ok(!readFileSync(join(app, 'ok.wasm')).includes('SECRET-TOKEN-BYTES'));
});

// rolldown reads a module's id as it is, query included: `./a.js?/../x.txt` resolves to a.js with a query, and
// a directory named `a.js?` makes the whole id a path on the disk that leaves the extension (through `..` or a
// symlink). The id is judged both ways; the same trick in a package (which needs no symlink) too.
test('an import whose query is a path (a directory named `a.js?`) reaches no file outside the extension', async (t) => {
  const dir = tree(t, {
    'secret/token.txt': 'SECRET-TOKEN-BYTES\n',
    'app/ok.js': 'export default 1;\n',
    'app/ok.js?/.keep': '',
    'app/node_modules/pk/package.json': { name: 'pk', version: '1.0.0', type: 'module', main: 'i.js' },
    'app/node_modules/pk/i.js': "export { default } from './i.js?/../../../../secret/token.txt';\n",
    'app/node_modules/pk/i.js?/.keep': '',
  });
  const app = join(dir, 'app');
  symlinkSync(join(dir, 'secret'), join(app, 'ok.js?/out'));
  const cases = {
    'dotdot.js': "import s from './ok.js?/../../secret/token.txt';\n",
    'symlink.js': "import s from './ok.js?/out/token.txt';\n",
    'package.js': "import s from 'pk';\n",
  };
  for (const [main, head] of Object.entries(cases)) {
    writeFileSync(join(app, main), `${head}defineTool({ name: 'atk', handler: () => s });\n`);
    const out = join(app, `${main}.wasm`);
    const r = await kiln(['build', join(app, main), '-o', out]);
    assert.equal(r.code, 1, `${main} built: ${r.stderr}`);
    assert.match(r.stderr, /cannot import .*secret\/token\.txt is outside the extension's directory/, r.stderr);
    assert.ok(!r.stderr.includes('SECRET-TOKEN-BYTES'), r.stderr);
    assert.throws(() => readFileSync(out), /ENOENT/, 'no artifact is written');
  }
});

// A package that imports one of the author's modules back (a cycle) gets that module, not a copy of it: the
// packages' pass leaves the import for the last pass to join, so the module runs once, as in Node. A require()
// of it cannot be joined and fails the build naming both files.
test('a cycle between the author\'s module and a package runs each module once, as Node does', async (t) => {
  const dir = tree(t, {
    'main.mjs': "import { p } from 'cyc';\nexport const a = 'A';\n(globalThis.__runs ??= []).push('main');\n" +
      "globalThis.defineTool?.({ name: 'cyc.run', handler: () => p() });\n",
    'helper.mjs': "(globalThis.__runs ??= []).push('helper');\nexport const h = 'H';\n",
    'node_modules/cyc/package.json': { name: 'cyc', version: '1.0.0', type: 'module', main: 'index.js' },
    'node_modules/cyc/index.js': "import { a } from '../../main.mjs';\nimport * as helper from '../../helper.mjs';\n" +
      "(globalThis.__runs ??= []).push('cyc');\nexport const p = () => [a, helper.h, globalThis.__runs];\n",
    'req.mjs': "import { q } from 'req';\nexport const a = 1;\ndefineTool({ name: 'req.run', handler: () => q });\n",
    'node_modules/req/package.json': { name: 'req', version: '1.0.0', main: 'index.js' },
    'node_modules/req/index.js': "exports.q = () => require('../../req.mjs').a;\n",
  });
  const inNode = (await import(pathToFileURL(join(dir, 'main.mjs')).href)).a && (await import(pathToFileURL(join(dir, 'node_modules/cyc/index.js')).href)).p();
  delete globalThis.__runs;
  assert.deepEqual(inNode, ['A', 'H', ['helper', 'cyc', 'main']]);
  assert.deepEqual(await buildAndCall(dir, 'main.mjs', 'cyc.run'), inNode);
  const r = await kiln(['build', join(dir, 'req.mjs'), '-o', join(dir, 'req.wasm')]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /node_modules\/req\/index\.js: cannot require "\.\.\/\.\.\/req\.mjs": it is the extension's own module req\.mjs/);
  assertNoInternalIds(r.stderr);
});

// rolldown leaves an import of a URL external, which the guest cannot load: the build fails naming it, as for
// any import that resolves to nothing, and fetches nothing.
test('an import of a URL, static or dynamic, fails the build naming it', async (t) => {
  const dir = tree(t, {});
  for (const [i, url] of ['http://127.0.0.1:1/x.js', 'https://example.invalid/x.mjs', '//example.invalid/x.js'].entries()) {
    for (const form of ['static', 'dynamic']) {
      const main = `url${i}-${form}.js`;
      writeFileSync(join(dir, main), form === 'static' ? `import x from ${JSON.stringify(url)};\ndefineTool({ name: 'u', handler: () => x });\n`
        : `defineTool({ name: 'u', handler: async () => (await import(${JSON.stringify(url)})).default });\n`);
      const r = await kiln(['build', join(dir, main), '-o', join(dir, `${main}.wasm`)]);
      assert.equal(r.code, 1, `${form} ${url} built`);
      assert.ok(r.stderr.includes(`cannot import ${JSON.stringify(url)} (imported by ${main}): it is not a file or an installed package`), r.stderr);
    }
  }
});

// The author's pass writes a package's `import()` as `import("kiln-package:…")`; the author's own text that
// reads the same (in a template literal, where quotes stay as written) is text, and stays as it is.
test('an author\'s template literal that reads like the bundler\'s import of a package is left as written', async (t) => {
  const texts = ['see import("kiln-package:/x") here', 'and import("kiln-package:\\q")']; // as written: `\q` is `q`
  const dir = tree(t, {
    'main.js': "import { t } from 'tiny';\n" + `const texts = [${texts.map((x) => `\`${x}\``).join(', ')}];\n` +
      "defineTool({ name: 'text.get', handler: async () => [t, texts, (await import('tiny')).t] });\n",
    'node_modules/tiny/package.json': { name: 'tiny', version: '1.0.0', type: 'module', main: 'index.js' },
    'node_modules/tiny/index.js': 'export const t = 1;\n',
  });
  assert.deepEqual(await buildAndCall(dir, 'main.js', 'text.get'), [1, texts.map((x) => x.replace('\\q', 'q')), 1]);
});

// Node evaluates a module's imports in the order it lists them, packages and the author's own files alike:
// a file that sets a global before the package that reads it as it loads must run first (the passes of
// bundle.ts put rolldown's reordering back).
test('the author\'s modules and the packages they import run in the order Node runs them', async (t) => {
  const dir = tree(t, {
    'node_modules/reads/package.json': { name: 'reads', version: '1.0.0', type: 'module', main: 'index.js' },
    'node_modules/reads/index.js': "export const seen = String(globalThis.__lent);\n(globalThis.__order ??= []).push('reads');\n",
    'node_modules/cjsreads/package.json': { name: 'cjsreads', version: '1.0.0', main: 'index.js' },
    'node_modules/cjsreads/index.js': "(globalThis.__order ??= []).push('cjsreads');\nmodule.exports = String(globalThis.__lent);\n",
    'lend.mjs': "(globalThis.__order ??= []).push('lend');\nglobalThis.__lent = 'lent';\n",
    'take.mjs': "(globalThis.__order ??= []).push('take');\ndelete globalThis.__lent;\n",
    'main.mjs': "import './lend.mjs';\nimport { seen } from 'reads';\nimport cjs from 'cjsreads';\nimport './take.mjs';\n" +
      "const order = globalThis.__order;\ndefineTool({ name: 'order.run', handler: () => ({ seen, cjs, order, after: typeof globalThis.__lent }) });\n",
  });
  const expected = { seen: 'lent', cjs: 'lent', order: ['lend', 'reads', 'cjsreads', 'take'], after: 'undefined' };
  assert.deepEqual(await buildAndCall(dir, 'main.mjs', 'order.run'), expected);
  // Node, on the same files, in a process of its own.
  const node = execFileSync(process.execPath, ['--input-type=module', '-e',
    `globalThis.defineTool = (d) => { globalThis.__tool = d; }; await import(${JSON.stringify(pathToFileURL(join(dir, 'main.mjs')).href)});
console.log(JSON.stringify(await globalThis.__tool.handler({})));`], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(node), expected, 'Node on the same files');
});
