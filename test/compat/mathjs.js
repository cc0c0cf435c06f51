// mathjs: expression parsing and evaluation with scope, units, matrices, fractions, bignumbers and symbolic derivatives.
import { all, create } from 'mathjs';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const math = create(all, { number: 'number', precision: 64 });
  const big = create(all, { number: 'BigNumber', precision: 40 });
  const scope = { x: 3 };
  math.evaluate('f(a, b) = a ^ 2 + b', scope);
  return {
    evaluate: math.evaluate(['sqrt(3^2 + 4^2)', '2 inch to cm', 'det([1, 2; 3, 4])', 'f(x, 1)', 'sin(pi / 6)', '5 % 3', '10!'], scope).map(String),
    units: math.format(math.evaluate('9.81 m/s^2 * 70 kg'), { precision: 6 }),
    matrix: math.multiply(math.matrix([[1, 2], [3, 4]]), math.inv(math.matrix([[2, 0], [0, 2]]))).toJSON().data,
    fraction: math.format(math.add(math.fraction(1, 3), math.fraction(1, 6))),
    bignumber: big.evaluate('1 / 3').toString(),
    derivative: math.derivative('x^3 + 2x^2 * sin(x)', 'x').toString(),
    simplify: math.simplify('2x + 3x + x * y * 0').toString(),
    complex: math.sqrt(-4).toString(),
    stats: [math.mean([1, 2, 3, 4]), math.median([5, 1, 3]), math.std([2, 4, 4, 4, 5, 5, 7, 9])],
    parse: math.parse('a * (b + 2)').toTex(),
    error: (() => { try { math.evaluate('1 +'); return 'none'; } catch (e) { return e.message; } })(),
  };
}
tool('mathjs', run);
