// markdown-it: CommonMark with linkify and typographer, tokens, and a plugin-style rule.
import MarkdownIt from 'markdown-it';
import { tool } from './_tool.js';

export const args = {};
const MD = '# Héading\n\n"Smart" quotes -- (c) www.example.com and <span>html</span>\n\n1. one\n2. two\n\n```\ncode <x>\n```\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\n[link](javascript:alert(1)) ![img](x.png "t") <https://a.b/c?d=e&f>\n';
export function run() {
  const md = new MarkdownIt({ linkify: true, typographer: true });
  md.renderer.rules.heading_open = (tokens, idx) => `<${tokens[idx].tag} id="h${idx}">`;
  return {
    html: md.render(MD),
    safe: new MarkdownIt().render(MD),
    inline: md.renderInline('*a* `b` ~c~'),
    tokens: md.parse(MD, {}).map((t) => `${t.type}:${t.tag}`),
    punycode: md.normalizeLinkText('http://xn--n3h.com/'),
  };
}
tool('markdown-it', run);
