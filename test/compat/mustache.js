// mustache: sections, inverted sections, partials, escaping, lambdas, custom tags.
import Mustache from 'mustache';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const view = { name: 'Ann & <co>', items: [{ n: 1 }, { n: 2 }], none: [], wrap: () => (text, render) => `<b>${render(text)}</b>`, nested: { deep: { v: 'd' } } };
  return {
    basic: Mustache.render('Hi {{name}} / {{{name}}} / {{&name}}', view),
    sections: Mustache.render('{{#items}}[{{n}}]{{/items}}{{^none}}empty{{/none}}{{#nested.deep}}{{v}}{{/nested.deep}}', view),
    lambda: Mustache.render('{{#wrap}}{{name}}{{/wrap}}', view),
    partial: Mustache.render('{{>row}}', view, { row: '<{{#items}}{{n}},{{/items}}>' }),
    tags: Mustache.render('<%name%>', view, {}, ['<%', '%>']),
    parsed: Mustache.parse('a {{b}} {{#c}}d{{/c}}'),
  };
}
tool('mustache', run);
