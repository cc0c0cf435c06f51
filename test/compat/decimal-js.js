// decimal.js: arbitrary-precision arithmetic, rounding modes, transcendental functions.
import Decimal from 'decimal.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const D = Decimal.clone({ precision: 50, rounding: Decimal.ROUND_HALF_EVEN });
  return {
    sum: new D('0.1').plus('0.2').toString(),
    div: new D(1).div(7).toString(),
    sqrt2: new D(2).sqrt().toString(),
    pi: D.acos(-1).toFixed(45),
    exp: new D(1).exp().toSignificantDigits(40).toString(),
    ln: new D(10).ln().toString(),
    pow: new D('1.0001').pow(10000).toFixed(20),
    round: ['2.5', '3.5', '-2.5'].map((x) => new D(x).toDecimalPlaces(0).toString()),
    modes: [new Decimal('1.005').toFixed(2, Decimal.ROUND_HALF_UP), new Decimal('1.005').toFixed(2, Decimal.ROUND_DOWN)],
    big: new D('123456789012345678901234567890').times('987654321098765432109876543210').toString(),
    hex: new D(255.5).toHex(), frac: new D('0.75').toFraction(),
  };
}
tool('decimal-js', run);
