// bignumber.js: arbitrary precision in any base: arithmetic, configuration, rounding and formatting.
import BigNumber from 'bignumber.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const BN = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN });
  const x = new BigNumber('123456789.123456789');
  return {
    sum: new BigNumber(0.1).plus(0.2).toString(),
    mul: x.times('987654321.987654321').toString(),
    div: new BN(1).div(7).toString(),
    pow: new BigNumber(2).pow(200).toString(),
    sqrt: new BN(2).sqrt().toString(),
    bases: [new BigNumber('ff.8', 16).toString(10), new BigNumber(255.5).toString(2), new BigNumber('zz', 36).toNumber()],
    format: x.toFormat(3),
    fixed: [new BigNumber('1.005').toFixed(2), new BigNumber('-2.5').toFixed(0), new BN('2.5').toFixed(0), new BigNumber('1e21').toFixed()],
    fraction: new BigNumber('0.75').toFraction(),
    special: [new BigNumber(NaN).toString(), new BigNumber(1).div(0).toString(), new BigNumber('-0').isNegative()],
    cmp: [x.comparedTo('1e8'), x.isInteger(), x.decimalPlaces(), x.integerValue(BigNumber.ROUND_CEIL).toString()],
  };
}
tool('bignumber-js', run);
