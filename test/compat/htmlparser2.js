// htmlparser2: the streaming parser's callbacks, entities, and a DOM through parseDocument/DomUtils.
import { DomUtils, Parser, parseDocument } from 'htmlparser2';
import { tool } from './_tool.js';

export const args = {};
const HTML = `<!doctype html><html><head><title>T &amp; co</title></head><body>
<div id="main" class="a b"><p>One &lt;two&gt; &eacute; &#x1F600;<br>three</p><img src=x.png alt='pic'>
<ul><li>a</li><li data-n="2">b<li>c</ul><!-- note --><script>if (a < b) x();</script></div></body></html>`;
export function run() {
  const events = [];
  const parser = new Parser({
    onopentag: (name, attrs) => events.push(['open', name, attrs]),
    ontext: (text) => { if (text.trim()) events.push(['text', text]); },
    onclosetag: (name, implied) => events.push(['close', name, implied]),
    oncomment: (c) => events.push(['comment', c]),
  }, { decodeEntities: true });
  parser.write(HTML.slice(0, 100));
  parser.write(HTML.slice(100));
  parser.end();
  const dom = parseDocument(HTML);
  const lis = DomUtils.getElementsByTagName('li', dom);
  return {
    events,
    title: DomUtils.textContent(DomUtils.getElementsByTagName('title', dom)[0]),
    lis: lis.map((li) => [DomUtils.textContent(li), li.attribs]),
    byId: DomUtils.getAttributeValue(DomUtils.getElementById('main', dom), 'class'),
    outer: DomUtils.getOuterHTML(DomUtils.getElementsByTagName('p', dom)[0]),
    xml: DomUtils.getOuterHTML(parseDocument('<a x="1"><b/></a>', { xmlMode: true }), { xmlMode: true }),
  };
}
tool('htmlparser2', run);
