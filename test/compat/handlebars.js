// handlebars: compiling templates with helpers, partials, blocks and escaping.
import Handlebars from 'handlebars';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const hb = Handlebars.create();
  hb.registerHelper('upper', (s) => String(s).toUpperCase());
  hb.registerHelper('eq', (a, b) => a === b);
  hb.registerPartial('item', '<li class="{{#if done}}done{{/if}}">{{upper name}} {{@index}}</li>');
  const template = hb.compile('<h1>{{title}}</h1>{{!-- c --}}<ul>{{#each items}}{{> item}}{{else}}<li>none</li>{{/each}}</ul>{{#with owner}}{{first}} {{{raw}}}{{/with}}{{#if (eq n 2)}} two{{/if}}');
  return {
    html: template({ title: 'A & <B>', items: [{ name: 'x', done: true }, { name: 'y' }], owner: { first: 'Ann', raw: '<i>r</i>' }, n: 2 }),
    empty: template({ title: '', items: [] }),
    precompiled: typeof hb.precompile('{{a}}'),
    safe: new hb.SafeString('<b>').toString(),
    escape: hb.escapeExpression('<a href="x">&\'`='),
  };
}
tool('handlebars', run);
