// fuse.js: fuzzy search with weighted keys, scores, match indices and extended search.
import Fuse from 'fuse.js';
import { tool } from './_tool.js';

export const args = {};
const BOOKS = [
  { title: "Old Man's War", author: { name: 'John Scalzi' }, tags: ['sf'] },
  { title: 'The Lock Artist', author: { name: 'Steve Hamilton' }, tags: ['crime'] },
  { title: 'HTML5', author: { name: 'Remy Sharp' }, tags: ['web'] },
  { title: 'Right Ho Jeeves', author: { name: 'P.D. Woodhouse' }, tags: ['humour'] },
  { title: 'The Code of the Wooster', author: { name: 'P.D. Woodhouse' }, tags: ['humour'] },
];
export function run() {
  const fuse = new Fuse(BOOKS, { keys: [{ name: 'title', weight: 2 }, 'author.name', 'tags'], includeScore: true, includeMatches: true, threshold: 0.4 });
  const ext = new Fuse(BOOKS, { keys: ['title', 'author.name'], useExtendedSearch: true });
  return {
    fuzzy: fuse.search('woodhose'),
    limited: fuse.search('the', { limit: 2 }).map((r) => r.refIndex),
    extended: ext.search("'Man | ^HTML").map((r) => r.item.title),
    logical: ext.search({ $and: [{ 'author.name': 'woodhouse' }, { title: '!Jeeves' }] }).map((r) => r.item.title),
  };
}
tool('fuse-js', run);
