// pluralize: plurals and singulars, counts, irregular and uncountable words, and custom rules.
import pluralize from 'pluralize';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const words = ['test', 'person', 'child', 'octopus', 'matrix', 'sheep', 'Wolf', 'CHURCH', 'quiz', 'analysis', 'criterion', 'bus', 'knife', 'status'];
  pluralize.addIrregularRule('thesis', 'theses');
  pluralize.addUncountableRule('paper');
  pluralize.addPluralRule(/gex$/i, 'gexii');
  return {
    plural: words.map((w) => pluralize(w)),
    singular: words.map((w) => pluralize.singular(pluralize(w))),
    counts: [pluralize('test', 1), pluralize('test', 5, true), pluralize('person', 0, true)],
    checks: [pluralize.isPlural('geese'), pluralize.isSingular('geese'), pluralize.isPlural('sheep')],
    custom: [pluralize('thesis'), pluralize('paper'), pluralize('regex')],
  };
}
tool('pluralize', run);
