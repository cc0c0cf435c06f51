// The guest's `Intl`: ECMA-402 answered by the host's ICU (Node's own), through the `intl` WIT interface.
// Pure functions of their arguments: no authority, no state but a bounded cache of constructed formatters.
//
// Invariants:
//  - The guest never learns the host's defaults: a missing locale is "en-US", and a date's missing time zone
//    is "UTC" (the guest's local time zone), whatever the host's LANG and TZ say.
//  - Only the kinds and operations listed here run; every argument is JSON whose type is checked before use.
//  - Requests are bounded in size and the cache in entries, so a guest cannot grow the host through it.
//  - Errors come back as "Name: message" with Intl's own RangeError/TypeError names; nothing else is thrown.

export const MAX_SPEC_CHARS = 16 * 1024;
export const MAX_ARGS_CHARS = 1 << 20;
export const CACHE_ENTRIES = 256;
const DEFAULT_LOCALE = 'en-US';
const DEFAULT_TIME_ZONE = 'UTC';

/** A number as the guest sends it: JSON for finite numbers, tagged where JSON has no spelling. */
type Wire = number | { n: string } | { b: string } | { s: string };
type Locales = string[] | null;
type Options = Record<string, unknown> | null;

const bad = (what: string): never => {
  throw new TypeError(`Intl: ${what}`);
};

function value(w: unknown): number | bigint | string {
  if (typeof w === 'number') return w;
  if (w && typeof w === 'object') {
    const o = w as Record<string, unknown>;
    if (typeof o.n === 'string' && /^(-?Infinity|NaN|-0)$/.test(o.n)) return Number(o.n);
    if (typeof o.b === 'string' && /^-?\d{1,4096}$/.test(o.b)) return BigInt(o.b);
    if (typeof o.s === 'string') return o.s;
  }
  return bad('a number argument is malformed');
}
const num = (w: unknown): number => {
  const v = value(w);
  return typeof v === 'number' ? v : bad('expected a number');
};
const str = (w: unknown): string => (typeof w === 'string' ? w : bad('expected a string'));
const strings = (w: unknown): string[] => (Array.isArray(w) && w.every((s) => typeof s === 'string') ? w : bad('expected a list of strings'));
const localesOf = (l: Locales): string[] => (l && l.length ? l : [DEFAULT_LOCALE]);
const withZone = (o: Options): Record<string, unknown> => ({ ...o, timeZone: o?.timeZone ?? DEFAULT_TIME_ZONE });

/** What each kind's formatter is built from. `Locale` takes a tag instead of a locale list. */
const CONSTRUCT: Record<string, (l: Locales, o: Options) => object> = {
  DateTimeFormat: (l, o) => new Intl.DateTimeFormat(localesOf(l), withZone(o)),
  NumberFormat: (l, o) => new Intl.NumberFormat(localesOf(l), o ?? undefined),
  PluralRules: (l, o) => new Intl.PluralRules(localesOf(l), o ?? undefined),
  Collator: (l, o) => new Intl.Collator(localesOf(l), o ?? undefined),
  RelativeTimeFormat: (l, o) => new Intl.RelativeTimeFormat(localesOf(l), o ?? undefined),
  ListFormat: (l, o) => new Intl.ListFormat(localesOf(l), o ?? undefined),
  DisplayNames: (l, o) => new Intl.DisplayNames(localesOf(l), (o ?? undefined) as unknown as Intl.DisplayNamesOptions),
  Segmenter: (l, o) => new Intl.Segmenter(localesOf(l), o ?? undefined),
  Locale: (l, o) => new Intl.Locale(l?.length === 1 ? l[0] : bad('a Locale needs exactly one tag'), o ?? undefined),
  // Date.prototype.toLocale*String and String.prototype.toLocale*Case: the built-ins, with the guest's defaults.
  Date: (l, o) => ({ locales: localesOf(l), options: withZone(o) }),
  String: (l) => ({ locales: localesOf(l) }),
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each op knows its kind's formatter
type Op = (f: any, args: any[]) => unknown;
type DateSpec = { locales: string[]; options: Intl.DateTimeFormatOptions };
const LOCALE_INFO = ['baseName', 'calendar', 'caseFirst', 'collation', 'hourCycle', 'language', 'numberingSystem', 'numeric', 'region',
  'script', 'calendars', 'collations', 'hourCycles', 'numberingSystems', 'textInfo', 'timeZones', 'weekInfo'] as const;

/** The operations of each kind; `args` is the JSON array the guest sent. */
const OPS: Record<string, Record<string, Op>> = {
  DateTimeFormat: {
    format: (f, [t]) => f.format(num(t)),
    formatToParts: (f, [t]) => f.formatToParts(num(t)),
    formatRange: (f, [a, b]) => f.formatRange(num(a), num(b)),
    formatRangeToParts: (f, [a, b]) => f.formatRangeToParts(num(a), num(b)),
  },
  NumberFormat: {
    format: (f, [x]) => f.format(value(x)),
    formatToParts: (f, [x]) => f.formatToParts(value(x)),
    formatRange: (f, [a, b]) => f.formatRange(value(a), value(b)),
    formatRangeToParts: (f, [a, b]) => f.formatRangeToParts(value(a), value(b)),
  },
  PluralRules: {
    select: (f, [n]) => f.select(num(n)),
    selectRange: (f, [a, b]) => f.selectRange(num(a), num(b)),
  },
  Collator: { compare: (f, [a, b]) => f.compare(str(a), str(b)) },
  RelativeTimeFormat: {
    format: (f, [v, unit]) => f.format(num(v), str(unit)),
    formatToParts: (f, [v, unit]) => f.formatToParts(num(v), str(unit)),
  },
  ListFormat: {
    format: (f, [list]) => f.format(strings(list)),
    formatToParts: (f, [list]) => f.formatToParts(strings(list)),
  },
  DisplayNames: { of: (f, [code]) => f.of(str(code)) ?? null },
  // Segments travel as their start indices (and word-likeness), not as copies of the text.
  Segmenter: {
    segment: (f, [s]) => {
      const starts: number[] = [], words: number[] = [];
      for (const seg of f.segment(str(s)) as Iterable<Intl.SegmentData>) {
        starts.push(seg.index);
        if (seg.isWordLike !== undefined) words.push(seg.isWordLike ? 1 : 0);
      }
      return { starts, words };
    },
  },
  Locale: {
    info: (f) => {
      const info: Record<string, unknown> = { tag: f.toString() };
      for (const k of LOCALE_INFO) info[k] = f[k] ?? null;
      return info;
    },
    maximize: (f) => f.maximize().toString(),
    minimize: (f) => f.minimize().toString(),
  },
  Date: {
    toLocaleString: (f: DateSpec, [t]: unknown[]) => new Date(num(t)).toLocaleString(f.locales, f.options),
    toLocaleDateString: (f: DateSpec, [t]: unknown[]) => new Date(num(t)).toLocaleDateString(f.locales, f.options),
    toLocaleTimeString: (f: DateSpec, [t]: unknown[]) => new Date(num(t)).toLocaleTimeString(f.locales, f.options),
  },
  String: {
    toLocaleUpperCase: (f, [s]) => str(s).toLocaleUpperCase(f.locales),
    toLocaleLowerCase: (f, [s]) => str(s).toLocaleLowerCase(f.locales),
  },
};

/** Operations that need no formatter: [kind or "Intl", locales, options] names only the kind. */
const STATIC: Record<string, Op> = {
  getCanonicalLocales: (_k, [l]) => Intl.getCanonicalLocales(strings(l)),
  supportedValuesOf: (_k, [key]) => Intl.supportedValuesOf(str(key) as Parameters<typeof Intl.supportedValuesOf>[0]),
  supportedLocalesOf: (kind, [l, o]) => {
    const C = (Intl as unknown as Record<string, { supportedLocalesOf?: (l: string[], o?: object) => string[] }>)[kind];
    if (!C?.supportedLocalesOf) return bad(`${kind} has no supportedLocalesOf`);
    return C.supportedLocalesOf(strings(l), (o ?? undefined) as object | undefined);
  },
};

const cache = new Map<string, object>();

/** How many formatters the host holds (at most CACHE_ENTRIES). */
export const cachedFormatters = (): number => cache.size;

function formatter(spec: string, kind: string, locales: Locales, options: Options): object {
  let f = cache.get(spec);
  if (f) {
    cache.delete(spec); // most recently used goes last
  } else {
    f = CONSTRUCT[kind](locales, options);
    if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
  }
  cache.set(spec, f);
  return f;
}

function parseSpec(spec: string): [string, Locales, Options] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(spec);
  } catch {
    return bad('the request is not JSON');
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return bad('the request must be [kind, locales, options]');
  const [kind, locales, options] = parsed as unknown[];
  if (typeof kind !== 'string' || !Object.hasOwn(CONSTRUCT, kind) && kind !== 'Intl') return bad(`unknown kind ${JSON.stringify(kind)}`);
  if (locales !== null && !(Array.isArray(locales) && locales.length <= 64 && locales.every((s) => typeof s === 'string'))) return bad('locales must be a list of strings');
  if (options !== null && (typeof options !== 'object' || Array.isArray(options))) return bad('options must be an object');
  return [kind, locales as Locales, options as Options];
}

/** One `intl.call`: the JSON result, or an Error whose name and message the guest rethrows. */
export function intlCall(spec: string, op: string, args: string): string {
  if (spec.length > MAX_SPEC_CHARS) bad(`a request's locales and options are limited to ${MAX_SPEC_CHARS} characters`);
  if (args.length > MAX_ARGS_CHARS) bad(`a request's arguments are limited to ${MAX_ARGS_CHARS} characters`);
  const [kind, locales, options] = parseSpec(spec);
  let list: unknown;
  try {
    list = JSON.parse(args);
  } catch {
    return bad('the arguments are not JSON');
  }
  if (!Array.isArray(list)) return bad('the arguments must be a list');
  if (Object.hasOwn(STATIC, op)) return JSON.stringify(STATIC[op](kind, list));
  if (kind === 'Intl') return bad(`unknown operation ${JSON.stringify(op)}`);
  const ops = OPS[kind];
  const resolve = op === 'resolvedOptions' && kind !== 'Date' && kind !== 'String' && kind !== 'Locale';
  if (!resolve && !Object.hasOwn(ops, op)) return bad(`${kind} has no operation ${JSON.stringify(op)}`);
  const f = formatter(spec, kind, locales, options);
  return JSON.stringify(resolve ? (f as Intl.Collator).resolvedOptions() : ops[op](f, list) ?? null);
}

/** `intlCall` as the WIT's result: an error travels as "Name: message". */
export function intlResult(spec: string, op: string, args: string): string {
  try {
    return intlCall(spec, op, args);
  } catch (e) {
    const name = e instanceof RangeError ? 'RangeError' : e instanceof TypeError ? 'TypeError' : 'Error';
    throw { payload: `${name}: ${(e as Error)?.message ?? String(e)}`.slice(0, 4096) };
  }
}
