// liquidjs: Liquid templates with filters, loops, conditionals, assignments, custom filters and partials in memory.
import { Liquid } from 'liquidjs';
import { tool } from './_tool.js';

export const args = {};
export async function run() {
  const engine = new Liquid({ templates: { card: '[{{ p.name | upcase }}: {{ p.price | times: 1.2 | round: 2 }}]' }, strictFilters: true });
  engine.registerFilter('shout', (s) => `${s}!`);
  const ctx = { user: { name: 'ada <lovelace>' }, products: [{ name: 'tea', price: 3.5 }, { name: 'cake', price: 12 }], when: '2024-02-29T13:45:30Z' };
  return {
    basic: await engine.parseAndRender('Hello {{ user.name | capitalize | escape }}{{ "x" | shout }}', ctx),
    loop: await engine.parseAndRender('{% for p in products reversed %}{{ forloop.index }}.{{ p.name }}{% unless forloop.last %}, {% endunless %}{% endfor %}', ctx),
    logic: await engine.parseAndRender('{% assign total = 0 %}{% for p in products %}{% assign total = total | plus: p.price %}{% endfor %}{% if total > 10 %}big {{ total }}{% else %}small{% endif %}', ctx),
    partial: await engine.parseAndRender('{% for p in products %}{% render "card", p: p %}{% endfor %}', ctx),
    filters: await engine.parseAndRender('{{ "a,b,c" | split: "," | reverse | join: "-" }} {{ 1234.5678 | floor }} {{ "hello world" | truncate: 8 }} {{ when | date: "%Y-%m-%d %H:%M" }}', ctx),
    sync: engine.parseAndRenderSync('{% case x %}{% when 1 %}one{% else %}other{% endcase %}', { x: 1 }),
    error: await engine.parseAndRender('{{ x | nofilter }}', {}).catch((e) => e.message),
  };
}
tool('liquidjs', run);
