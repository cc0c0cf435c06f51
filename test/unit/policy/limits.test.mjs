// Unit tests of host/policy/limits.ts: a call's CPU budget and a guest's heap limit are the lower of what the
// manifest declares and what the operator sets, and each names the setting that set it (the error a call gets
// quotes it). The operator's per-extension entry is found by the file's real path or the artifact's sha256.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { cpuBudget, guestMemory } from '../../../dist/host/policy/limits.js';
import { DEFAULT_POLICY } from '../../../dist/host/policy/policy.js';

const EXT = { file: '/srv/ext/notes.ts', sha256: 'ab'.repeat(32) };
const MB = 1024 * 1024;
const policy = (limits) => ({ ...DEFAULT_POLICY, limits: { ...DEFAULT_POLICY.limits, ...limits } });
const OPERATOR_CPU = "the server's [limits] cpuMs";
const MANIFEST_CPU = 'cpuMs in its manifest';

test('cpuBudget: the lower of the manifest\'s cpuMs and the operator\'s; a tie is the operator\'s; neither: no budget', () => {
  assert.equal(cpuBudget(policy({}), { cpuMs: undefined }), undefined, 'only the deadline applies');
  assert.equal(cpuBudget(policy({}), undefined), undefined, 'a script, no operator setting');
  assert.deepEqual(cpuBudget(policy({ cpuMs: 500 }), undefined), { ms: 500, setting: OPERATOR_CPU }, 'a script gets the operator\'s');
  assert.deepEqual(cpuBudget(policy({ cpuMs: 500 }), {}), { ms: 500, setting: OPERATOR_CPU });
  assert.deepEqual(cpuBudget(policy({}), { cpuMs: 200 }), { ms: 200, setting: MANIFEST_CPU });
  assert.deepEqual(cpuBudget(policy({ cpuMs: 500 }), { cpuMs: 200 }), { ms: 200, setting: MANIFEST_CPU });
  assert.deepEqual(cpuBudget(policy({ cpuMs: 500 }), { cpuMs: 9_000 }), { ms: 500, setting: OPERATOR_CPU }, 'a manifest cannot raise the operator\'s');
  assert.deepEqual(cpuBudget(policy({ cpuMs: 500 }), { cpuMs: 500 }), { ms: 500, setting: OPERATOR_CPU });
});

test('cpuBudget, as a property: never above either setting, and the named setting holds the value', () => {
  const ms = fc.option(fc.integer({ min: 1, max: 1e7 }), { nil: undefined });
  fc.assert(fc.property(ms, ms, (operator, declared) => {
    const b = cpuBudget(policy({ cpuMs: operator }), { cpuMs: declared });
    if (operator === undefined && declared === undefined) return assert.equal(b, undefined);
    assert.equal(b.ms, Math.min(operator ?? Infinity, declared ?? Infinity));
    assert.equal(b.ms, b.setting === OPERATOR_CPU ? operator : declared);
  }), { numRuns: 200 });
});

test('guestMemory: the lowest a tool of the file declares, else the operator\'s; the setting names the tool', () => {
  const tools = [{ name: 'a', memoryLimitBytes: 48 * MB }, { name: 'b' }, { name: 'c', memoryLimitBytes: 32 * MB }];
  assert.deepEqual(guestMemory(policy({}), EXT, tools), { bytes: 32 * MB, setting: 'memoryLimitBytes of tool "c" in its manifest' });
  assert.deepEqual(guestMemory(policy({}), EXT, [{ name: 'b' }]), { bytes: 64 * MB, setting: "the server's [limits] memoryLimitBytes" });
  assert.deepEqual(guestMemory(policy({}), EXT, [{ name: 'big', memoryLimitBytes: 512 * MB }]), { bytes: 64 * MB, setting: "the server's [limits] memoryLimitBytes" },
    'a manifest cannot raise the operator\'s limit');
  assert.deepEqual(guestMemory(policy({ memoryLimitBytes: 32 * MB }), EXT, [{ name: 'c', memoryLimitBytes: 32 * MB }]), { bytes: 32 * MB, setting: "the server's [limits] memoryLimitBytes" },
    'a tie is the operator\'s');
  assert.deepEqual(guestMemory(policy({}), EXT, []), { bytes: 64 * MB, setting: "the server's [limits] memoryLimitBytes" });
});

test('guestMemory: the operator\'s [limits.memory] entry for this extension replaces memoryLimitBytes, raising or lowering it, found by path or sha256', () => {
  const entry = "the server's [limits.memory] entry for this extension";
  assert.deepEqual(guestMemory(policy({ memory: { '/srv/ext/notes.ts': 256 * MB } }), EXT, [{ name: 'a' }]), { bytes: 256 * MB, setting: entry });
  assert.deepEqual(guestMemory(policy({ memory: { [`sha256:${EXT.sha256}`]: 16 * MB } }), EXT, [{ name: 'a', memoryLimitBytes: 32 * MB }]), { bytes: 16 * MB, setting: entry });
  assert.deepEqual(guestMemory(policy({ memory: { '/srv/ext/notes.ts': 256 * MB } }), EXT, [{ name: 'a', memoryLimitBytes: 8 * MB }]).setting, 'memoryLimitBytes of tool "a" in its manifest');
  // Keys the operator does not control name nothing: another file, another artifact, a bare name, a prototype key.
  for (const key of ['/srv/ext/other.ts', `sha256:${'cd'.repeat(32)}`, 'notes.ts', 'notes', 'constructor']) {
    assert.equal(guestMemory(policy({ memory: { [key]: 1 * MB } }), EXT, []).bytes, 64 * MB, key);
  }
  assert.equal(guestMemory(policy({}), { file: 'constructor', sha256: '00' }, []).bytes, 64 * MB, 'an inherited property is no entry');
  // A path entry and a sha256 entry both naming the file: the path's, as extensionKeys orders them.
  assert.equal(guestMemory(policy({ memory: { [`sha256:${EXT.sha256}`]: 16 * MB, '/srv/ext/notes.ts': 128 * MB } }), EXT, []).bytes, 128 * MB);
});

test('guestMemory: a path entry names the file by its real path, so a link to it finds the entry and the link\'s own path does not', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-unit-limits-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const real = join(dir, 'real.ts');
  const link = join(dir, 'link.ts');
  writeFileSync(real, '');
  symlinkSync(real, link);
  const ext = { file: link, sha256: 'ef'.repeat(32) };
  assert.equal(guestMemory(policy({ memory: { [real]: 8 * MB } }), ext, []).bytes, 8 * MB);
  assert.equal(guestMemory(policy({ memory: { [link]: 8 * MB } }), ext, []).bytes, 64 * MB, 'config/config.ts stores keys resolved: a link\'s path is no key');
});
