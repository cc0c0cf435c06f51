// big.js: arbitrary-precision decimals: arithmetic, rounding modes, comparisons, and string forms.
import Big from 'big.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const x = new Big('0.1');
  const D = Big();
  D.DP = 30;
  return {
    sum: x.plus('0.2').toString(),
    mul: new Big('123456789.123456789').times('987654321.987654321').toString(),
    div: new Big(1).div(3).toString(),
    div30: new D(1).div(7).toString(),
    pow: new Big('1.1').pow(20).toFixed(10),
    sqrt: new Big(2).sqrt().toString(),
    round: [[1.5, 0], [2.5, 0], [-2.5, 0], [1.005, 2]].map(([v, dp]) => [Big.roundDown, Big.roundHalfUp, Big.roundHalfEven, Big.roundUp].map((m) => new Big(v).round(dp, m).toString())),
    cmp: [x.cmp('0.10'), x.eq('1e-1'), x.gt(0.09), new Big(-0).toString()],
    forms: [new Big('12345.6789').toExponential(3), new Big('1e-9').toFixed(12), new Big('1e+25').toPrecision(3), new Big('1e-9').toString()],
    err: (() => { try { new Big('abc'); return 'none'; } catch (e) { return e.message; } })(),
  };
}
tool('big-js', run);
