// immutable: persistent Map, List, Set, Record and Seq: updates, deep paths, equality, and lazy sequences.
import { List, Map, OrderedMap, Range, Record, Seq, Set, fromJS, is } from 'immutable';
import { tool } from './_tool.js';

export const args = {};
const Point = Record({ x: 0, y: 0 });
export function run() {
  const m1 = Map({ a: 1, b: 2, c: 3 });
  const m2 = m1.set('b', 50).delete('c');
  const deep = fromJS({ user: { name: 'Ada', tags: ['x', 'y'] } });
  const list = List([5, 3, 8, 1]).push(9).unshift(0);
  return {
    m1: m1.toJS(),
    m2: m2.toJS(),
    same: [m1 === m1.set('a', 1), is(Map({ a: 1 }), Map({ a: 1 })), m1.equals(m2)],
    deep: deep.setIn(['user', 'name'], 'Grace').updateIn(['user', 'tags'], (t) => t.push('z')).toJS(),
    getIn: deep.getIn(['user', 'tags', 1]),
    list: [list.toArray(), list.sort().toArray(), list.filter((x) => x > 3).map((x) => x * 2).toArray(), list.reduce((a, x) => a + x, 0)],
    set: Set([1, 2, 3]).union([3, 4]).subtract([1]).toArray(),
    record: (() => { const p = new Point({ x: 3 }); return [p.x, p.y, p.set('y', 4).toJS()]; })(),
    seq: Seq(Range(1, Infinity)).filter((x) => x % 3 === 0).map((x) => x * x).take(5).toArray(),
    ordered: OrderedMap([['z', 1], ['a', 2]]).set('m', 3).keySeq().toArray(),
    merge: Map({ a: Map({ b: 1 }) }).mergeDeep({ a: { c: 2 } }).toJS(),
    hash: Map({ a: 1 }).hashCode() === Map({ a: 1 }).hashCode(),
  };
}
tool('immutable', run);
