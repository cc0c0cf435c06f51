// ulid: ids from a fixed time and a seeded generator (monotonic in one millisecond), time decoding, and real ids.
import { decodeTime, isValid, monotonicFactory, ulid } from 'ulid';
import { tool } from './_tool.js';

export const args = {};
function seeded(seed) {
  return () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
}
export function run() {
  const next = monotonicFactory(seeded(42));
  const t = Date.UTC(2024, 1, 29, 13, 45, 30, 123);
  const fixed = [next(t), next(t), next(t + 1)];
  const real = ulid();
  return {
    fixed,
    one: ulid(t, seeded(7)),
    decoded: decodeTime(fixed[0]),
    sorted: [...fixed].sort().join() === fixed.join(),
    real: [isValid(real), real.length, Math.abs(decodeTime(real) - Date.now()) < 60000],
    invalid: isValid('not a ulid'),
  };
}
tool('ulid', run);
