// marked: GitHub-flavoured Markdown to HTML, and the lexer.
import { marked } from 'marked';
import { tool } from './_tool.js';

export const args = {};
const MD = `# Title *with* emphasis

Some \`code\`, **bold**, a [link](https://example.com "t") and <b>html</b>.

| a | b |
|---|:-:|
| 1 | 2 |

- [x] done
- [ ] todo
  1. nested

\`\`\`js
const x = 1 < 2;
\`\`\`

> quote
~~gone~~ https://auto.link/path
`;
export function run() {
  return {
    html: marked.parse(MD, { async: false }),
    inline: marked.parseInline('_a_ & <b>'),
    tokens: marked.lexer(MD).map((t) => t.type),
  };
}
tool('marked', run);
