// Snapshots of loads (host/engine/snapshots.ts): on wasmtime, a new instance of an extension whose top level
// called no host starts from the memory an earlier load of it left, and must be indistinguishable from one
// that ran the top level itself, except in time. Each test makes the instances itself and checks both that
// the snapshot was used (or refused) and what the guest then sees.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArtifact } from '../dist/host/extensions/artifact.js';
import { Builder } from '../dist/host/build/artifact.js';
import { Engine } from '../dist/host/engine/engine.js';
import { GuestInstance } from '../dist/host/engine/instance.js';
import { snapshotStats } from '../dist/host/engine/snapshots.js';
import { MemoryLimitError } from '../dist/host/errors.js';
import { tempDir } from './helpers.mjs';

const engine = await Engine.load();
const skip = engine.backend !== 'wasmtime' && 'snapshots of loads are a wasmtime feature (no addon here)';

/** The artifact of `source`, and a function making a loaded instance of it with `config`. */
async function extension(t, source) {
  const dir = tempDir(t);
  const file = join(dir, 'x.js');
  writeFileSync(file, source);
  const artifact = await openArtifact(file, (await new Builder(engine).build(file)).bytes, engine);
  const logs = [];
  const instances = [];
  t.after(() => { for (const g of instances) g.dispose(); });
  const make = async (config = {}) => {
    const g = await GuestInstance.create(engine, artifact.image, {
      op: async () => { throw new Error('no operations in this test'); },
      vars: { get: () => undefined, set() {}, delete: () => false, keys: () => [] },
      log: (level, message) => logs.push(message),
    });
    instances.push(g);
    const manifest = g.load({ host: 'mcp', memoryLimit: 16 << 20, ...config });
    return { g, manifest };
  };
  return { make, logs };
}

test('a top level that calls no host runs twice; later instances start from its snapshot, each with its own state and seed', { skip }, async (t) => {
  const { make } = await extension(t, `
    let n = 0;
    const big = Array.from({ length: 2000 }, (_, i) => 'item ' + i);
    defineTool({ name: 'count', handler: () => ++n });
    defineTool({ name: 'random', handler: () => [Math.random(), Math.random()] });
    defineTool({ name: 'big', handler: () => big.length + ':' + big[1999] });
  `);
  const made = [];
  for (let i = 0; i < 4; i++) made.push(await make());
  assert.deepEqual(made.map(({ g }) => g.startedFromSnapshot), [false, false, true, true]);
  for (const { manifest } of made) assert.deepEqual(manifest.tools.map((x) => x.name), ['count', 'random', 'big']);
  const [, , c, d] = made.map(({ g }) => g);
  // The module's state is each instance's own: what one writes, no other sees.
  assert.equal(await c.invoke('count', {}), 1);
  assert.equal(await c.invoke('count', {}), 2);
  assert.equal(await d.invoke('count', {}), 1);
  assert.equal(await made[0].g.invoke('count', {}), 1);
  assert.equal(await d.invoke('big', {}), '2000:item 1999');
  // Math.random is seeded per instance, at its first use, also in instances started from the same snapshot.
  const [rc, rd] = [await c.invoke('random', {}), await d.invoke('random', {})];
  assert.notDeepEqual(rc, rd);
  for (const x of [...rc, ...rd]) assert.ok(x >= 0 && x < 1);
});

test('a top level that calls the host (a log, a clock, a random number) runs in every instance, and never from a snapshot', { skip }, async (t) => {
  const { make, logs } = await extension(t, `
    console.log('top level ran');
    const drawn = Math.random();
    const at = Date.now();
    defineTool({ name: 'drawn', handler: () => [drawn, at] });
  `);
  const made = [];
  for (let i = 0; i < 4; i++) made.push(await make());
  assert.deepEqual(made.map(({ g }) => g.startedFromSnapshot), [false, false, false, false]);
  assert.equal(logs.filter((l) => l === 'top level ran').length, 4);
  const drawn = await Promise.all(made.map(({ g }) => g.invoke('drawn', {})));
  assert.equal(new Set(drawn.map(([r]) => r)).size, 4, 'each instance drew its own number at its top level');
});

test('a snapshot serves only its own config: another env, memory limit or host gets its own load', { skip }, async (t) => {
  const { make } = await extension(t, `
    const seen = process.env.WHO ?? 'nobody';
    defineTool({ name: 'who', handler: () => seen + '/' + kiln.host });
    defineTool({ name: 'grow', handler: () => { const a = []; for (let i = 0; i < 1e7; i++) a.push('x' + i); return a.length; } });
  `);
  for (let i = 0; i < 3; i++) await make({ env: { WHO: 'alice' } });
  const alice = await make({ env: { WHO: 'alice' } });
  assert.equal(alice.g.startedFromSnapshot, true);
  assert.equal(await alice.g.invoke('who', {}), 'alice/mcp');
  const bob = await make({ env: { WHO: 'bob' } });
  assert.equal(bob.g.startedFromSnapshot, false);
  assert.equal(await bob.g.invoke('who', {}), 'bob/mcp');
  const bdd = await make({ env: { WHO: 'alice' }, host: 'bdd' });
  assert.equal(bdd.g.startedFromSnapshot, false);
  assert.equal(await bdd.g.invoke('who', {}), 'alice/bdd');
  // The heap limit the snapshotted load set holds in an instance started from it.
  await assert.rejects(alice.g.invoke('grow', {}), MemoryLimitError);
  assert.equal(alice.g.alive, false);
  const again = await make({ env: { WHO: 'alice' } });
  assert.equal(again.g.startedFromSnapshot, true);
  assert.equal(await again.g.invoke('who', {}), 'alice/mcp', 'an instance discarded for its memory leaves the snapshot whole');
});

test('performance and Date in an instance started from a snapshot read the clock of now, not of the load snapshotted', { skip }, async (t) => {
  const { make } = await extension(t, `defineTool({ name: 'clock', handler: () => [performance.now(), performance.timeOrigin, Date.now()] });`);
  for (let i = 0; i < 2; i++) await make();
  const before = Date.now();
  const { g } = await make();
  assert.equal(g.startedFromSnapshot, true);
  const [now, origin, date] = await g.invoke('clock', {});
  assert.ok(now >= 0, `performance.now() ${now}`);
  assert.ok(origin >= before - 1 && origin <= date, `timeOrigin ${origin} is taken in this instance (made at ${before}, read at ${date})`);
  assert.ok(date >= before);
});

test('a load whose snapshot cannot be made (no file descriptor left for it) still loads, as one never snapshotted', { skip }, async (t) => {
  const { make } = await extension(t, `let n = 0; defineTool({ name: 'count', handler: () => ++n });`);
  await make();
  // Every descriptor the process may open is taken: the snapshot's memfd cannot be made at the second load.
  const fds = [];
  let second;
  try {
    try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch (e) { assert.equal(e.code, 'EMFILE'); }
    second = await make();
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  assert.equal(second.g.startedFromSnapshot, false);
  assert.deepEqual(second.manifest.tools.map((x) => x.name), ['count']);
  assert.equal(await second.g.invoke('count', {}), 1, 'the instance whose snapshot failed serves its calls');
  // With descriptors again, the key's loads are snapshotted as usual (run twice, then started from it).
  await make();
  await make();
  const later = await make();
  assert.equal(later.g.startedFromSnapshot, true);
  assert.equal(await later.g.invoke('count', {}), 1);
});

test('a top level that fills its heap is never snapshotted: the host keeps no copy of it past its instances', { skip }, async (t) => {
  // 40 MB of non-zero bytes made in one operation (no interrupt poll, so no import: the load is eligible).
  const { make } = await extension(t, `const s = 'x'.repeat(40e6); defineTool({ name: 'len', handler: () => s.length });`);
  const before = snapshotStats();
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await make({ memoryLimit: 64 << 20 }));
  assert.deepEqual(made.map(({ g }) => g.startedFromSnapshot), [false, false, false]);
  for (const { g } of made) assert.equal(await g.invoke('len', {}), 40e6);
  const after = snapshotStats();
  // Held by no guest and counted in no session's reservation ([limits] totalMemoryBytes), a snapshot outlives
  // every session of its extension: one of a filled heap would keep tens of MB resident for good.
  assert.equal(after.count, before.count);
  assert.ok(after.residentBytes - before.residentBytes < 1 << 20, `the host holds ${after.residentBytes - before.residentBytes} more bytes of snapshots`);
});
