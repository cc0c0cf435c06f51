// cpuMs and memoryLimitBytes declared in a tool's manifest, through a real MCP client: a CPU budget counts time
// spent running guest code (not waiting), the lower of the manifest and the operator's [limits] wins for both,
// and a call past either fails with a typed error naming the limit and the setting that set it. Outcomes and
// messages only: no assertion on how long anything took.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { buildFixture, call, kiln, serveArtifact, tempDir } from './helpers.mjs';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

let budget;
let heap;
before(async () => {
  [budget, heap] = await Promise.all([buildFixture('limits/budget.ts'), buildFixture('limits/heap.ts')]);
});

const MiB = 1024 * 1024;

test('a loop is stopped by its manifest cpuMs long before its timeoutMs; the guest is reset, other sessions are not', async (t) => {
  const client = await serveArtifact(t, budget);
  assert.deepEqual((await call(client, 'cpu.state')).json, { calls: 1 });
  assert.deepEqual((await call(client, 'cpu.state', {}, { session: 'other' })).json, { calls: 1 });
  const r = await call(client, 'cpu.spin');
  assert.equal(r.isError, true);
  assert.equal(r.text, 'CpuLimitError: tool "cpu.spin" used more than 300 ms of CPU time (cpuMs in its manifest); it was stopped and the session\'s guest was reset');
  assert.deepEqual((await call(client, 'cpu.state')).json, { calls: 1 }, 'fresh globals after the stop');
  assert.deepEqual((await call(client, 'cpu.state', {}, { session: 'other' })).json, { calls: 2 }, "the other session's guest was untouched");
});

test('the budget is the sum of the runs: short bursts between awaits still run out of it', async (t) => {
  const client = await serveArtifact(t, budget);
  const r = await call(client, 'cpu.bursts');
  assert.equal(r.isError, true);
  assert.match(r.text, /^CpuLimitError: tool "cpu\.bursts" used more than 300 ms of CPU time \(cpuMs in its manifest\)/);
});

test('waiting costs no CPU time: a handler that sleeps far past its cpuMs (within its timeoutMs) succeeds', async (t) => {
  const client = await serveArtifact(t, budget);
  const r = await call(client, 'cpu.sleep');
  assert.equal(r.isError, false, r.text);
  assert.equal(r.text, 'slept');
});

test("the operator's lower [limits] cpuMs wins over the manifest's; the manifest's lower one wins over the operator's", async (t) => {
  const lower = await serveArtifact(t, budget, '[limits]\ncpuMs = 200\n');
  assert.equal((await call(lower, 'cpu.spinLoose')).text,
    'CpuLimitError: tool "cpu.spinLoose" used more than 200 ms of CPU time (the server\'s [limits] cpuMs); it was stopped and the session\'s guest was reset');
  assert.equal((await call(lower, 'cpu.state')).isError, false, 'a cheap call under the same ceiling runs');
  const higher = await serveArtifact(t, budget, '[limits]\ncpuMs = 5000\n');
  assert.match((await call(higher, 'cpu.spin')).text, /^CpuLimitError: tool "cpu\.spin" used more than 300 ms of CPU time \(cpuMs in its manifest\)/);
});

test('inline isolation, and scripts under [limits] cpuMs, are stopped the same way', async (t) => {
  const inline = await serveArtifact(t, budget, '[sessions]\nisolation = "inline"\n');
  assert.match((await call(inline, 'cpu.spin')).text, /^CpuLimitError: tool "cpu\.spin" used more than 300 ms/);
  assert.equal((await call(inline, 'cpu.sleep')).text, 'slept');
  const client = await serveArtifact(t, budget, '[limits]\ncpuMs = 200\n');
  const s = await call(client, 'run_script', { code: 'for (;;) {}' });
  assert.equal(s.json.status, 'error');
  assert.equal(s.json.error.name, 'CpuLimitError');
  assert.match(s.json.error.message, /^the script used more than 200 ms of CPU time \(the server's \[limits\] cpuMs\)/);
  const fine = await call(client, 'run_script', { code: 'await new Promise((r) => setTimeout(r, 400)); 1 + 1' });
  assert.equal(fine.json.result, 2);
});

test("memoryLimitBytes in the manifest limits the file's guest; the operator's lower limit wins", async (t) => {
  const client = await serveArtifact(t, heap); // the operator's default is 64 MiB
  assert.equal((await call(client, 'heap.alloc', { mb: 16 })).json, 16);
  const over = await call(client, 'heap.alloc', { mb: 48 });
  assert.equal(over.isError, true);
  assert.match(over.text, /^MemoryLimitError: tool "heap\.alloc" ran out of its memory limit.*\(the limit: 33554432 bytes, memoryLimitBytes of tool "heap\.alloc" in its manifest\)/);
  assert.equal((await call(client, 'heap.other')).text, 'ok', 'the next call gets a fresh guest');

  const lower = await serveArtifact(t, heap, `[limits]\nmemoryLimitBytes = ${16 * MiB}\n`);
  assert.equal((await call(lower, 'heap.alloc', { mb: 6 })).json, 6);
  assert.match((await call(lower, 'heap.alloc', { mb: 24 })).text, /^MemoryLimitError: .*\(the limit: 16777216 bytes, the server's \[limits\] memoryLimitBytes\)/);
  const perFile = await serveArtifact(t, heap, `[limits.memory]\n"${heap}" = ${16 * MiB}\n`);
  assert.match((await call(perFile, 'heap.alloc', { mb: 24 })).text, /\(the limit: 16777216 bytes, the server's \[limits\.memory\] entry for this extension\)/);

  // A higher operator limit does not lift the manifest's.
  const higher = await serveArtifact(t, heap, `[limits.memory]\n"${heap}" = ${128 * MiB}\n`);
  assert.match((await call(higher, 'heap.alloc', { mb: 48 })).text, /\(the limit: 33554432 bytes, memoryLimitBytes of tool "heap\.alloc" in its manifest\)/);
});

test('cpuMs and memoryLimitBytes are checked in the manifest and in kiln.toml', async (t) => {
  const dir = tempDir(t);
  const bad = [
    ['cpuMs: -1', /tool "x": cpuMs must be a positive number/],
    ['cpuMs: "fast"', /tool "x": cpuMs must be a positive number/],
    ['memoryLimitBytes: 1.5', /tool "x": memoryLimitBytes must be a positive integer/],
    [`memoryLimitBytes: ${1024 * MiB}`, /tool "x": memoryLimitBytes must be a positive integer, at most 536870912/],
  ];
  for (const [field, expected] of bad) {
    writeFileSync(join(dir, 'x.ts'), `defineTool({ name: 'x', ${field}, handler: () => 1 });\n`);
    const r = await kiln(['build', join(dir, 'x.ts'), '-o', join(dir, 'x.wasm')]);
    assert.notEqual(r.code, 0, field);
    assert.match(r.stderr, expected, field);
  }
  writeFileSync(join(dir, 'kiln.toml'), '[limits]\ncpuMs = 0\n');
  const r = await kiln(['mcp', '--config', join(dir, 'kiln.toml')]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /\[limits\] cpuMs must be a positive integer/);
});
