// Unit tests of host/untrusted/json-depth.ts beyond test/mcp-results.test.mjs: the text check and the value
// check agree on every JSON value (property), exactly `max` levels pass and one more does not, and a text too
// deep for any recursive parser is judged without recursion.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, textNestsDeeper, valueNestsDeeper } from '../../../dist/host/untrusted/json-depth.js';
import { anyString } from '../strings.mjs';

const nested = (n, leaf = 1) => { let v = leaf; for (let i = 0; i < n; i++) v = i % 2 ? { k: v } : [v]; return v; };

test('exactly max levels pass, max + 1 do not, for arrays, objects and the default MAX_JSON_DEPTH', () => {
  for (const max of [0, 1, 5, MAX_JSON_DEPTH]) {
    assert.equal(valueNestsDeeper(nested(max), max), false, `value ${max}`);
    assert.equal(valueNestsDeeper(nested(max + 1), max), true, `value ${max + 1}`);
    assert.equal(textNestsDeeper(JSON.stringify(nested(max)), max), false, `text ${max}`);
    assert.equal(textNestsDeeper(JSON.stringify(nested(max + 1)), max), true, `text ${max + 1}`);
  }
  assert.equal(valueNestsDeeper(nested(MAX_JSON_DEPTH + 1)), true, 'the default');
  assert.equal(textNestsDeeper('[]', 0), true, 'an empty array is one level');
  assert.equal(valueNestsDeeper([], 0), true);
  // Too deep for anything recursive, and not even valid JSON: judged all the same.
  assert.equal(textNestsDeeper('['.repeat(1_000_000)), true);
  assert.equal(textNestsDeeper(`"${'['.repeat(5000)}"`), false, 'brackets in a string');
  assert.equal(textNestsDeeper(`${'[]'.repeat(5000)}`), false, 'siblings are not depth');
});

test('the text check and the value check agree on every JSON value (property)', () => {
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'medium' }, anyString({ maxLength: 6 }).map((s) => s + '[{"\\'), fc.integer(), fc.constant(null), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 3 }),
    object: fc.dictionary(anyString({ maxLength: 4 }), tie('value'), { maxKeys: 3 }),
  })).value;
  fc.assert(fc.property(json, fc.integer({ min: 0, max: 6 }), (v, max) => {
    assert.equal(textNestsDeeper(JSON.stringify(v), max), valueNestsDeeper(v, max));
  }), { numRuns: 500 });
});
