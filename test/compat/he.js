// he: HTML entity encoding and decoding with its options, named, numeric and legacy references.
import he from 'he';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const s = 'foo © bar ≠ baz 𝌆 qux <a href="x">&</a> \'';
  return {
    encode: he.encode(s),
    named: he.encode(s, { useNamedReferences: true }),
    decimal: he.encode(s, { decimal: true, allowUnsafeSymbols: true }),
    everything: he.encode('abc✓', { encodeEverything: true }),
    decode: he.decode('foo &copy; bar &ne; baz &#x1D306; qux &amp;lt; &notin; &amp &#0; &ampfoo'),
    attribute: he.decode('&amp;foo=&notit;', { isAttributeValue: true }),
    escape: he.escape('<img src=\'x\' onerror="y">&'),
    unescape: he.unescape('&lt;b&gt;&quot;&#39;'),
  };
}
tool('he', run);
