// Unit tests of host/untrusted/guest-json.ts beyond test/unicode-boundary.test.mjs: as a property, any JSON a
// guest sends comes back as JSON.parse reads it with every lone surrogate (in values and keys, at any depth)
// made U+FFFD and nothing else changed; text without a surrogate escape is JSON.parse's own result; an
// escaped backslash before "ud800" is text, not an escape.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseGuestJson } from '../../../dist/host/untrusted/guest-json.js';
import { anyString } from '../strings.mjs';

const fix = (s) => s.replace(/[\uD800-\uDFFF]/gu, '\uFFFD');
/** What parseGuestJson should make of `v`: every string and key fixed (keys here never collide once fixed). */
function expected(v) {
  if (typeof v === 'string') return fix(v);
  if (Array.isArray(v)) return v.map(expected);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [fix(k), expected(x)]));
  return v;
}
function allWellFormed(v) {
  if (typeof v === 'string') return v.isWellFormed();
  if (v !== null && typeof v === 'object') return Object.keys(v).every((k) => k.isWellFormed()) && Object.values(v).every(allWellFormed);
  return true;
}

const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, anyString({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  // Distinct keys even once fixed, so the model need not know which of two colliding keys wins.
  object: fc.uniqueArray(fc.tuple(anyString({ maxLength: 6 }), tie('value')), { maxLength: 4, selector: ([k]) => fix(k) }).map((es) => Object.fromEntries(es)),
})).value;

test('any guest JSON reads as JSON.parse reads it, each lone surrogate U+FFFD and nothing else changed (property)', () => {
  fc.assert(fc.property(json, (v) => {
    const text = JSON.stringify(v);
    const out = parseGuestJson(text);
    assert.deepEqual(out, expected(v));
    assert.ok(allWellFormed(out));
    if (!/\\u[dD][89a-fA-F]/.test(text)) assert.deepEqual(out, JSON.parse(text));
  }), { numRuns: 300 });
});

test('an escaped backslash before "ud800" is text; a pair stays a pair; scalars and top-level strings are read too', () => {
  assert.equal(parseGuestJson('"\\\\ud800"'), '\\ud800');
  assert.equal(parseGuestJson('"\\ud83d\\ude00"'), '\u{1f600}');
  assert.equal(parseGuestJson('"\\ude00\\ud83d"'), '\uFFFD\uFFFD', 'a pair in the wrong order is two lone halves');
  assert.equal(parseGuestJson('"\\uD800"'), '\uFFFD', 'upper-case hex');
  assert.equal(parseGuestJson('12'), 12);
  assert.equal(parseGuestJson('null'), null);
  assert.throws(() => parseGuestJson('{"a": '), SyntaxError, 'not JSON: JSON.parse\'s error');
  // Keys: the fixed key is a data property, whatever it spells.
  const o = parseGuestJson('{"constructor\\ud800": 1, "__proto__\\udc00": {"x": 1}}');
  assert.deepEqual(Object.keys(o), ['constructor\uFFFD', '__proto__\uFFFD']);
  assert.equal(Object.getPrototypeOf(o), Object.prototype);
});

test('keys that become equal once fixed keep the later value, as JSON does', () => {
  assert.deepEqual(parseGuestJson('{"a\\ud800": 1, "a\\ufffd": 2}'), { 'a\uFFFD': 2 });
  assert.deepEqual(parseGuestJson('{"a\\ufffd": 1, "a\\ud800": 2}'), { 'a\uFFFD': 2 });
  assert.deepEqual(parseGuestJson('{"a\\ud800": 1, "a\\ufffd": 2, "a\\udc00": 3}'), { 'a\uFFFD': 3 });
  assert.deepEqual(parseGuestJson('{"a\\ud800": 1, "a\\udc00": 2}'), { 'a\uFFFD': 2 });
});
