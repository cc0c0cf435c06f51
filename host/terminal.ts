// Text from artifacts and guests on the operator's terminal. A tool's name or description, a file name in an
// error, a guest's log line: all untrusted. ANSI escapes could hide a line (`\x1b[2K`), rewrite what was printed,
// or set the window title; bidi overrides (U+202E) and zero-width characters make a command read as something
// else. Every such string is printed through `printable`, which shows those characters as `\u{…}` escapes.

// C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates and marks, zero-width
// and invisible formatting characters, line/paragraph separators.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]/g;

/** `text` with every character that could deceive a terminal reader shown as an escape. */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** Like `printable`, and newlines too: for text that must stay on one line (names, one-line fields). */
export function printableLine(text: string): string {
  return printable(text).replace(/[\n\t]/g, (c) => (c === '\n' ? '\\n' : '\\t'));
}
