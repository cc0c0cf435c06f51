// JSON a guest hands the host (an op's request), read as the host will use it.
//
// Invariant: every string in the value, object keys included, is well-formed Unicode. JSON may carry a lone
// surrogate (`"\ud800"`), and wherever the host writes such a string out (a file name, a header, a command's
// argument, a log) it becomes U+FFFD. A check made on the raw string would judge another name than the one
// used: with 'e\uD800.js', a write to an operator's file 'e\uFFFD.js' passed the protected-file check.
// So each lone surrogate is U+FFFD here, before any capability sees the request, as String.prototype.
// toWellFormed and the guest's side of the boundary (guest/glue.c, well_formed) make it. (The arguments of a
// `plugins.call` are the exception: data for another guest, touching nothing outside, they keep every
// character, as a handler's result and an MCP client's arguments do; engine/instance.ts parses them plainly.)

/** A lone surrogate: in a `u` regexp, a surrogate range matches only surrogates that are not part of a pair. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const LONE_SURROGATES = /[\uD800-\uDFFF]/gu;

export const wellFormed = (s: string): string => (LONE_SURROGATE.test(s) ? s.replace(LONE_SURROGATES, '\uFFFD') : s);

/** JSON.parse, every string and key well-formed. Keys that become equal keep the later value, as JSON does. */
export function parseGuestJson(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value === 'string') return wellFormed(value);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const keys = Object.keys(value);
    if (!keys.some((k) => LONE_SURROGATE.test(k))) return value;
    return Object.fromEntries(keys.map((k) => [wellFormed(k), (value as Record<string, unknown>)[k]]));
  });
}
