// types/kiln.d.ts describes the guest's globals: the examples type-check against it, and misuse does not.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { root, tempDir } from './helpers.mjs';

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
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'ES2020', lib: ['ES2020', 'DOM'], types: [], skipLibCheck: true },
    include: ['bad.ts', join(root, 'types/kiln.d.ts')],
  }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.notEqual(r.code, 0);
  for (const line of [1, 2, 3, 4]) assert.match(r.out, new RegExp(`bad\\.ts\\(${line},`), `line ${line} should be an error:\n${r.out}`);
});
