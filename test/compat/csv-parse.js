// csv-parse: the callback, stream and sync APIs on the same CSV: columns, casting, quoting, comments, and errors.
import { parse } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import { tool } from './_tool.js';

export const args = {};
const CSV = '# people\nname,age,city\n"Smith, J",42,"New\nYork"\nDoe,,Paris\n"say ""hi""",3.5,Rome\n';
const OPTIONS = { columns: true, comment: '#', cast: true, skip_empty_lines: true };
export async function run() {
  const callback = await new Promise((resolve, reject) => parse(CSV, OPTIONS, (err, records) => (err ? reject(err) : resolve(records))));
  const streamed = [];
  const parser = parse({ delimiter: ';', from_line: 2 });
  await new Promise((resolve, reject) => {
    parser.on('readable', () => { for (let r = parser.read(); r !== null; r = parser.read()) streamed.push(r); });
    parser.on('error', reject);
    parser.on('end', resolve);
    for (const chunk of ['h1;h2\n', 'a;b\nc', ';d\n', 'e;"f\n', 'g"\n']) parser.write(chunk);
    parser.end();
  });
  let error;
  try { parseSync('a,b\n1,2,3\n'); } catch (e) { error = [e.code, e.message]; }
  return {
    callback,
    streamed,
    sync: parseSync(CSV, { ...OPTIONS, info: true }).map((r) => [r.record, r.info.lines]),
    bytes: parseSync(new TextEncoder().encode('x,y\n1,2\n'), { columns: true, bom: true }),
    error,
  };
}
tool('csv-parse', run);
