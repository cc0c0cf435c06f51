// Unit tests of host/untrusted/log-limiter.ts with a fake clock: per window at most `lines` lines and `chars`
// characters get through (property over any sequence of writes), a long line is cut at `lineChars` with the
// count of what was cut, what is dropped is reported once in one line when the next window opens or on flush
// (and, with flushTimer, at the end of the window), and the notice's level follows the last line's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { LogLimiter } from '../../../dist/host/untrusted/log-limiter.js';

const NOTICE = /^\[kiln\] dropped (\d+) log line\(s\) \((\d+) characters\): at most (\d+) lines and (\d+) characters per (\d+) ms get through$/;

function limiter(budget, options) {
  let now = 0;
  const out = [];
  const l = new LogLimiter(budget, (level, text) => out.push([level, text]), 'warn', () => now, options);
  return { l, out, at: (t) => { now = t; } };
}

test('lines past the window\'s budget are dropped and reported once, in one line, when the next window opens', () => {
  const { l, out, at } = limiter({ windowMs: 100, lines: 2, chars: 1000, lineChars: 100 });
  for (const m of ['a', 'b', 'c', 'dd']) l.write('info', m);
  assert.deepEqual(out, [['info', 'a'], ['info', 'b']]);
  at(99);
  l.write('info', 'e');
  assert.equal(out.length, 2, 'still the same window');
  at(100);
  l.write('error', 'f');
  assert.deepEqual(out.slice(2), [['warn', '[kiln] dropped 3 log line(s) (4 characters): at most 2 lines and 1000 characters per 100 ms get through'], ['error', 'f']]);
  l.flush();
  assert.equal(out.length, 4, 'nothing dropped since: no notice');
});

test('the characters budget counts what is let through; a long line is cut, never between a surrogate pair\'s halves', () => {
  const { l, out } = limiter({ windowMs: 100, lines: 100, chars: 10, lineChars: 100 });
  l.write('info', '12345678');
  l.write('info', '123'); // 11 > 10: dropped
  l.write('info', '12'); // exactly 10: through
  assert.deepEqual(out.map(([, t]) => t), ['12345678', '12']);
  const cut = limiter({ windowMs: 100, lines: 100, chars: 1e6, lineChars: 4 });
  cut.l.write('info', 'abcdefg');
  cut.l.write('info', 'abc\u{1f600}');
  cut.l.write('info', 'abcd');
  assert.deepEqual(cut.out.map(([, t]) => t), ['abcd… [3 more characters cut]', 'abc… [2 more characters cut]', 'abcd']);
});

test('the notice\'s level: noticeFor(last level written), else the limiter\'s own', () => {
  const { l, out } = limiter({ windowMs: 100, lines: 0, chars: 1000, lineChars: 100 }, { noticeFor: (last) => (last === 'error' ? 'error' : 'info') });
  l.write('debug', 'x');
  l.write('error', 'y');
  l.flush();
  assert.deepEqual(out.map(([lv, t]) => [lv, NOTICE.exec(t)?.slice(1, 3)]), [['error', ['2', '2']]]);
});

test('with flushTimer, a window that dropped reports at its end even when nothing more is written', async () => {
  let now = 0;
  const out = [];
  const l = new LogLimiter({ windowMs: 5, lines: 1, chars: 1000, lineChars: 100 }, (_lv, t) => out.push(t), 'warn', () => now, { flushTimer: true });
  l.write('info', 'a');
  l.write('info', 'b');
  l.write('info', 'c');
  assert.deepEqual(out, ['a']);
  for (let i = 0; i < 1000 && out.length < 2; i++) await new Promise((r) => setTimeout(r, 5)); // the timer fires once the window ends
  assert.match(out[1], /^\[kiln\] dropped 2 log line\(s\)/);
});

test('any sequence of writes: per window at most `lines` lines and `chars` characters; every dropped line is counted in a notice (property)', () => {
  const write = fc.record({ dt: fc.nat(60), len: fc.nat(40) });
  const budget = fc.record({ windowMs: fc.integer({ min: 1, max: 100 }), lines: fc.nat(5), chars: fc.nat(80), lineChars: fc.integer({ min: 1, max: 30 }) });
  fc.assert(fc.property(budget, fc.array(write, { maxLength: 60 }), (b, writes) => {
    let now = 0;
    let window = -Infinity;
    const windows = new Map();
    let dropped = 0;
    let passed = 0;
    const l = new LogLimiter(b, (_lv, text) => {
      const n = NOTICE.exec(text);
      if (n) return void (dropped += Number(n[1]));
      passed++;
      const w = windows.get(window) ?? { lines: 0, chars: 0 };
      w.lines++;
      w.chars += text.length;
      windows.set(window, w);
      assert.ok(text.length <= b.lineChars || /… \[\d+ more characters cut\]$/.test(text));
    }, 'warn', () => now);
    for (const { dt, len } of writes) {
      now += dt;
      if (now - window >= b.windowMs) window = now; // the limiter's own window rule, to group what passed
      l.write('info', 'x'.repeat(len));
    }
    l.flush();
    for (const w of windows.values()) assert.ok(w.lines <= b.lines && w.chars <= b.chars, JSON.stringify({ b, w }));
    assert.equal(passed + dropped, writes.length);
  }), { numRuns: 300 });
});
