// papaparse: CSV with headers, quoting, typing, errors; and unparse.
import Papa from 'papaparse';
import { tool } from './_tool.js';

export const args = {};
const CSV = 'name,age,city,note\r\n"Smith, J",42,"New\nYork","say ""hi"""\r\nDoe,,Paris,\r\nX,3.5e2,Rome,true\r\nshort,1\r\n';
export function run() {
  const typed = Papa.parse(CSV, { header: true, dynamicTyping: true, skipEmptyLines: true });
  return {
    data: typed.data,
    errors: typed.errors.map((e) => [e.type, e.code, e.row]),
    fields: typed.meta.fields,
    raw: Papa.parse('a;b;c\n1;2;3', { delimiter: '' }).data,
    detected: Papa.parse('a;b;c\n1;2;3').meta.delimiter,
    unparse: Papa.unparse([{ a: 1, b: 'x,y' }, { a: 2, b: 'q"uote' }]),
    transform: Papa.parse('A,B\n1,2', { header: true, transformHeader: (h) => h.toLowerCase(), transform: (v) => `<${v}>` }).data,
  };
}
tool('papaparse', run);
