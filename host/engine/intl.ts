// The guest's `Intl`: ECMA-402 answered by the host's ICU (Node's own), through the `intl` WIT interface.
// Pure functions of their arguments: no authority, no state but bounded caches of constructed formatters.
//
// Invariants:
//  - The guest never learns the host's defaults: every locale list ends in "en-US" (so a tag ICU does not
//    support falls back to it, not to the host's LANG), and a date's missing time zone is "UTC" (the guest's
//    local time zone), whatever the host's TZ says.
//  - Only the kinds and operations listed here run; every argument is JSON whose type is checked before use.
//  - Requests are bounded in size; each guest has its own small cache of formatters (so one guest cannot
//    time another's cache) and a budget of new ones, and the thread has one too: a formatter holds ~30 KB of
//    ICU memory that V8 frees only lazily, so a flood of distinct formatters must be refused, not cached.
//  - No operation is quadratic in its input: V8's segment iterator is, so text is segmented in chunks.
//  - Errors come back as "Name: message" with Intl's own RangeError/TypeError names; nothing else is thrown.

export const MAX_SPEC_CHARS = 16 * 1024;
export const MAX_ARGS_CHARS = 1 << 20;
const MAX_LOCALES = 64;
const MAX_TAG_CHARS = 256;
export const CACHE_ENTRIES = 32;
/** New formatters a guest, and all guests of a thread, may make per BUDGET_WINDOW_MS. */
export const GUEST_BUDGET = 200;
export const THREAD_BUDGET = 1000;
const BUDGET_WINDOW_MS = 10_000;
/** Segmenter input is segmented this many code units at a time (see segment). */
const SEGMENT_CHUNK = 1024;
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
/** A locale list from the guest: at most MAX_LOCALES tags of at most MAX_TAG_CHARS (Node canonicalises a
 *  list in quadratic time). Beyond that: a RangeError the guest can read. */
function tags(w: unknown): string[] {
  const list = strings(w);
  if (list.length > MAX_LOCALES || list.some((t) => t.length > MAX_TAG_CHARS)) {
    throw new RangeError(`Intl: kiln takes at most ${MAX_LOCALES} locales of at most ${MAX_TAG_CHARS} characters`);
  }
  return list;
}
/** The guest's locales, then en-US: ICU falls back to the first it supports, never to the host's own. */
const localesOf = (l: Locales): string[] => [...(l ?? []), DEFAULT_LOCALE];
const withZone = (o: Options): Record<string, unknown> => ({ ...o, timeZone: o && 'timeZone' in o ? o.timeZone : DEFAULT_TIME_ZONE });

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
  Segmenter: { segment: (f, [s]) => segment(f, str(s)) },
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

/**
 * `text`'s segment boundaries. V8's segment iterator costs time proportional to the text per step (50,000
 * one-letter graphemes: a second), so the text is segmented SEGMENT_CHUNK code units at a time: each
 * chunk's last segment may continue past it, so it is dropped and segmenting resumes at its start (a
 * boundary, from which ICU finds the same boundaries as from the text's start). A segment longer than a
 * chunk doubles the chunk.
 */
export function segment(f: Intl.Segmenter, text: string): { starts: number[]; words: number[] } {
  const starts: number[] = [], words: number[] = [];
  for (let at = 0, size = SEGMENT_CHUNK; at < text.length;) {
    const end = Math.min(text.length, at + size);
    const found: Intl.SegmentData[] = [...f.segment(text.slice(at, end))];
    const last = end === text.length ? found.length : found.length - 1; // the last may run on past `end`
    if (last === 0) {
      size *= 2;
      continue;
    }
    for (let k = 0; k < last; k++) {
      starts.push(at + found[k].index);
      if (found[k].isWordLike !== undefined) words.push(found[k].isWordLike ? 1 : 0);
    }
    at = end === text.length ? end : at + found[last].index;
    size = SEGMENT_CHUNK;
  }
  return { starts, words };
}

/** Operations that need no formatter: [kind or "Intl", locales, options] names only the kind. */
const STATIC: Record<string, Op> = {
  getCanonicalLocales: (_k, [l]) => Intl.getCanonicalLocales(tags(l)),
  supportedValuesOf: (_k, [key]) => Intl.supportedValuesOf(str(key) as Parameters<typeof Intl.supportedValuesOf>[0]),
  supportedLocalesOf: (kind, [l, o]) => {
    const C = (Intl as unknown as Record<string, { supportedLocalesOf?: (l: string[], o?: object) => string[] }>)[kind];
    if (!C?.supportedLocalesOf) return bad(`${kind} has no supportedLocalesOf`);
    return C.supportedLocalesOf(tags(l), (o ?? undefined) as object | undefined);
  },
};

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
  if (locales !== null && !Array.isArray(locales)) return bad('locales must be a list of strings');
  if (locales !== null) tags(locales);
  if (options !== null && (typeof options !== 'object' || Array.isArray(options))) return bad('options must be an object');
  return [kind, locales as Locales, options as Options];
}

/** New formatters made in the current window, by this thread's guests together (see THREAD_BUDGET). */
const thread = { window: 0, made: 0 };

function spend(budget: { window: number; made: number }, limit: number, who: string): void {
  const window = Math.floor(Date.now() / BUDGET_WINDOW_MS);
  if (budget.window !== window) Object.assign(budget, { window, made: 0 });
  if (budget.made >= limit) {
    throw new RangeError(`Intl: ${who} made ${limit} new formatters in ${BUDGET_WINDOW_MS / 1000} s, the most kiln allows; make one and reuse it`);
  }
  budget.made++;
}

/** One guest's Intl: its formatters (most recently used last) and its budget of new ones. */
export class IntlHost {
  private readonly cache = new Map<string, object>();
  private readonly budget = { window: 0, made: 0 };

  /** How many formatters this guest holds (at most CACHE_ENTRIES). */
  get cached(): number {
    return this.cache.size;
  }

  private formatter(spec: string, kind: string, locales: Locales, options: Options): object {
    let f = this.cache.get(spec);
    if (f) {
      this.cache.delete(spec);
    } else {
      spend(this.budget, GUEST_BUDGET, 'this guest');
      spend(thread, THREAD_BUDGET, "this server thread's guests");
      f = CONSTRUCT[kind](locales, options);
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    }
    this.cache.set(spec, f);
    return f;
  }

  /** One `intl.call`: the JSON result, or an Error whose name and message the guest rethrows. */
  call(spec: string, op: string, args: string): string {
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
    const f = this.formatter(spec, kind, locales, options);
    return JSON.stringify(resolve ? (f as Intl.Collator).resolvedOptions() : ops[op](f, list) ?? null);
  }

  /** `call` as the WIT's result: an error travels as "Name: message". */
  result(spec: string, op: string, args: string): string {
    try {
      return this.call(spec, op, args);
    } catch (e) {
      const name = e instanceof RangeError ? 'RangeError' : e instanceof TypeError ? 'TypeError' : 'Error';
      throw { payload: `${name}: ${(e as Error)?.message ?? String(e)}`.slice(0, 4096) };
    }
  }
}
