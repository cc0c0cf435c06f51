// Two engine builds, in different directories, give the same bytes: a clean build in a fresh directory against
// the one the rest of the suite runs on (scripts/setup.sh built it in build/engine, from a clean clone in CI).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { root, tempDir } from './helpers.mjs';

const run = promisify(execFile);

test('the engine build is reproducible: a clean build elsewhere has the same sha256 as the suite\'s engine', { timeout: 600_000 }, async (t) => {
  const a = join(root, 'build/engine'), b = join(tempDir(t), 'elsewhere', 'two');
  await run(process.execPath, [join(root, 'scripts/build-engine.mjs'), '--out', b, '--force'], { cwd: root });
  const info = (dir) => JSON.parse(readFileSync(join(dir, 'engine.json'), 'utf8'));
  assert.equal(info(b).componentSha256, info(a).componentSha256);
  assert.equal(info(b).id, info(a).id);
  assert.deepEqual(readFileSync(join(b, 'engine.wasm')), readFileSync(join(a, 'engine.wasm')));
});
