// xml2js: XML parsed to objects (callback and promise, attributes, options) and objects built back into XML.
import { Builder, parseString, parseStringPromise, processors } from 'xml2js';
import { tool } from './_tool.js';

export const args = {};
const XML = `<?xml version="1.0"?><catalog xmlns:x="urn:x"><book id="b1" lang="en"><title>Dune</title><price>9.99</price><x:tag>sf</x:tag></book>
<book id="b2"><title>Emma &amp; more</title><price>12</price><note><![CDATA[<raw>]]></note></book></catalog>`;
export async function run() {
  const callback = await new Promise((resolve, reject) => parseString(XML, (err, r) => (err ? reject(err) : resolve(r))));
  const options = await parseStringPromise(XML, { explicitArray: false, mergeAttrs: true, valueProcessors: [processors.parseNumbers], tagNameProcessors: [processors.stripPrefix] });
  const error = await parseStringPromise('<a><b></a>').catch((e) => e.message.split('\n')[0]);
  const built = new Builder({ rootName: 'order', renderOpts: { pretty: true, indent: '  ', newline: '\n' }, xmldec: { version: '1.0', encoding: 'UTF-8' } })
    .buildObject({ $: { id: 7 }, item: [{ _: 'tea', $: { qty: 2 } }, { _: 'cake & co' }], note: '<b>' });
  return { callback, options, error, built };
}
tool('xml2js', run);
