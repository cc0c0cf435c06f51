// Text from artifacts and guests on the operator's terminal. A tool's name or description, a file name in an
// error, a guest's log line: all untrusted. ANSI escapes could hide a line (`\x1b[2K`), rewrite what was printed,
// or set the window title; bidi overrides (U+202E) and zero-width characters make a command read as something
// else. Every such string is printed through `printable`, which shows those characters as `\u{…}` escapes.
//
// Every line kiln writes on its stderr goes through `stderrText` (cli.ts `err`, mcp/server.ts `stderrLog`,
// `writeStderr` for the rest): a message's lines after its first start with CONTINUATION, so a value quoted
// in a message (a file name, an import specifier in a build error, an error from a guest) that holds a newline
// cannot print a line of its own: no line but a message's first starts at column 0, where kiln's "kiln: …"
// and a guest's "[mark level] …" lines start. A guest's log message is the guest's on every line it spans
// (`guestLog`): each line starts with the guest's mark and is written as a message of its own.

// C0 controls but tab and newline, DEL, C1 controls, every format character (\p{Cf}: bidi embeddings,
// overrides, isolates and marks, zero-width characters, tags) and every default-ignorable one (what a terminal
// draws as nothing: soft hyphen, variation selectors, Hangul fillers, ...), line/paragraph separators.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

/** `text` with every character that could deceive a terminal reader shown as an escape. */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** Like `printable`, and newlines too: for text that must stay on one line (names, one-line fields). */
export function printableLine(text: string): string {
  return printable(text).replace(/[\n\t]/g, (c) => (c === '\n' ? '\\n' : '\\t'));
}

/** What starts every line of a message on stderr but its first. */
export const CONTINUATION = '  ';

/** `text` as kiln writes it on stderr: printable, and every line after its first (after `printable`, `\n` is
 *  the only line break left) starts with CONTINUATION. The one formatter of kiln's stderr. */
export function stderrText(text: string): string {
  return printable(text).replace(/\n/g, `\n${CONTINUATION}`);
}

/** Write `text` on stderr as one message (`stderrText`). For the writers that are not the server's bounded
 *  log (mcp/server.ts `stderrLog`, which formats the same way). */
export function writeStderr(text: string): void {
  writeStderrAt('info', text);
}

/** writeStderr, at `level` (a JSON line's level; the text is the same either way). */
export function writeStderrAt(level: 'info' | 'warn' | 'error', text: string): void {
  if (jsonFields) {
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), ...jsonFields, msg: text.replace(/^kiln: /, '') })}\n`);
    return;
  }
  process.stderr.write(`${stderrText(text)}\n`);
}

let jsonFields: Record<string, string> | undefined;

/** From now on every writeStderr line is one JSON object (`kiln mcp --http --log-format json`: the same shape
 *  as the server's own lines, mcp/log.ts), with `fields` in each. */
export function stderrAsJson(fields: Record<string, string>): void {
  jsonFields = fields;
}

/** A guest's log message as the terminal shows it: its lines (split at `\n`, `\r\n`, `\r`, U+2028/9 and every
 *  other line break), each starting with `[<mark…> <level>] `, the marks (session, source file) made one-line
 *  printable, the text printable. Each is written as a message of its own. The one formatter of guest log
 *  lines on stderr (kiln mcp, kiln run, kiln bdd, the log of an extension's top level while it is built). */
export function guestLog(marks: string[], level: string, message: string): string[] {
  const prefix = `[${[...marks, level].map(printableLine).join(' ')}] `;
  return message.split(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/).map((line) => prefix + printable(line));
}
