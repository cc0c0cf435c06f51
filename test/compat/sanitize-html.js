// sanitize-html: untrusted HTML cleaned by the default and custom allow-lists, transforms, styles and text filters.
import sanitizeHtml from 'sanitize-html';
import { tool } from './_tool.js';

export const args = {};
const DIRTY = `<h1 onclick="x()">Title</h1><script>alert(1)</script><p style="color: red; position: fixed">Hi <a href="javascript:alert(1)">bad</a> <a href="https://example.org/x" target="_blank">good</a></p>
<img src="data:image/png;base64,AAAA" alt="i"><iframe src="https://evil"></iframe><b>bold</b><!-- comment --><table><tr><td>c</td></tr></table>`;
export function run() {
  return {
    defaults: sanitizeHtml(DIRTY),
    custom: sanitizeHtml(DIRTY, {
      allowedTags: ['p', 'a', 'b', 'img'],
      allowedAttributes: { a: ['href', 'target'], img: ['src', 'alt'], p: ['style'] },
      allowedSchemes: ['https', 'data'],
      allowedStyles: { p: { color: [/^red$/] } },
      transformTags: { b: 'strong', a: sanitizeHtml.simpleTransform('a', { rel: 'noopener' }) },
    }),
    text: sanitizeHtml(DIRTY, { allowedTags: [], allowedAttributes: {} }),
    filter: sanitizeHtml('<p>keep</p><p></p><p>drop me</p>', { exclusiveFilter: (frame) => frame.tag === 'p' && (!frame.text.trim() || frame.text.includes('drop')) }),
    escape: sanitizeHtml('<unknown>x</unknown> & <b>y</b>', { disallowedTagsMode: 'escape' }),
  };
}
tool('sanitize-html', run);
