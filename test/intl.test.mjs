// The guest's Intl is the host's ICU behind the `intl` WIT interface (host/intl.ts). The interface is pure, but
// its input is the guest's: every malformed request must fail with a TypeError and nothing else, the host's own
// defaults (LANG, TZ) must not show through, and a flood of distinct formatters must not grow the host.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CACHE_ENTRIES, cachedFormatters, intlCall, intlResult, MAX_ARGS_CHARS } from '../dist/host/intl.js';
import { kiln, tempDir } from './helpers.mjs';

const refused = (spec, op, args, re = /^Intl: /) => {
  assert.throws(() => intlCall(spec, op, args), (e) => e instanceof TypeError && re.test(e.message), `${spec} ${op} ${args}`);
};

test('malformed requests are refused as TypeErrors naming what is wrong', () => {
  refused('not json', 'format', '[]', /not JSON/);
  refused('{}', 'format', '[]', /\[kind, locales, options\]/);
  refused('["DateTimeFormat",null]', 'format', '[]', /\[kind, locales, options\]/);
  for (const kind of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'Intl2', 'Temporal', 42]) {
    refused(JSON.stringify([kind, null, null]), 'format', '[]', /unknown kind/);
  }
  refused('["NumberFormat","en",null]', 'format', '[1]', /locales must be a list/);
  refused('["NumberFormat",[1],null]', 'format', '[1]', /locales must be a list/);
  refused(JSON.stringify(['NumberFormat', Array(65).fill('en'), null]), 'format', '[1]', /locales must be a list/);
  refused('["NumberFormat",null,[]]', 'format', '[1]', /options must be an object/);
  refused('["NumberFormat",null,"x"]', 'format', '[1]', /options must be an object/);
  refused('["NumberFormat",null,null]', 'format', '{}', /must be a list/);
  refused('["NumberFormat",null,null]', 'format', 'nope', /not JSON/);
  // Operations named after Object.prototype's members, or another kind's, are not operations.
  for (const op of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'compare', 'segment', 'info']) {
    refused('["NumberFormat",null,null]', op, '[1]', /has no operation/);
  }
  refused('["Intl",null,null]', 'format', '[]', /unknown operation/);
  refused('["Locale",null,null]', 'info', '[]', /exactly one tag/);
  // Numbers on the wire: anything but the documented spellings.
  for (const v of ['{"n":"1e3"}', '{"n":"0x10"}', '{"b":"1.5"}', '{"b":""}', '{"q":1}', 'null', 'true', '"5"', '[1]']) {
    refused('["NumberFormat",null,null]', 'format', `[${v}]`, /malformed/);
  }
  refused('["NumberFormat",null,null]', 'format', `[{"b":"${'9'.repeat(4097)}"}]`, /malformed/);
  refused('["DateTimeFormat",null,null]', 'format', '[{"s":"2020"}]', /expected a number/);
  refused('["Collator",null,null]', 'compare', '[1,2]', /expected a string/);
  refused('["ListFormat",null,null]', 'format', '[["a",1]]', /list of strings/);
  // Sizes.
  refused(JSON.stringify(['NumberFormat', null, { x: 'y'.repeat(20000) }]), 'format', '[1]', /limited to/);
  refused('["Segmenter",null,null]', 'segment', JSON.stringify(['a'.repeat(MAX_ARGS_CHARS)]), /limited to/);
});

test('ICU errors keep their names; the WIT result carries "Name: message"', () => {
  assert.throws(() => intlCall('["DateTimeFormat",null,{"timeZone":"Nope/X"}]', 'format', '[0]'), RangeError);
  assert.throws(() => intlCall('["NumberFormat",["not a locale!"],null]', 'format', '[0]'), RangeError);
  assert.throws(() => intlCall('["DisplayNames",null,null]', 'of', '["FR"]'), TypeError);
  assert.throws(() => intlResult('["DateTimeFormat",null,{"timeZone":"Nope/X"}]', 'format', '[0]'), (e) => /^RangeError: Invalid time zone/.test(e.payload));
  assert.throws(() => intlResult('junk', 'format', '[0]'), (e) => /^TypeError: Intl: the request is not JSON/.test(e.payload));
  assert.equal(intlResult('["NumberFormat",["de"],null]', 'format', '[1234.5]'), '"1.234,5"');
});

test('the host keeps at most CACHE_ENTRIES formatters, however many distinct ones a guest asks for', () => {
  for (let i = 0; i < CACHE_ENTRIES * 3; i++) intlCall(JSON.stringify(['NumberFormat', ['en'], { minimumIntegerDigits: 1 + (i % 21), maximumFractionDigits: i % 20, useGrouping: i % 2 === 0 }]), 'format', '[1]');
  for (let i = 0; i < 100; i++) intlCall(JSON.stringify(['NumberFormat', ['en'], { x: i }]), 'format', '[1]');
  assert.ok(cachedFormatters() <= CACHE_ENTRIES, `${cachedFormatters()} formatters held`);
  assert.ok(cachedFormatters() > 0);
});

test("a guest's Intl uses en-US and UTC whatever the host's LANG and TZ are", async (t) => {
  const dir = tempDir(t);
  const script = join(dir, 'defaults.js');
  writeFileSync(script, `
const d = new Date(Date.UTC(2024, 0, 15, 23, 30));
JSON.stringify([new Intl.DateTimeFormat().resolvedOptions().locale, new Intl.DateTimeFormat().resolvedOptions().timeZone,
  new Intl.NumberFormat().resolvedOptions().locale, d.toLocaleString(), (1234.5).toLocaleString(), d.getHours()])`);
  const r = await kiln(['run', script], { env: { TZ: 'Asia/Tokyo', LANG: 'de_DE.UTF-8', LC_ALL: 'de_DE.UTF-8' } });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(JSON.parse(r.stdout)), ['en-US', 'UTC', 'en-US', '1/15/2024, 11:30:00 PM', '1,234.5', 23]);
});
