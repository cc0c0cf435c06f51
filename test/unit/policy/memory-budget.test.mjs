// Unit tests of host/policy/memory-budget.ts: each guest reserves its heap limit plus GUEST_OVERHEAD_BYTES; the
// sum never passes [limits] totalMemoryBytes (exactly full is allowed, one byte more is not); before refusing,
// idle guests are reclaimed for exactly the shortfall; a refusal names the setting and reserves nothing; a
// release gives back once, however often it is called.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { GUEST_OVERHEAD_BYTES, MemoryBudget, MemoryBudgetError } from '../../../dist/host/policy/memory-budget.js';

const O = GUEST_OVERHEAD_BYTES;

test('a reservation is the heap limit plus the overhead; exactly full fits, one byte more is refused with the setting named', () => {
  const b = new MemoryBudget(2 * (100 + O));
  const r1 = b.reserve(100);
  assert.equal(b.reserved, 100 + O);
  b.reserve(100);
  assert.equal(b.reserved, b.total, 'exactly at the ceiling');
  assert.throws(() => b.reserve(0), (e) => e instanceof MemoryBudgetError && e.name === 'MemoryBudgetError' &&
    e.message === `no room for another guest: live guests already reserve ${b.total} of the server's ${b.total} bytes ([limits] totalMemoryBytes), and this one needs ${O}; raise the setting, lower [limits] memoryLimitBytes, or end idle sessions`);
  assert.equal(b.reserved, b.total, 'a refusal reserves nothing');
  r1();
  assert.throws(() => b.reserve(101), MemoryBudgetError, 'one byte over');
  assert.doesNotThrow(() => b.reserve(100));
});

test('a release gives back once: calling it again frees nothing another guest holds', () => {
  const b = new MemoryBudget(10 * O);
  const a = b.reserve(O);
  const c = b.reserve(O);
  a();
  a();
  a();
  assert.equal(b.reserved, 2 * O, 'c still holds its part');
  c();
  assert.equal(b.reserved, 0);
});

test('past the ceiling, idle guests are reclaimed for exactly the shortfall; if they free enough, the guest is admitted', () => {
  const asked = [];
  const idle = [];
  const b = new MemoryBudget(3 * O, (bytes) => {
    asked.push(bytes);
    idle.shift()?.(); // the least recently used idle guest
  });
  idle.push(b.reserve(O / 2)); // 1.5 O
  assert.deepEqual(asked, []);
  b.reserve(0); // 2.5 O
  assert.deepEqual(asked, [], 'room enough: nobody reclaimed');
  b.reserve(0); // needs 3.5 O of 3 O: 0.5 O short
  assert.deepEqual(asked, [O / 2]);
  assert.equal(b.reserved, 2 * O, 'the idle guest was freed, the new one admitted');
  // Nothing left to reclaim: refused, and the reclaimer was asked first.
  assert.throws(() => b.reserve(O), MemoryBudgetError);
  assert.deepEqual(asked, [O / 2, O]);
  assert.equal(b.reserved, 2 * O);
});

test('the ceiling holds for any sequence of reservations and releases, and what is reserved is what live guests hold', () => {
  const step = fc.oneof(fc.record({ reserve: fc.integer({ min: 0, max: 4 * O }) }), fc.record({ release: fc.nat(20) }));
  fc.assert(fc.property(fc.integer({ min: O, max: 16 * O }), fc.array(step, { maxLength: 40 }), (total, steps) => {
    const b = new MemoryBudget(total);
    const live = [];
    for (const s of steps) {
      if ('reserve' in s) {
        const fits = b.reserved + s.reserve + O <= total;
        try {
          live.push({ bytes: s.reserve + O, release: b.reserve(s.reserve) });
          assert.ok(fits, 'admitted only when it fits');
        } catch (e) {
          assert.ok(e instanceof MemoryBudgetError && !fits, 'refused only when it does not fit');
        }
      } else if (live.length > 0) {
        const [g] = live.splice(s.release % live.length, 1);
        g.release();
        g.release();
      }
      assert.ok(b.reserved <= total);
      assert.equal(b.reserved, live.reduce((n, g) => n + g.bytes, 0));
    }
  }), { numRuns: 200 });
});
