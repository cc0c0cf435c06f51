// entities: encoding and decoding HTML and XML entities in their modes and levels.
import { DecodingMode, EncodingMode, EntityLevel, decode, decodeHTML, decodeHTMLStrict, decodeXML, encode, encodeHTML, encodeNonAsciiHTML, escapeUTF8 } from 'entities';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const s = '<p class="a">Tom & Jerry © 2024 — ünïcödé 😀</p>';
  return {
    encodeXML: encode(s),
    encodeHTML: encodeHTML(s),
    nonAscii: encodeNonAsciiHTML(s),
    utf8: escapeUTF8(s),
    extensive: encode(s, { level: EntityLevel.HTML, mode: EncodingMode.Extensive }),
    decodeHTML: decodeHTML('&lt;b&gt;&amp;amp; &copy &notin; &#x1F600; &#128512; &#xZZ; &NotNestedLessLess;'),
    strict: decodeHTMLStrict('&copy &copy; &amp'),
    attribute: decode('&amp;foo=&notit;', { level: EntityLevel.HTML, mode: DecodingMode.Attribute }),
    decodeXML: decodeXML('&lt;&gt;&amp;&apos;&quot;&copy;'),
  };
}
tool('entities', run);
