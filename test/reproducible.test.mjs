// Two clean engine builds, in different directories, give the same bytes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { root, tempDir } from './helpers.mjs';

const run = promisify(execFile);

test('the engine build is reproducible: two clean builds have the same sha256', { timeout: 600_000 }, async (t) => {
  const a = join(tempDir(t), 'one'), b = join(tempDir(t), 'elsewhere', 'two');
  for (const out of [a, b]) await run(process.execPath, [join(root, 'scripts/build-engine.mjs'), '--out', out, '--force'], { cwd: root });
  const info = (dir) => JSON.parse(readFileSync(join(dir, 'engine.json'), 'utf8'));
  assert.equal(info(a).componentSha256, info(b).componentSha256);
  assert.equal(info(a).id, info(b).id);
  assert.deepEqual(readFileSync(join(a, 'engine.wasm')), readFileSync(join(b, 'engine.wasm')));
  // and the same as the engine the rest of the suite runs on
  assert.equal(info(a).id, info(join(root, 'build/engine')).id);
});
