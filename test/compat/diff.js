// diff (jsdiff): character, word, line and JSON diffs; unified patches created and applied.
import { applyPatch, createTwoFilesPatch, diffChars, diffJson, diffLines, diffWords, parsePatch, structuredPatch } from 'diff';
import { tool } from './_tool.js';

export const args = {};
const A = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
const B = 'one\n2\nthree\nfour\nfive\nsix\nseven\neight\n';
export function run() {
  const patch = createTwoFilesPatch('a.txt', 'b.txt', A, B, 'old', 'new');
  return {
    chars: diffChars('kitten', 'sitting'),
    words: diffWords('the quick brown fox', 'the slow brown dog'),
    lines: diffLines(A, B).map((p) => [p.added, p.removed, p.count]),
    json: diffJson({ a: 1, b: [1, 2] }, { a: 1, b: [1, 3], c: true }),
    patch,
    applied: applyPatch(A, patch) === B,
    structured: structuredPatch('a', 'b', A, B).hunks,
    parsed: parsePatch(patch)[0].hunks.length,
  };
}
tool('diff', run);
