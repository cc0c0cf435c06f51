// ms: durations parsed from strings and formatted in short and long forms.
import ms from 'ms';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  return {
    parse: ['2 days', '1d', '10h', '2.5 hrs', '2h', '1m', '5s', '1y', '100', '-3 days', '-200', '1 week', 'nope'].map((s) => ms(s)),
    short: [60000, 2 * 60000, -3 * 60000, ms('10 hours'), 500, 1e12].map((n) => ms(n)),
    long: [60000, 2 * 60000, -3 * 60000, ms('10 hours'), 1000, 36e5 * 24 * 3].map((n) => ms(n, { long: true })),
    error: (() => { try { ms(''); return 'none'; } catch (e) { return e.message; } })(),
  };
}
tool('ms', run);
