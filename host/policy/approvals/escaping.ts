// How a value the guest controls is shown to a human (a question, an error, a grant's refusal): quoted, with
// quotes, backslashes and every character outside printable ASCII escaped (`escaped`). Pure.
//
// Invariants:
//  - A shown value stays on its own line inside its quotes: it cannot imitate a question's fixed lines, nor fake
//    a closing quote with a look-alike, nor pad fake text with blank-looking letters.
//  - The escapes read back exactly (JSON's, with \u{…} above U+FFFF): what is shown is what the guest sent.
//  - `shown` (error messages) may cut a value, marking the cut with "…"; a question never cuts
//    (policy/approvals/question.ts shows every value whole).

/** `s`, cut at `n` characters with "…" marking the cut. */
export const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** The characters a guest value is shown with as they are: printable ASCII. Everything else — controls, bidi and
 *  other invisible characters, blank-looking letters and symbols (U+3164, U+2800, U+115F, U+FFA0), quote and
 *  colon look-alikes (U+02BA, U+FF02, U+201D, U+02D0), every other script's letters too — is escaped: no Unicode
 *  property tells which of them look blank or like kiln's own quotes, so none is shown raw. */
const SHOWN_RAW = /^[\x20-\x7e]$/;

/** `s` with `\\`, `"` and every character outside printable ASCII escaped as in JSON (\\n, \\u001b, \\u3164,
 *  \\u{1f3f4}). */
export function escaped(s: string): string {
  return escapeText(s, true);
}

/** `s` with every character outside printable ASCII escaped as `escaped` does, its quotes and backslashes as they
 *  are: for kiln's own text that quotes values already escaped (a rule's name, `[policy] mode = "ask" (...)`). */
export function visible(s: string): string {
  return escapeText(s, false);
}

function escapeText(s: string, quoted: boolean): string {
  let out = '';
  for (const ch of s) {
    if (quoted && (ch === '\\' || ch === '"')) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (!SHOWN_RAW.test(ch)) {
      const cp = ch.codePointAt(0)!;
      out += cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return out;
}

/** A value the guest controls, as an error message shows it: escaped and in double quotes, cut at `max`
 *  characters (never in a question: see `question`). */
export function shown(s: string, max = 500): string {
  return `"${escaped(clip(s, max))}"`;
}
