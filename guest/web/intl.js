// `Intl` and the locale-sensitive built-ins (Date/Number/BigInt `toLocaleString`, String `localeCompare` and
// `toLocaleUpperCase`/`toLocaleLowerCase`), answered by the host's ICU through the `intl` interface
// (host/engine/intl.ts), so results are Node's. quickjs-ng has no Intl of its own. The guest's defaults are locale
// "en-US" and time zone "UTC", whatever the host's are. A formatter crosses to the host once when it is made
// (to validate and resolve its options, as Node throws from the constructor) and once per call after that.
import { $, host } from './internal.js';

const ERRORS = { RangeError, TypeError };

function call(spec, op, args) {
  const r = host.native.intl(spec, op, JSON.stringify(args));
  if (typeof r === 'string') return JSON.parse(r);
  const m = /^(\w+): ([\s\S]*)$/.exec(r.error);
  throw new (ERRORS[m?.[1]] ?? Error)(m ? m[2] : r.error);
}

/** A locales argument as a list of tags (undefined: the default). */
function localeList(locales) {
  if (locales === undefined) return null;
  if (typeof locales === 'string' || locales instanceof Locale) return [String(locales)];
  if (locales === null) throw new TypeError('Cannot convert undefined or null to object');
  const o = Object(locales), out = [];
  const n = Math.min(Number(o.length) || 0, 2 ** 32 - 1);
  if (n > 64) throw new RangeError('Intl: kiln takes at most 64 locales');
  for (let i = 0; i < n; i++) {
    if (!(i in o)) continue;
    const v = o[i];
    if (typeof v !== 'string' && !(v && typeof v === 'object')) throw new TypeError(`Incorrect locale information provided`);
    out.push(String(v));
  }
  return out;
}

/** Every option ECMA-402 reads, of any kind: each is read once with a plain Get (getters and inherited
 *  properties count, as they do in Node), and what is read is what the host sees. */
const OPTION_NAMES = ['localeMatcher', 'calendar', 'numberingSystem', 'hour12', 'hourCycle', 'timeZone', 'weekday', 'era', 'year',
  'month', 'day', 'dayPeriod', 'hour', 'minute', 'second', 'fractionalSecondDigits', 'timeZoneName', 'formatMatcher', 'dateStyle',
  'timeStyle', 'style', 'currency', 'currencyDisplay', 'currencySign', 'unit', 'unitDisplay', 'notation', 'compactDisplay',
  'signDisplay', 'useGrouping', 'minimumIntegerDigits', 'minimumFractionDigits', 'maximumFractionDigits', 'minimumSignificantDigits',
  'maximumSignificantDigits', 'roundingPriority', 'roundingIncrement', 'roundingMode', 'trailingZeroDisplay', 'type', 'usage',
  'sensitivity', 'ignorePunctuation', 'numeric', 'caseFirst', 'collation', 'granularity', 'fallback', 'languageDisplay', 'language',
  'script', 'region'];
function optionBag(options) {
  if (options === undefined) return null;
  if (options === null) throw new TypeError('Cannot convert undefined or null to object');
  const o = Object(options), out = {};
  for (const k of OPTION_NAMES) {
    const v = o[k];
    if (v !== undefined) out[k] = v === null || typeof v === 'boolean' || typeof v === 'string' || typeof v === 'number' ? v : String(v);
  }
  return out;
}

const specOf = (kind, locales, options) => JSON.stringify([kind, localeList(locales), optionBag(options)]);

/** A number on the wire: JSON where JSON can spell it. */
function wire(x) {
  if (typeof x === 'bigint') return { b: String(x) };
  if (typeof x === 'string') return { s: x };
  return Number.isFinite(x) && !Object.is(x, -0) ? x : { n: Object.is(x, -0) ? '-0' : String(x) };
}
/** ToIntlMathematicalValue: numbers, bigints and decimal strings keep their precision. */
function mathValue(x) {
  const p = x !== null && typeof x === 'object' ? x.valueOf() : x;
  return wire(typeof p === 'bigint' || typeof p === 'string' ? p : Number(p));
}
const timeValue = (d) => wire(d === undefined ? Date.now() : Number(d));

function init(self, kind, locales, options) {
  const spec = specOf(kind, locales, options);
  self[$] = { spec, resolved: call(spec, 'resolvedOptions', []), bound: undefined };
}
const state = (self, kind) => {
  if (!self || !self[$] || !self[$].spec.startsWith(`["${kind}"`)) throw new TypeError(`Method Intl.${kind}.prototype called on an incompatible receiver`);
  return self[$];
};
const supportedLocalesOf = (kind) => function supportedLocalesOf(locales, options) {
  return call(JSON.stringify([kind, null, null]), 'supportedLocalesOf', [localeList(locales) ?? [], optionBag(options)]);
};
function finish(C, kind, length) {
  Object.defineProperty(C.prototype, Symbol.toStringTag, { value: `Intl.${kind}`, configurable: true });
  Object.defineProperty(C, 'supportedLocalesOf', { value: supportedLocalesOf(kind), writable: true, configurable: true });
  Object.defineProperty(C, 'length', { value: length });
  return C;
}
/** DateTimeFormat, NumberFormat and Collator may be called without `new` (ECMA-402's legacy behaviour). */
function callable(C) {
  const F = function (locales, options) {
    return Reflect.construct(C, [locales, options], new.target ?? F);
  };
  Object.defineProperty(F, 'name', { value: C.name });
  F.prototype = C.prototype;
  Object.defineProperty(C.prototype, 'constructor', { value: F, writable: true, configurable: true });
  Object.defineProperty(F, 'supportedLocalesOf', Object.getOwnPropertyDescriptor(C, 'supportedLocalesOf'));
  Object.defineProperty(F, 'length', { value: 0 });
  return F;
}
/** The bound `format`/`compare` getters, as ECMA-402 specifies them (so `list.map(nf.format)` works). */
function boundGetter(C, kind, name, fn) {
  Object.defineProperty(C.prototype, name, {
    configurable: true,
    get() {
      const s = state(this, kind);
      return (s.bound ??= fn.bind(undefined, s.spec));
    },
  });
}

export class DateTimeFormat {
  constructor(locales, options) { init(this, 'DateTimeFormat', locales, options); }
  formatToParts(date) { return call(state(this, 'DateTimeFormat').spec, 'formatToParts', [timeValue(date)]); }
  formatRange(a, b) { return call(state(this, 'DateTimeFormat').spec, 'formatRange', range(a, b, timeValue)); }
  formatRangeToParts(a, b) { return call(state(this, 'DateTimeFormat').spec, 'formatRangeToParts', range(a, b, timeValue)); }
  resolvedOptions() { return { ...state(this, 'DateTimeFormat').resolved }; }
}
function range(a, b, conv) {
  if (a === undefined || b === undefined) throw new TypeError('startDate or endDate is undefined');
  return [conv(a), conv(b)];
}
boundGetter(DateTimeFormat, 'DateTimeFormat', 'format', (spec, date) => call(spec, 'format', [timeValue(date)]));

export class NumberFormat {
  constructor(locales, options) { init(this, 'NumberFormat', locales, options); }
  formatToParts(x) { return call(state(this, 'NumberFormat').spec, 'formatToParts', [mathValue(x)]); }
  formatRange(a, b) { return call(state(this, 'NumberFormat').spec, 'formatRange', range(a, b, mathValue)); }
  formatRangeToParts(a, b) { return call(state(this, 'NumberFormat').spec, 'formatRangeToParts', range(a, b, mathValue)); }
  resolvedOptions() { return { ...state(this, 'NumberFormat').resolved }; }
}
boundGetter(NumberFormat, 'NumberFormat', 'format', (spec, x) => call(spec, 'format', [mathValue(x)]));

export class Collator {
  constructor(locales, options) { init(this, 'Collator', locales, options); }
  resolvedOptions() { return { ...state(this, 'Collator').resolved }; }
}
boundGetter(Collator, 'Collator', 'compare', (spec, a, b) => call(spec, 'compare', [String(a), String(b)]));

export class PluralRules {
  constructor(locales, options) { init(this, 'PluralRules', locales, options); }
  select(n) { return call(state(this, 'PluralRules').spec, 'select', [wire(Number(n))]); }
  selectRange(a, b) { return call(state(this, 'PluralRules').spec, 'selectRange', range(a, b, (x) => wire(Number(x)))); }
  resolvedOptions() { return { ...state(this, 'PluralRules').resolved }; }
}

export class RelativeTimeFormat {
  constructor(locales, options) { init(this, 'RelativeTimeFormat', locales, options); }
  format(value, unit) { return call(state(this, 'RelativeTimeFormat').spec, 'format', [wire(Number(value)), String(unit)]); }
  formatToParts(value, unit) { return call(state(this, 'RelativeTimeFormat').spec, 'formatToParts', [wire(Number(value)), String(unit)]); }
  resolvedOptions() { return { ...state(this, 'RelativeTimeFormat').resolved }; }
}

function stringList(list) {
  const out = [];
  for (const s of list ?? []) {
    if (typeof s !== 'string') throw new TypeError(`Iterable yielded ${typeof s} which is not a string`);
    out.push(s);
  }
  return out;
}
export class ListFormat {
  constructor(locales, options) { init(this, 'ListFormat', locales, options); }
  format(list) { return call(state(this, 'ListFormat').spec, 'format', [stringList(list)]); }
  formatToParts(list) { return call(state(this, 'ListFormat').spec, 'formatToParts', [stringList(list)]); }
  resolvedOptions() { return { ...state(this, 'ListFormat').resolved }; }
}

export class DisplayNames {
  constructor(locales, options) { init(this, 'DisplayNames', locales, options); }
  of(code) { return call(state(this, 'DisplayNames').spec, 'of', [String(code)]) ?? undefined; }
  resolvedOptions() { return { ...state(this, 'DisplayNames').resolved }; }
}

/** What `segment()` returns: iterable segments and `containing(index)`, from the host's boundaries. */
class Segments {
  constructor(input, starts, words) {
    this[$] = { input, starts, words };
  }
  containing(index) {
    const { input, starts } = this[$];
    const i = Math.trunc(Number(index)) || 0;
    if (i < 0 || i >= input.length) return undefined;
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return segmentAt(this[$], lo);
  }
  *[Symbol.iterator]() {
    for (let k = 0; k < this[$].starts.length; k++) yield segmentAt(this[$], k);
  }
}
function segmentAt({ input, starts, words }, k) {
  const index = starts[k], end = k + 1 < starts.length ? starts[k + 1] : input.length;
  const seg = { segment: input.slice(index, end), index, input };
  if (words.length) seg.isWordLike = words[k] === 1;
  return seg;
}
export class Segmenter {
  constructor(locales, options) { init(this, 'Segmenter', locales, options); }
  segment(input) {
    const s = String(input);
    const { starts, words } = call(state(this, 'Segmenter').spec, 'segment', [s]);
    return new Segments(s, starts, words);
  }
  resolvedOptions() { return { ...state(this, 'Segmenter').resolved }; }
}

const LOCALE_FIELDS = ['baseName', 'calendar', 'caseFirst', 'collation', 'hourCycle', 'language', 'numberingSystem', 'numeric', 'region',
  'script', 'calendars', 'collations', 'hourCycles', 'numberingSystems', 'textInfo', 'timeZones', 'weekInfo'];
export class Locale {
  constructor(tag, options) {
    if (typeof tag !== 'string' && !(tag && typeof tag === 'object')) throw new TypeError('First argument to Intl.Locale constructor can\'t be empty or missing');
    const spec = JSON.stringify(['Locale', [String(tag)], optionBag(options)]);
    this[$] = { spec, info: call(spec, 'info', []) };
  }
  toString() { return state(this, 'Locale').info.tag; }
  maximize() { return new Locale(call(state(this, 'Locale').spec, 'maximize', [])); }
  minimize() { return new Locale(call(state(this, 'Locale').spec, 'minimize', [])); }
}
for (const field of LOCALE_FIELDS) {
  Object.defineProperty(Locale.prototype, field, {
    configurable: true,
    get() {
      const v = state(this, 'Locale').info[field];
      return v === null ? undefined : v;
    },
  });
}
Object.defineProperty(Locale.prototype, Symbol.toStringTag, { value: 'Intl.Locale', configurable: true });

for (const [C, kind] of [[PluralRules, 'PluralRules'], [RelativeTimeFormat, 'RelativeTimeFormat'], [ListFormat, 'ListFormat'],
  [Segmenter, 'Segmenter'], [DateTimeFormat, 'DateTimeFormat'], [NumberFormat, 'NumberFormat'], [Collator, 'Collator']]) finish(C, kind, 0);
finish(DisplayNames, 'DisplayNames', 2);
Object.defineProperty(Locale, 'length', { value: 1 });

const INTL_SPEC = JSON.stringify(['Intl', null, null]);
export const Intl = {
  DateTimeFormat: callable(DateTimeFormat), NumberFormat: callable(NumberFormat), Collator: callable(Collator),
  PluralRules, RelativeTimeFormat, ListFormat, DisplayNames, Segmenter, Locale,
  getCanonicalLocales: (locales) => call(INTL_SPEC, 'getCanonicalLocales', [localeList(locales) ?? []]),
  supportedValuesOf: (key) => call(INTL_SPEC, 'supportedValuesOf', [String(key)]),
};
for (const k of Object.keys(Intl)) Object.defineProperty(Intl, k, { enumerable: false });
Object.defineProperty(Intl, Symbol.toStringTag, { value: 'Intl', configurable: true });

/** Replace a built-in method, keeping its name, its `length` of 0 and its non-enumerability. */
function method(proto, name, fn, length = 0) {
  Object.defineProperty(fn, 'length', { value: length });
  Object.defineProperty(fn, 'name', { value: name });
  Object.defineProperty(proto, name, { value: fn, writable: true, configurable: true, enumerable: false });
}

/** The locale-sensitive built-ins, through the same host calls as Intl's classes. */
export function installLocaleMethods() {
  const thisTime = Date.prototype.getTime;
  for (const name of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']) {
    method(Date.prototype, name, function (locales, options) {
      return call(specOf('Date', locales, options), name, [wire(thisTime.call(this))]);
    });
  }
  const thisNumber = Number.prototype.valueOf, thisBigInt = BigInt.prototype.valueOf;
  method(Number.prototype, 'toLocaleString', function (locales, options) {
    return call(specOf('NumberFormat', locales, options), 'format', [wire(thisNumber.call(this))]);
  });
  method(BigInt.prototype, 'toLocaleString', function (locales, options) {
    return call(specOf('NumberFormat', locales, options), 'format', [wire(thisBigInt.call(this))]);
  });
  const thisString = (s, name) => {
    if (s === undefined || s === null) throw new TypeError(`String.prototype.${name} called on null or undefined`);
    return String(s);
  };
  method(String.prototype, 'localeCompare', function (that, locales, options) {
    return call(specOf('Collator', locales, options), 'compare', [thisString(this, 'localeCompare'), String(that)]);
  }, 1);
  for (const name of ['toLocaleUpperCase', 'toLocaleLowerCase']) {
    method(String.prototype, name, function (locales) {
      return call(specOf('String', locales, undefined), name, [thisString(this, name)]);
    });
  }
  // ECMA-402's Array.prototype.toLocaleString passes its locales and options on to every element.
  // An array met again while it is being converted (it contains itself) converts to "", as join does.
  const converting = new Set();
  const elementsToLocaleString = function (locales, options) {
    const o = Object(this), n = Math.min(Number(o.length) || 0, 2 ** 53 - 1);
    if (converting.has(o)) return '';
    converting.add(o);
    try {
      let out = '';
      for (let i = 0; i < n; i++) {
        if (i > 0) out += ',';
        const v = o[i];
        if (v !== undefined && v !== null) out += String(Object(v).toLocaleString(locales, options));
      }
      return out;
    } finally {
      converting.delete(o);
    }
  };
  method(Array.prototype, 'toLocaleString', elementsToLocaleString);
  method(Object.getPrototypeOf(Int8Array.prototype), 'toLocaleString', elementsToLocaleString);
}
