// The bundler as packages meet it (host/build/bundle.ts): JSON imports. Each case is a real `kiln build` and a
// real guest (`kiln run`); the packages are small ones written into a temporary node_modules.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
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
