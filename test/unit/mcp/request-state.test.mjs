// Unit tests of host/mcp/request-state.ts: a state opens only when kiln minted it under a key of its ring, it has
// not expired, it is bound to exactly this call, and it was never opened before; every other string is refused
// with its reason. Keys are read and checked; the state holds digests, never an argument value.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { argumentsDigest, canonicalJson, readStateKeys, RequestStates, SpentInMemory, StateRefusedError } from '../../../dist/host/mcp/request-state.js';

const KEY = Buffer.alloc(32, 1);
const binding = { principal: 'p1', session: 'work', tool: 'notes.add', args: argumentsDigest({ text: 'SECRET-ARG' }) };
const payload = { pr: binding.principal, ss: binding.session, tool: binding.tool, args: binding.args, ok: [], ask: { key: 'k', offered: ['once'] } };
const ok = () => true;
const refused = (reason) => (e) => e instanceof StateRefusedError && e.reason === reason;

test('a minted state opens once, for its own call; every other binding, a replay and an expiry are refused', async () => {
  let now = 1000;
  const states = new RequestStates([KEY], new SpentInMemory(() => now), () => now);
  const s = states.mint(payload, 5000);
  assert.ok(!s.includes('SECRET-ARG') && !Buffer.from(s.split('.')[2], 'base64url').toString().includes('SECRET-ARG'));
  for (const other of [{ principal: 'p2' }, { session: '' }, { tool: 'notes.del' }, { args: argumentsDigest({ text: 'other' }) }]) {
    await assert.rejects(states.open(s, { ...binding, ...other }, ok), refused('binding'), JSON.stringify(other));
  }
  await assert.rejects(states.open(s, binding, () => { throw new Error('the rest of the retry is malformed'); }), /malformed/);
  assert.equal((await states.open(s, binding, ok)).payload.tool, 'notes.add', 'a retry refused by its check did not spend the state');
  await assert.rejects(states.open(s, binding, ok), refused('replayed'));
  const late = states.mint(payload, 5000);
  now += 5001;
  await assert.rejects(states.open(late, binding, ok), refused('expired'));
});

test('only kiln\'s own MAC under a key of the ring opens a state; the first key signs, the others still verify', async () => {
  const old = Buffer.alloc(32, 2);
  const before = new RequestStates([old]).mint(payload, 60_000);
  const rotated = new RequestStates([KEY, old]);
  assert.equal((await rotated.open(before, binding, ok)).payload.ask.key, 'k', 'an earlier key still verifies');
  assert.equal(rotated.mint(payload, 60_000).split('.')[1], new RequestStates([KEY]).mint(payload, 1).split('.')[1], 'the first key signs');
  const s = rotated.mint(payload, 60_000);
  const [v, kid, body, mac] = s.split('.');
  await assert.rejects(new RequestStates([Buffer.alloc(32, 9)]).open(s, binding, ok), refused('key'));
  await assert.rejects(rotated.open([v, kid, body, mac.slice(1) + 'A'].join('.'), binding, ok), refused('mac'));
  const altered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url')), ask: { key: 'k', offered: ['once', 'always'] } })).toString('base64url');
  await assert.rejects(rotated.open([v, kid, altered, mac].join('.'), binding, ok), refused('mac'));
  for (const junk of [undefined, 42, '', 'ks1', 'ks1.a.b', 'ks2.a.b.c', 'x'.repeat(70_000)]) await assert.rejects(rotated.open(junk, binding, ok), refused('malformed'), String(junk).slice(0, 20));
  await fc.assert(fc.asyncProperty(fc.string({ maxLength: 200 }), async (junk) => {
    await assert.rejects(rotated.open(junk, binding, ok), StateRefusedError);
  }));
});

test('argument digests ignore key order; keys are read from the environment or a file, and short ones refused', () => {
  assert.equal(argumentsDigest({ a: 1, b: { c: [1, { d: 2, e: 3 }] } }), argumentsDigest({ b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
  assert.notEqual(argumentsDigest({ a: 1 }), argumentsDigest({ a: '1' }));
  assert.equal(canonicalJson({ b: 1, a: [true, null] }), '{"a":[true,null],"b":1}');
  assert.equal(readStateKeys(undefined, undefined), undefined);
  assert.deepEqual(readStateKeys(KEY.toString('base64url'), undefined), [KEY]);
  assert.deepEqual(readStateKeys(KEY.toString('base64'), '/ignored'), [KEY]);
  assert.throws(() => readStateKeys('c2hvcnQ', undefined), /at least 32 random bytes \(make one with: openssl rand -base64 32\)/);
  const dir = mkdtempSync(join(tmpdir(), 'kiln-keys-'));
  const file = join(dir, 'state.key');
  writeFileSync(file, `# the deployment's keys\n${KEY.toString('base64')}\n\n${Buffer.alloc(40, 5).toString('base64url')}\n`);
  assert.deepEqual(readStateKeys(undefined, file), [KEY, Buffer.alloc(40, 5)]);
  writeFileSync(file, '# none\n');
  assert.throws(() => readStateKeys(undefined, file), /holds no key/);
  assert.throws(() => readStateKeys(undefined, join(dir, 'missing')), /no such file/);
});

test('spent ids are bounded: past the bound, expired ones are swept before a new one is refused', () => {
  let now = 0;
  const spent = new SpentInMemory(() => now, 2);
  assert.equal(spent.claim('a', 10), true);
  assert.equal(spent.claim('a', 10), false);
  assert.equal(spent.claim('b', 20), true);
  assert.equal(spent.claim('c', 30), false, 'full of unexpired ids: refused, none forgotten');
  assert.equal(spent.claim('a', 10), false);
  now = 15;
  assert.equal(spent.claim('c', 30), true, 'a swept');
  assert.equal(spent.claim('b', 20), false, 'b still spent');
});
