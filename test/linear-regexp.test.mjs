// Schema patterns run on RE2 (host/schema/linear-regexp.ts) with JavaScript's meaning (ECMA-262, `u` flag): each
// pattern here matches exactly the strings `new RegExp(pattern, 'u')` matches, on chosen and on random
// strings; what RE2 cannot run (lookaround, backreferences, oversized programs) is refused, never changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { linearRegExp, loadRE2, PATTERN_PROGRAM_LIMIT, PATTERN_WORK_LIMIT, PatternWorkExceeded, toRE2, UnsupportedPattern, withPatternBudget } from '../dist/host/schema/linear-regexp.js';

await loadRE2();

const CASES = [
  ['^a$', ['a', 'a\n', '\na', 'ab']],
  ['a$', ['a\n', 'ba']],
  ['^.$', ['😀', '\n', '\r', '\u2028', 'é', '\ud83d']],
  ['^\\u{1F600}$', ['😀']],
  ['^\\ud83d\\ude00$', ['😀']],
  ['^[😀-😂]$', ['😁', 'a']],
  ['^😀+$', ['😀😀']],
  ['^\\s+$', [' \t\u00a0\ufeff\u3000', '\u200b', '\u0085']],
  ['^\\S+$', ['\u0085', 'abc', 'a b', '\u180e']],
  ['^[\\S]+$', ['\u0085x', 'a b']],
  ['^[^\\s]+$', ['\u0085x', 'a b']],
  ['^\\w+$', ['abc_1', 'é']],
  ['\\bfoo\\b', ['a foo b', 'afoo']],
  ['^[\\b]$', ['\b']],
  ['^\\p{L}+$', ['héllo', '123']],
  ['^\\p{Lu}$', ['A', 'a']],
  ['^\\p{Letter}\\P{Decimal_Number}\\p{Script=Greek}\\p{sc=Latin}\\p{gc=Lu}$', ['aaαaA', 'a1αaA', 'aaaaA']],
  ['^(?<year>\\d{4})-\\d\\d$', ['2024-01']],
  ['^[^]$', ['\n', 'a']],
  ['^[]$', ['', 'a']],
  ['^[[]$', ['[']],
  ['^[:alpha:]$', [':', 'a']],
  ['^\\/$', ['/']],
  ['^\\cJ\\x41\\0\\v$', ['\nA\0\v']],
  ['^a{2,3}?$', ['aa', 'aaaa']],
  ['^\\d{3}$', ['١٢٣', '123']],
  ['^\\$\\^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\$', ['$^.*+?()[]{}|\\']],
  ['^[.\\-]$', ['.', '-', 'a']],
  ['(a+)+$', ['aaaa', 'aaab']],
];

test('patterns mean on RE2 what they mean in JavaScript with the u flag', () => {
  for (const [p, strings] of CASES) {
    const m = linearRegExp(p, 'u');
    for (const s of strings) assert.equal(m.test(s), new RegExp(p, 'u').test(s), `${p} on ${JSON.stringify(s)} (RE2: ${toRE2(p).source})`);
  }
});

test('on random strings too', () => {
  const patterns = CASES.map(([p]) => [p, linearRegExp(p, 'u'), new RegExp(p, 'u')]);
  const alphabet = fc.constantFrom('a', 'b', 'A', '1', '١', ' ', '\n', '\r', '\u2028', '\u00a0', '\u0085', '😀', '😁', '\ud83d', '.', '-', '[', ':', 'é', '_', '\b', '\0');
  fc.assert(fc.property(fc.array(alphabet, { maxLength: 12 }).map((xs) => xs.join('')), (s) => {
    for (const [p, re2, js] of patterns) assert.equal(re2.test(s), js.test(s), `${p} on ${JSON.stringify(s)}`);
  }), { numRuns: 2000 });
});

test('what RE2 cannot run is refused with the reason', () => {
  for (const [p, why] of [['^(?=a)', /lookahead/], ['(?<!a)b', /lookbehind/], ['(a)\\1', /backreferences/], ['(?<x>a)\\k<x>', /named backreferences/], ['a{1001}', /repeat count/], ['\\p{Script_Extensions=Greek}', /invalid/], ['(', /Unterminated group/]]) {
    assert.throws(() => linearRegExp(p, 'u'), (e) => e instanceof UnsupportedPattern && why.test(e.message), p);
  }
});

test('program size is counted before RE2 builds anything', () => {
  assert.equal(toRE2('^[a-z]{1,64}$').size, 129);
  assert.ok(toRE2('(?:a{1000}){1000}').size >= 1_000_000);
  const t0 = process.hrtime.bigint();
  assert.throws(() => linearRegExp('((((a{1000}){1000}){1000}){1000})', 'u'), (e) => e instanceof UnsupportedPattern && e.message.includes(`more than ${PATTERN_PROGRAM_LIMIT} RE2 instructions`));
  assert.ok(process.hrtime.bigint() - t0 < 10_000_000_000n);
});

test('matching is bounded by steps, not by time: the same strings are refused on any machine', () => {
  const m = linearRegExp('^(a+)+$', 'u');
  const s = 'a'.repeat(100_000) + 'b';
  const steps = toRE2('^(a+)+$').size * s.length;
  const n = Math.floor(PATTERN_WORK_LIMIT / steps);
  assert.equal(withPatternBudget(() => { for (let i = 0; i < n; i++) assert.equal(m.test(s), false); return 'within'; }), 'within');
  assert.throws(() => withPatternBudget(() => { for (let i = 0; i <= n; i++) m.test(s); }), PatternWorkExceeded);
});
