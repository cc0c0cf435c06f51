// The bundler as packages meet it (host/build/bundle.ts): JSON imports, and a package's browser or worker
// build preferred. Each case is a real `kiln build` and a real guest (`kiln run`); the packages are small ones
// written into a temporary node_modules.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { kiln, tempDir } from './helpers.mjs';

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
