// turndown: HTML to Markdown with its options, a custom rule and escapes. It parses with `window.DOMParser`
// when it finds one as it loads; otherwise its browser build (the one kiln bundles) needs a `document` with
// `implementation.createHTMLDocument`, which linkedom's lacks, so the fixture lends it linkedom's window as it
// loads. Node's build takes the same DOMParser, so both sides parse with linkedom.
import './_lend-window.js';
import TurndownService from 'turndown';
import './_return-window.js';
import { tool } from './_tool.js';

export const args = {};
const HTML = `<h1>Title</h1><p>Some <em>emphasis</em>, <strong>strong</strong> and <code>code</code>. 1. not a list * star</p>
<ul><li>one</li><li>two <a href="https://example.org" title="T">link</a></li></ul><ol start="3"><li>three</li></ol>
<blockquote><p>quoted</p></blockquote><pre><code class="language-js">const x = 1;\n</code></pre><hr><p>img <img src="a.png" alt="A"> <del>gone</del></p>`;
export function run() {
  const plain = new TurndownService();
  const styled = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-', emDelimiter: '*', linkStyle: 'referenced' });
  styled.addRule('del', { filter: ['del', 's'], replacement: (content) => `~~${content}~~` });
  styled.remove('img');
  return { plain: plain.turndown(HTML), styled: styled.turndown(HTML), escape: plain.escape('# not *a* heading_'), window: typeof window };
}
tool('turndown', run);
