// Deep recursion ends in a catchable RangeError, whatever the recursion is made of, on Node's main thread
// (`kiln run`) and in a session worker (`kiln mcp`), and the guest goes on afterwards. Each shape is also run
// in this Node process, and the guest must end the same way Node does.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { guestStackLimit, WORKER_STACK_MB } from '../dist/host/engine/stack.js';
import { checkMoreShapes, guestScript, nodeOutcomes, run, SHAPES, splitOutcomes, writeDeepExtension } from './stack-shapes.mjs';
import { call, kiln, mcp, tempDir } from './helpers.mjs';

test('guestStackLimit: a fraction of the native stack, within what the shadow stack holds', () => {
  assert.equal(guestStackLimit(984 * 1024), Math.floor(984 * 1024 * 0.4));
  assert.equal(guestStackLimit(WORKER_STACK_MB * 1024 * 1024), 1792 * 1024);
  assert.equal(guestStackLimit(1024), 64 * 1024);
});

test('kiln run (Node\'s main thread): every deep recursion is a catchable RangeError, as in Node, and shallow ones run', async (t) => {
  const dir = tempDir(t);
  for (const [n, label] of [[100_000, 'deep'], [150, 'shallow']]) {
    const script = join(dir, `${label}.js`);
    writeFileSync(script, guestScript(n));
    const r = await kiln(['run', script]);
    assert.equal(r.code, 0, r.stderr);
    const { compared, more } = splitOutcomes(JSON.parse(r.stdout));
    assert.deepEqual(compared, nodeOutcomes(n), `${label} (${n} levels)`);
    if (n > 1000) assert.ok(Object.values(compared).every((v) => v === 'RangeError'));
    checkMoreShapes(assert, more, n);
  }
});

test('a session worker: deep recursion is a RangeError, and the guest recurses several times deeper than kiln run\'s', async (t) => {
  const dir = tempDir(t);
  const ext = writeDeepExtension(dir);
  const { client } = await mcp(t, [ext]);
  for (const n of [100_000, 150]) {
    const { isError, json, text } = await call(client, 'deep.run', { n });
    assert.equal(isError, false, text);
    const { compared, more } = splitOutcomes(json);
    assert.deepEqual(compared, nodeOutcomes(n), `${n} levels`);
    checkMoreShapes(assert, more, n);
  }
  // Depths Node's main thread reaches and kiln run's guest does not (it shares those 984 KiB with the host);
  // a worker's guest reaches them.
  const deepOk = {
    'JS recursion': 4000, 'String() of nested arrays': 1200, 'JSON.stringify of nested arrays': 3000, 'recursion through Array.prototype.map': 1000,
    'recursion through a sort comparator': 700, 'eval of nested parentheses': 1000, 'eval of an else-if chain': 1000,
  };
  for (const [name, n] of Object.entries(deepOk)) {
    assert.equal(run(SHAPES[name], n), 'ok', `Node: ${name} at ${n}`);
    const { isError, json, text } = await call(client, 'deep.run', { n, only: [name] });
    assert.equal(isError, false, text);
    assert.deepEqual(json, { [name]: 'ok' }, `${name} at ${n}`);
  }
});
