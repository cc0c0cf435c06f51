// linkedom: an HTML document parsed, queried with selectors, changed through the DOM and serialised; and XML.
import { DOMParser, parseHTML } from 'linkedom';
import { tool } from './_tool.js';

export const args = {};
const HTML = '<!doctype html><html><head><title>T</title></head><body><ul id="l"><li class="a">one</li><li class="b" data-n="2">two &amp; three</li></ul><p>para <b>bold</b></p></body></html>';
export function run() {
  const { document } = parseHTML(HTML);
  const items = [...document.querySelectorAll('#l li')].map((li) => [li.className, li.textContent, li.dataset.n ?? null]);
  const li = document.createElement('li');
  li.textContent = '<four>';
  li.setAttribute('title', 'x"y');
  document.getElementById('l').append(li);
  document.querySelector('.a').remove();
  document.querySelector('p').classList.add('c1', 'c2');
  const xml = new DOMParser().parseFromString('<r><i a="1">x</i><i/></r>', 'text/xml');
  return {
    doctype: String(document.doctype),
    title: document.title,
    items,
    list: document.getElementById('l').outerHTML,
    p: [document.querySelector('p').className, document.querySelector('p b').innerHTML, document.querySelector('li:last-child').getAttribute('title')],
    count: document.getElementsByTagName('li').length,
    closest: document.querySelector('b').closest('body').tagName,
    whole: document.toString(),
    xml: [xml.querySelectorAll('i').length, xml.documentElement.toString()],
  };
}
tool('linkedom', run);
