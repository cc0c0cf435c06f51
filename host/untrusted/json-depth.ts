// How deeply a JSON value nests. V8's JSON.stringify and structured clone recurse, and fail with a RangeError
// somewhere past a few thousand levels (JSON.parse does not), so a value that crosses the host — a tool's
// arguments, a handler's result — is refused past MAX_JSON_DEPTH with an error that says so, before anything
// recursive touches it. Both checks are iterative and stop at the first level too deep.

/** Arrays and objects inside one another, at most. */
export const MAX_JSON_DEPTH = 1000;

/** Whether JSON `text` nests arrays and objects more than `max` levels deep (brackets inside strings do not
 *  count). The text need not be valid JSON; what matters is what a parser would have to descend. */
export function textNestsDeeper(text: string, max = MAX_JSON_DEPTH): boolean {
  if (text.length <= max) return false; // too short to hold max + 1 opening brackets (the common case: no scan)
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether `value` (a parsed JSON value) nests arrays and objects more than `max` levels deep. */
export function valueNestsDeeper(value: unknown, max = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  let level: object[] = [value];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > max) return true;
    const next: object[] = [];
    for (const v of level) {
      for (const child of Array.isArray(v) ? v : Object.values(v)) {
        if (typeof child === 'object' && child !== null) next.push(child);
      }
    }
    level = next;
  }
  return false;
}
