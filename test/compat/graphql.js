// graphql: build a schema from SDL, execute queries with variables, fragments and errors, validate, print.
import { buildSchema, graphqlSync, parse, print, validate } from 'graphql';
import { tool } from './_tool.js';

export const args = {};
const SDL = `type Query { book(id: ID!): Book, books(first: Int = 2): [Book!]! }
type Book { id: ID!, title: String!, author: Author, tags: [String!]! }
type Author { name: String!, born: Int }`;
const BOOKS = [
  { id: '1', title: 'Dune', author: { name: 'Herbert', born: 1920 }, tags: ['sf'] },
  { id: '2', title: 'Emma', author: { name: 'Austen', born: 1775 }, tags: ['classic', 'romance'] },
  { id: '3', title: 'Ubik', author: null, tags: [] },
];
export function run() {
  const schema = buildSchema(SDL);
  const root = { book: ({ id }) => BOOKS.find((b) => b.id === id), books: ({ first }) => BOOKS.slice(0, first) };
  const q = (source, variableValues) => JSON.parse(JSON.stringify(graphqlSync({ schema, source, rootValue: root, variableValues })));
  return {
    one: q('query($id: ID!) { book(id: $id) { title author { name born } } }', { id: '2' }),
    list: q('{ books(first: 3) { ...F } } fragment F on Book { id tags author { name } }'),
    missing: q('{ book(id: "9") { title } }'),
    error: q('{ book { nope } }'),
    badVar: q('query($id: ID!) { book(id: $id) { title } }', {}),
    validate: validate(schema, parse('{ books { title title2 } }')).map((e) => e.message),
    print: print(parse('query Q{books(first:1){id,title}}')),
  };
}
tool('graphql', run);
