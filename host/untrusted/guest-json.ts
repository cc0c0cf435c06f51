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
/** A `\uD8xx`-`\uDFxx` escape, the only way a surrogate reaches the host in JSON text: the glue has already
 *  replaced every raw one. (An escaped backslash before "ud8.." also matches; that only costs the walk.) */
const SURROGATE_ESCAPE = /\\u[dD][89abcdefABCDEF]/;

const wellFormed = (s: string): string => (LONE_SURROGATE.test(s) ? s.replace(LONE_SURROGATES, '\uFFFD') : s);

/** JSON.parse, every string and key well-formed. Keys that become equal keep the later value, as JSON does.
 *  No recursion: a request nested thousands of levels deep gets the capability's own answer, not a stack
 *  overflow here (JSON.parse's reviver recurses). */
export function parseGuestJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (!SURROGATE_ESCAPE.test(text)) return value;
  if (typeof value === 'string') return wellFormed(value);
  if (value === null || typeof value !== 'object') return value;
  const pending: object[] = [value];
  while (pending.length > 0) {
    const node = pending.pop() as Record<string, unknown>;
    const keys = Object.keys(node);
    let position: Map<string, number> | undefined; // each key's place in the text, when a fixed key needs it
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const v = node[key];
      if (typeof v === 'string') node[key] = wellFormed(v);
      else if (v !== null && typeof v === 'object') pending.push(v);
      if (!Array.isArray(node) && LONE_SURROGATE.test(key)) {
        const fixed = node[key];
        delete node[key];
        position ??= new Map(keys.map((k, j) => [k, j]));
        if ((position.get(wellFormed(key)) ?? -1) > i) continue; // a later key of that name wins
        // defineProperty, not assignment: a key that becomes "__proto__" stays data, never a prototype.
        Object.defineProperty(node, wellFormed(key), { value: fixed, writable: true, enumerable: true, configurable: true });
      }
    }
  }
  return value;
}
