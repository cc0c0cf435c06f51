// Unit tests of host/untrusted/guest-log.ts: a guest's log lines keep the order they were logged in while some
// wait for the source map; bundle positions are mapped, kiln's prelude frames dropped; a failing or missing
// map leaves the line as it was; a line that needs nothing is not held up when nothing waits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { mappedLog } from '../../../dist/host/untrusted/guest-log.js';

const mapper = (delay = 0) => async () => {
  await new Promise((r) => setTimeout(r, delay));
  return { rewrite: (s) => s.replace(/bundle:ext:(\d+):(\d+)/g, 'src/a.ts:$1:$2') };
};
/** Wait, a bounded number of timer turns, until `done()` (the map's promise chain settles in a few). */
async function until(done) {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 2));
}

test('positions mapped, prelude frames dropped, and a plain line passes at once when nothing waits', async () => {
  const out = [];
  const emit = mappedLog(mapper(), (level, m) => out.push([level, m]));
  emit('info', 'plain');
  assert.deepEqual(out, [['info', 'plain']], 'synchronously');
  emit('error', 'Error: x\n    at f (bundle:ext:3:7)\n    at call (<null>:0:1)\n    at g (bundle:ext:9:1)');
  await until(() => out.length === 2);
  assert.deepEqual(out[1], ['error', 'Error: x\n    at f (src/a.ts:3:7)\n    at g (src/a.ts:9:1)']);
});

test('a map that cannot be loaded, or none, leaves positions as they are', async () => {
  for (const m of [async () => { throw new Error('bad map'); }, async () => undefined]) {
    const out = [];
    mappedLog(m, (_l, t) => out.push(t))('error', 'at f (bundle:ext:1:1)');
    await until(() => out.length === 1);
    assert.deepEqual(out, ['at f (bundle:ext:1:1)']);
  }
});

test('lines stay in the order logged, whichever wait for the map (property)', async () => {
  await fc.assert(fc.asyncProperty(fc.array(fc.constantFrom('plain', 'at f (bundle:ext:1:2)', 'x\n    at p (<null>:0:1)'), { maxLength: 12 }), async (lines) => {
    const out = [];
    const emit = mappedLog(mapper(1), (_l, t) => out.push(t));
    lines.forEach((l, i) => emit('info', `${i} ${l}`));
    await until(() => out.length >= lines.length);
    assert.deepEqual(out.map((t) => Number(t.split(' ')[0])), lines.map((_, i) => i));
  }), { numRuns: 40 });
});
