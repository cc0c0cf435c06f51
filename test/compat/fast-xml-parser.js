// fast-xml-parser: parsing with attributes and entities, validating, building.
import { XMLBuilder, XMLParser, XMLValidator } from 'fast-xml-parser';
import { tool } from './_tool.js';

export const args = {};
const XML = `<?xml version="1.0"?>
<catalog xmlns:x="urn:x">
  <book id="bk101" available="true"><author>Gambardella &amp; Co</author><price>44.95</price><x:tag>a</x:tag></book>
  <book id="bk102"><author>Ralls</author><price>5</price><![CDATA[<raw> & stuff]]><!-- c --></book>
</catalog>`;
export function run() {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseAttributeValue: true, cdataPropName: '#cdata', commentPropName: '#comment' });
  const obj = parser.parse(XML);
  return {
    obj,
    plain: new XMLParser().parse(XML),
    valid: XMLValidator.validate(XML),
    invalid: XMLValidator.validate('<a><b></a>'),
    built: new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', format: true }).build({ root: { '@_v': 1, item: ['a', 'b & c'], empty: '' } }),
  };
}
tool('fast-xml-parser', run);
