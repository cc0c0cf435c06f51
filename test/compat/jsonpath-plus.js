// jsonpath-plus: JSONPath queries with wildcards, recursive descent, slices, filters, and result types.
import { JSONPath } from 'jsonpath-plus';
import { tool } from './_tool.js';

export const args = {};
const STORE = { store: {
  book: [
    { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
    { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
    { category: 'fiction', author: 'Herman Melville', title: 'Moby Dick', isbn: '0-553-21311-3', price: 8.99 },
    { category: 'fiction', author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', isbn: '0-395-19395-8', price: 22.99 },
  ],
  bicycle: { color: 'red', price: 19.95 },
} };
export function run() {
  const q = (path, extra) => JSONPath({ path, json: STORE, ...extra });
  return {
    authors: q('$.store.book[*].author'),
    all: q('$..price'),
    slice: q('$..book[-2:].title'),
    filter: q('$..book[?(@.price < 10)].title'),
    isbn: q('$..book[?(@.isbn)].isbn'),
    paths: q('$.store.*', { resultType: 'path' }),
    pointer: q('$..bicycle.color', { resultType: 'pointer' }),
    parent: q('$..book[0].title^', { resultType: 'value' }).length,
    wrap: q('$.store.bicycle.color', { wrap: false }),
  };
}
tool('jsonpath-plus', run);
