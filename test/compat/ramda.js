// ramda: currying, composition, lenses and list functions.
import * as R from 'ramda';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const people = [{ name: 'ann', age: 31, team: 'a' }, { name: 'bob', age: 25, team: 'b' }, { name: 'cy', age: 40, team: 'a' }];
  const nameLens = R.lensProp('name');
  return {
    pipe: R.pipe(R.filter(R.propSatisfies(R.gt(R.__, 26), 'age')), R.map(R.prop('name')), R.join('+'))(people),
    groupBy: R.map(R.pluck('name'), R.groupBy(R.prop('team'), people)),
    sortWith: R.sortWith([R.ascend(R.prop('team')), R.descend(R.prop('age'))], people).map(R.prop('name')),
    lens: R.over(nameLens, R.toUpper, people[0]),
    evolve: R.evolve({ age: R.inc, tags: R.append('x') }, { age: 1, tags: [] }),
    curry: R.curry((a, b, c) => a + b * c)(1)(2)(3),
    mergeDeep: R.mergeDeepRight({ a: { b: 1, c: [1] } }, { a: { c: [2] } }),
    misc: [R.range(0, 5), R.aperture(2, [1, 2, 3]), R.uniqBy(Math.abs, [-1, 1, 2]), R.equals({ a: [1] }, { a: [1] }), R.path(['a', 0, 'b'], { a: [{ b: 9 }] })],
    transduce: R.transduce(R.compose(R.map(R.add(1)), R.take(3)), R.flip(R.append), [], [1, 2, 3, 4, 5]),
  };
}
tool('ramda', run);
