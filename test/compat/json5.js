// json5: parse the extended syntax, stringify with quotes and spacing, errors with positions.
import JSON5 from 'json5';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  let error;
  try {
    JSON5.parse('{a: 1,, }');
  } catch (e) {
    error = [e.name, e.message, e.lineNumber, e.columnNumber];
  }
  const parsed = JSON5.parse("// c\n{unquoted: 'single', trailing: [1, 2,], hex: 0xFF, lead: .5, plus: +1, inf: Infinity, nan: NaN, 'e\\u0301': \"\\x41\", multi: 'a\\\nb', /* x */}");
  return {
    parsed: { ...parsed, inf: String(parsed.inf), nan: String(parsed.nan) },
    stringify: JSON5.stringify({ a: 1, 'b-c': "it's", d: [Infinity, null], e: { f: 'g' } }, null, 2),
    quote: JSON5.stringify({ s: 'x"y\'' }, { quote: '"' }),
    error,
  };
}
tool('json5', run);
