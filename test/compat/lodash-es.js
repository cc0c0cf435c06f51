// lodash-es: collections, objects, strings, and `template` (which compiles with `Function`).
import { camelCase, chunk, cloneDeep, groupBy, kebabCase, merge, orderBy, partition, range, set, sortBy, template, uniqBy, zip, get, debounce, isEqual, words } from 'lodash-es';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const people = [{ n: 'b', a: 3 }, { n: 'a', a: 1 }, { n: 'c', a: 3 }, { n: 'a', a: 2 }];
  const o = { a: { b: [1, { c: 2 }] } };
  const copy = cloneDeep(o);
  copy.a.b[1].c = 9;
  return {
    chunk: chunk(range(10), 3),
    groupBy: groupBy(people, 'a'),
    sortBy: sortBy(people, ['n', 'a']),
    orderBy: orderBy(people, ['a', 'n'], ['desc', 'asc']),
    partition: partition(range(8), (x) => x % 3 === 0),
    uniqBy: uniqBy(people, 'n'),
    zip: zip(['a', 'b'], [1, 2], [true]),
    merge: merge({ a: { x: 1 }, l: [1, 2] }, { a: { y: 2 }, l: [3] }),
    cloneDeep: [o.a.b[1].c, copy.a.b[1].c],
    get: [get(o, 'a.b[1].c'), get(o, 'a.z.q', 'dflt')],
    set: set({}, 'x[0].y.z', 5),
    strings: [camelCase('Foo Bar-baz_qux'), kebabCase('fooBarBaz'), words('hello, wörld! déjà-vu')],
    template: template('<% for (const p of people) { %><%- p.n %>=<%= p.a %>;<% } %> ${x}')({ people, x: '<&>' }),
    isEqual: [isEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), isEqual([1], ['1'])],
    debounce: typeof debounce(() => 1, 10),
  };
}
tool('lodash-es', run);
