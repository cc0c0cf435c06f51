// console.log of many kinds of values, run by test/web-platform.test.mjs in Node and in a guest: the printed
// lines must be the same (util.inspect's basics and util.format's placeholders).
class Foo { constructor() { this.a = 1; this.b = 'x'; } }
class Bar extends Foo {}
const circ = { name: 'c' }; circ.self = circ; circ.list = [circ, 1];
const big = { alpha: 'aaaaaaaaaaaaaaaa', beta: 'bbbbbbbbbbbbbbbbbbbb', gamma: 'cccccccccccccccccccc', delta: 12345 };
const vals = [
  'plain', 42, -0, 12n, true, null, undefined, Symbol('s'), [1, 2, 3], [], {}, { a: 1, 'b-c': "it's", [Symbol('k')]: 2 },
  new Map([['a', 1], [{ k: 1 }, [2]]]), new Set([1, 'two']), new Map(), new Set(), new Foo(), new Bar(), Object.create(null),
  Object.assign(Object.create(null), { x: 1 }), function named() {}, () => {}, class K {}, class L extends Foo {}, async function af() {},
  function* gen() {}, /ab+c/gi, new Date(0), new Date(NaN), new Uint8Array([1, 2, 3]), new Float64Array(2), new ArrayBuffer(3),
  Object(1), Object('str'), Object(true), [1, , 3], new Array(5), circ, big, { nested: { deeper: { deepest: { gone: 1 } } } },
  [[1, [2, [3, [4]]]]], Array.from({ length: 30 }, (_, i) => i), Array.from({ length: 10 }, (_, i) => 'item' + i),
  Array.from({ length: 120 }, (_, i) => i), { get g() { return 1; }, set s(v) {}, get gs() { return 1; }, set gs(v) {} },
  'multi\nline', ['quote\'s', 'dq"', 'both\'"'], new WeakMap(), [undefined, null], { fn() {} }, Object.assign(() => {}, { prop: 1 }),
  ['\x85', '\x9f', '\x7f', '\xa0'], ['\ud800', 'a\udfffb', '\ud83d\ude00', { ['k\udbff']: '\udc00' }], { a: [1, 2, { b: new Map([[1, { c: 2 }]]) }] }, Array.from({ length: 8 }, (_, i) => ({ id: i })), [-1.5, 100, 3, 22222, 5, 6, 7],
];
for (const v of vals) console.log(v);
console.log('%s is %d years and %i, %f', 'Bob', 42.5, 42.9, '1.5');
console.log('%j %o', { a: [1] }, [1, { b: 2 }]);
console.log('%s', { a: { b: 1 } }, 'extra', 3);
console.log('100%% sure %c styled', 'color: red');
console.log('missing %s %d');
console.log('a', 1, { b: 2 }, [3], 'c');
console.log(new Error('boom').message);
console.log({ e: new RangeError('r') }.e.name);
