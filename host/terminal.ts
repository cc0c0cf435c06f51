// Text from artifacts and guests on the operator's terminal. A tool's name or description, a file name in an
// error, a guest's log line: all untrusted. ANSI escapes could hide a line (`\x1b[2K`), rewrite what was printed,
// or set the window title; bidi overrides (U+202E) and zero-width characters make a command read as something
// else. Every such string is printed through `printable`, which shows those characters as `\u{…}` escapes.
//
// A guest's log message is the guest's on every line it spans (`guestLog`): each line starts with the guest's
// mark, so a message holding "\nkiln: …" cannot print a line that passes for the server's own.

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

/** A guest's log message as the terminal shows it: every line of it (split at `\n`, `\r\n`, `\r`, U+2028/9
 *  and every other line break) starts with `[<mark…> <level>] `, the marks (session, source file) made
 *  one-line printable, the text printable. The one formatter of guest log lines on stderr (kiln mcp, kiln
 *  run, kiln bdd). */
export function guestLog(marks: string[], level: string, message: string): string {
  const prefix = `[${[...marks, level].map(printableLine).join(' ')}] `;
  return message.split(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/).map((line) => prefix + printable(line)).join('\n');
}
