// ini: parsing sections, nested sections, arrays, quoting and comments, and encoding back.
import { decode, encode, safe, unsafe } from 'ini';
import { tool } from './_tool.js';

export const args = {};
const TEXT = `; comment
scope = global
flag
[database]
user = dbuser
password = "p;ss word"
port = 5432
[paths.default]
datadir = /var/lib/data
array[] = first
array[] = second
[a\\.b]
key = 'quoted'
`;
export function run() {
  const parsed = decode(TEXT);
  return {
    parsed,
    encoded: encode(parsed),
    whitespace: encode({ x: { y: 1 }, z: 'two words' }, { whitespace: false, section: 'top' }),
    safe: [safe('a;b'), unsafe('"a\\;b"'), safe(' lead')],
  };
}
tool('ini', run);
