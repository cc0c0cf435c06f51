// qs: nested query strings both ways, with arrays, depth limits and charsets.
import qs from 'qs';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  return {
    parse: qs.parse('a[b][c]=d&e[]=1&e[]=2&f[0][g]=h&plain=%E2%9C%93&sp=a+b'),
    depth: qs.parse('a[b][c][d][e][f][g]=x', { depth: 2 }),
    dots: qs.parse('a.b=c&list=1,2', { allowDots: true, comma: true }),
    stringify: qs.stringify({ a: { b: ['x', 'y'], c: null }, d: 'ä &', e: undefined, f: true }),
    brackets: qs.stringify({ a: [1, 2] }, { arrayFormat: 'brackets', encodeValuesOnly: true }),
    latin1: qs.parse('a=%E9', { charset: 'iso-8859-1' }),
    proto: Object.keys(qs.parse('__proto__[x]=1&toString=2')),
  };
}
tool('qs', run);
