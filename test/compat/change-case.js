// change-case: word splitting (Unicode-aware) and every case style.
import { camelCase, capitalCase, constantCase, dotCase, kebabCase, noCase, pascalCase, pascalSnakeCase, pathCase, sentenceCase, snakeCase, split, trainCase } from 'change-case';
import { tool } from './_tool.js';

export const args = {};
const INPUTS = ['fooBarBaz', 'XMLHttpRequest v2', 'ünïcode Wörds_here', '  __lead-and trail__ ', 'version 1.2.3', 'ABC123def'];
export function run() {
  const fns = { camelCase, capitalCase, constantCase, dotCase, kebabCase, noCase, pascalCase, pascalSnakeCase, pathCase, sentenceCase, snakeCase, trainCase };
  return {
    split: INPUTS.map((s) => split(s)),
    cases: Object.fromEntries(Object.entries(fns).map(([k, f]) => [k, INPUTS.map((s) => f(s))])),
    options: [camelCase('a 1 b', { mergeAmbiguousCharacters: true }), snakeCase('fooBar2Baz', { separateNumbers: true }), kebabCase('ÀB ÇD', { locale: false })],
  };
}
tool('change-case', run);
