// The guest's Intl is the host's ICU behind the `intl` WIT interface (host/engine/intl.ts). The interface is pure, but
// its input is the guest's: every malformed request must fail with a TypeError and nothing else, the host's own
// defaults (LANG, TZ) must not show through, a flood of distinct formatters must not grow the host, and no
// input may cost the host quadratic time.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CACHE_ENTRIES, GUEST_BUDGET, IntlHost, MAX_ARGS_CHARS, segment } from '../dist/host/engine/intl.js';

const host = new IntlHost();
const intlCall = (spec, op, args) => host.call(spec, op, args);
const intlResult = (spec, op, args) => host.result(spec, op, args);
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
  refused('["NumberFormat",[1],null]', 'format', '[1]', /list of strings/);
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

test('a guest holds at most CACHE_ENTRIES formatters and may make GUEST_BUDGET new ones per window', () => {
  const guest = new IntlHost();
  const spec = (i) => JSON.stringify(['NumberFormat', ['en'], { minimumIntegerDigits: 1 + (i % 21), maximumFractionDigits: i % 20 }]);
  let refused;
  for (let i = 0; i < GUEST_BUDGET + 10 && !refused; i++) {
    try {
      guest.call(spec(i), 'format', '[1]');
    } catch (e) {
      refused = { i, e };
    }
  }
  assert.ok(refused, 'a flood of new formatters was never refused');
  assert.ok(refused.e instanceof RangeError && /make one and reuse it/.test(refused.e.message), refused.e.message);
  assert.ok(refused.i >= GUEST_BUDGET - 1 && refused.i <= GUEST_BUDGET, `refused at ${refused.i}`);
  assert.ok(guest.cached <= CACHE_ENTRIES, `${guest.cached} formatters held`);
  // Formatters it already holds still work, and another guest has its own budget.
  assert.doesNotThrow(() => guest.call(spec(refused.i - 1), 'format', '[1]'));
  assert.equal(new IntlHost().call(spec(0), 'format', '[1]'), '"1"');
});

test('locale lists are capped before Node canonicalises them (it takes quadratic time)', () => {
  const many = JSON.stringify([Array.from({ length: 65 }, (_, i) => `en-x-${i}`)]);
  assert.throws(() => intlCall('["Intl",null,null]', 'getCanonicalLocales', many), RangeError);
  assert.throws(() => intlCall('["NumberFormat",null,null]', 'supportedLocalesOf', JSON.stringify([JSON.parse(many)[0], null])), RangeError);
  assert.throws(() => intlCall(JSON.stringify(['NumberFormat', Array(65).fill('en'), null]), 'format', '[1]'), RangeError);
  assert.throws(() => intlCall('["Intl",null,null]', 'getCanonicalLocales', JSON.stringify([['en-' + 'a'.repeat(300)]])), RangeError);
});

test('segmenting in chunks finds exactly the boundaries of segmenting the whole text', () => {
  const texts = [
    'Hello, world! How are you? Mr. Smith went to Washington. He said "Hi." Then left...\r\nNew line. ',
    '👨‍👩‍👧‍👦🏳️‍🌈e\u0301 Ünïcödé\r\n\r\n漢字かなカナ한국어 ',
    'ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ ',
    'a'.repeat(3000) + ' b',
    'x. '.repeat(900),
  ];
  for (const granularity of ['grapheme', 'word', 'sentence']) {
    for (const [locale, base] of [['en', texts[0]], ['en', texts[1]], ['th', texts[2]], ['en', texts[3]], ['en', texts[4]], ['ja', texts[1]]]) {
      const text = base.repeat(Math.ceil(5000 / base.length));
      const f = new Intl.Segmenter(locale, { granularity });
      const whole = [...f.segment(text)];
      const chunked = segment(f, text);
      assert.deepEqual(chunked.starts, whole.map((s) => s.index), `${granularity} ${locale} ${base.slice(0, 20)}`);
      if (granularity === 'word') assert.deepEqual(chunked.words, whole.map((s) => (s.isWordLike ? 1 : 0)));
    }
  }
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
  // A locale ICU does not support falls back to en-US, never to the host's own.
  writeFileSync(script, `JSON.stringify([new Intl.NumberFormat('und').resolvedOptions().locale, (1234.5).toLocaleString('zz'),
    new Intl.DateTimeFormat(['xx', 'yy']).resolvedOptions().locale, 'a'.localeCompare('b', 'qq')])`);
  const fallback = await kiln(['run', script], { env: { TZ: 'Asia/Tokyo', LANG: 'de_DE.UTF-8', LC_ALL: 'de_DE.UTF-8' } });
  assert.equal(fallback.code, 0, fallback.stderr);
  assert.deepEqual(JSON.parse(JSON.parse(fallback.stdout)), ['en-US', '1,234.5', 'en-US', -1]);
});
