// The V8 lane of the backend matrix: the suites that exercise the engine itself (semantics, limits, stack
// depth, the WIT fuzzer, the hostile campaigns) run again with KILN_ENGINE=v8, in child test runs whose every
// process inherits it. The rest of the suite runs on the default backend only (docs/architecture.md, "Engine
// backends"); `npm run test:v8` runs all of it on V8.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ADDON_FILE } from '../dist/host/engine/wasmtime.js';
import { root } from './helpers.mjs';

/** The suites run on V8 here. */
export const V8_LANE = ['engine', 'limits', 'stack-depth', 'language', 'fuzz', 'hostile'].map((n) => `test/${n}.test.mjs`);

const skip = process.env.KILN_ENGINE === 'v8' ? 'the whole suite runs on V8 already'
  : !existsSync(join(root, 'build/engine', ADDON_FILE)) ? 'no wasmtime addon: the whole suite runs on V8 already' : false;

test('the engine, limits, stack, language, fuzz and hostile suites pass on the V8 backend too', { skip, timeout: 40 * 60_000 }, async (t) => {
  const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', ...V8_LANE], {
    // Without NODE_TEST_CONTEXT: with it, a nested runner reports to this one instead of running its files.
    cwd: root, env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')), KILN_ENGINE: 'v8' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  let code;
  try {
    code = await new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  const count = (k) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(out)?.[1] ?? NaN);
  const failed = [...out.matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((m) => m[1]);
  assert.equal(code, 0, `on V8: ${failed.join('; ')}\n${out.slice(-4000)}`);
  assert.ok(count('pass') >= V8_LANE.length, `the V8 lane ran its tests (${count('pass')} passed)`);
  assert.equal(count('fail'), 0);
  t.diagnostic(`${count('pass')} tests passed on V8`);
});
