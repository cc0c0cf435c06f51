// types/kiln.d.ts describes the guest's globals: the examples type-check against it, and misuse does not.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { kiln, root, tempDir } from './helpers.mjs';

const tsc = join(root, 'node_modules/typescript/bin/tsc');
const run = (args) => promisify(execFile)(process.execPath, [tsc, ...args], { cwd: root }).then(() => ({ code: 0, out: '' }), (e) => ({ code: e.code, out: e.stdout }));

test('the example extensions type-check against types/kiln.d.ts', async () => {
  const r = await run(['-p', 'extensions/tsconfig.json']);
  assert.equal(r.code, 0, r.out);
});

test('misusing the extension API is a type error', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'bad.ts'), [
    "defineTool({ description: 'no name', handler: () => 1 });",
    "defineTool({ name: 'x', allow: { net: 'api.box.com' }, handler: () => 1 });",
    "defineTool({ name: 'y', handler: async ({ commands }) => commands.run('a', { v: { nested: true } }) });",
    "vars.set('k', 42);",
  ].join('\n'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['bad.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.notEqual(r.code, 0);
  for (const line of [1, 2, 3, 4]) assert.match(r.out, new RegExp(`bad\\.ts\\(${line},`), `line ${line} should be an error:\n${r.out}`);
});

test('the preset types/tsconfig.json declares exactly the globals a guest has', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'names.js'), 'Object.getOwnPropertyNames(globalThis)');
  const listed = await kiln(['run', join(dir, 'names.js')]);
  assert.equal(listed.code, 0, listed.stderr);
  const guest = JSON.parse(listed.stdout);
  assert.ok(guest.includes('fetch') && guest.includes('defineTool') && guest.includes('structuredClone'));
  // every global of the guest is known to the preset...
  writeFileSync(join(dir, 'uses.ts'), guest.map((n) => `void typeof ${n};`).join('\n') + '\n');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['uses.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.equal(r.code, 0, `globals of the guest the types do not declare:\n${r.out}`);
  // ...and every value the types declare exists in the guest
  const declared = ['kiln.d.ts', 'web.d.ts'].flatMap((f) =>
    [...readFileSync(join(root, 'types', f), 'utf8').matchAll(/^ {2}(?:var|const|function|class) (\w+)/gm)].map((m) => m[1]));
  assert.ok(declared.length > 40, `only ${declared.length} declarations found`);
  assert.deepEqual([...new Set(declared.filter((n) => !guest.includes(n)))], [], 'declared but missing in a guest');
});

test('DOM-only and Node-only globals do not type-check under the preset (they do not exist in a guest)', async (t) => {
  const dir = tempDir(t);
  const lines = ["document.title = 'x';", "Buffer.from('x');", "require('fs');", "localStorage.getItem('a');", 'window.alert(1);', "new XMLHttpRequest();"];
  writeFileSync(join(dir, 'dom.ts'), lines.join('\n') + '\n');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['dom.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  for (let i = 1; i <= lines.length; i++) assert.match(r.out, new RegExp(`dom\\.ts\\(${i},`), `line ${i} should be an error:\n${r.out}`);
});
