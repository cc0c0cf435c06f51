// Unit tests of host/untrusted/terminal.ts: what a guest's or an artifact's text may put on the operator's
// terminal. Escapes, controls, bidi and zero-width characters are shown as \u{...}; a message's lines after
// its first start with CONTINUATION (so nothing quoted in a message starts a line at column 0); a guest's log
// is split at every line break and each line carries the guest's mark. Properties over any string.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CONTINUATION, guestLog, printable, printableLine, stderrText } from '../../../dist/host/untrusted/terminal.js';
import { anyString } from '../strings.mjs';

/** Every line break a terminal or an editor may honour. */
const BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

test('printable: escapes, controls, bidi and zero-width characters as \\u{...}; tab and newline kept; printableLine escapes those too', () => {
  assert.equal(printable('a\x1b[2Kb\x07\r\u202e\u2066\u200b\u2028\ufeff\u0085\x7f'), 'a\\u{1b}[2Kb\\u{7}\\u{d}\\u{202e}\\u{2066}\\u{200b}\\u{2028}\\u{feff}\\u{85}\\u{7f}');
  assert.equal(printable('tab\tnew\nline é 日本'), 'tab\tnew\nline é 日本', 'ordinary text is left alone');
  assert.equal(printableLine('a\nb\tc\u001b'), 'a\\nb\\tc\\u{1b}');
});

test('stderrText: a value that holds a newline cannot start a line of its own (property)', () => {
  fc.assert(fc.property(anyString({ maxLength: 40 }), (s) => {
    const out = stderrText(`kiln: could not read "${s}"`);
    const lines = out.split(BREAK);
    assert.ok(lines[0].startsWith('kiln: '));
    for (const line of lines.slice(1)) assert.ok(line.startsWith(CONTINUATION), JSON.stringify(out));
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e]/.test(out), 'no control, bidi or separator survives');
  }), { numRuns: 500 });
});

test('guestLog: every line of a guest\'s message, whatever breaks it, starts with the guest\'s mark; marks stay on one line', () => {
  assert.deepEqual(guestLog(['s1', 'ext.ts'], 'info', 'a\r\nb\rc\u2028d\u0085e\vf'), ['[s1 ext.ts info] a', '[s1 ext.ts info] b', '[s1 ext.ts info] c', '[s1 ext.ts info] d', '[s1 ext.ts info] e', '[s1 ext.ts info] f']);
  assert.deepEqual(guestLog(['s\n1]', 'x\u202e.ts'], 'warn', 'm'), ['[s\\n1] x\\u{202e}.ts warn] m']);
  fc.assert(fc.property(fc.array(anyString({ maxLength: 8 }), { maxLength: 3 }), anyString({ maxLength: 40 }), (marks, message) => {
    const lines = guestLog(marks, 'info', message);
    const prefix = `[${[...marks, 'info'].map(printableLine).join(' ')}] `;
    assert.ok(!BREAK.test(prefix));
    for (const line of lines) {
      assert.ok(line.startsWith(prefix));
      assert.ok(!BREAK.test(line), JSON.stringify(line));
    }
  }), { numRuns: 500 });
});

// Invisible characters a terminal draws as nothing: U+00AD (soft hyphen), U+180B-U+180F, U+034F, the tag
// characters U+E0000-U+E007F and the variation selectors U+E0100-U+E01EF among them (\p{Cf} and
// \p{Default_Ignorable_Code_Point}, every code point of both is checked).
test('printable escapes every invisible formatting character', () => {
  for (const c of ['\u00ad', '\u034f', '\u180b', '\u{e0041}', '\u{e0100}', '\u{1d173}']) assert.notEqual(printable(`a${c}b`), `a${c}b`, c.codePointAt(0).toString(16));
  let checked = 0;
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (!/[\p{Cf}\p{Default_Ignorable_Code_Point}]/u.test(c)) continue;
    assert.equal(printable(c), `\\u{${cp.toString(16)}}`, cp.toString(16));
    checked++;
  }
  assert.ok(checked > 4000, `${checked} code points`);
  assert.equal(printable('naïve café 😀 日本'), 'naïve café 😀 日本', 'visible text is untouched');
});
