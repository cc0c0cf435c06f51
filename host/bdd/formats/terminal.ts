// pretty, progress and summary: @cucumber/pretty-formatter's printers, the ones cucumber-js 13 uses for these three
// names, with the options it gives them (pretty and progress end with the summary, as cucumber-js's do).
//
// Text on a terminal comes partly from guests (error messages, attachments, step text): its control characters
// are shown as escapes (host/untrusted/terminal.ts), so a guest cannot move the cursor, rewrite or hide a line, or set the
// window title. The printers' own colours are added after that, and only when `colors` is set.
import { Writable } from 'node:stream';
import type { Envelope } from '@cucumber/messages';
import { CUCUMBER_THEME, PrettyPrinter, ProgressPrinter, SummaryPrinter, type Theme } from '@cucumber/pretty-formatter';
import { printable } from '../../untrusted/terminal.js';
import type { Formatter } from './formatter.js';

/**
 * The printers write to a stream and colour through util.styleText, which asks that stream whether it is a
 * colour terminal (and checks that it is a real stream). This one hands their text to `write` and answers with
 * `colors`.
 */
class TextSink extends Writable {
  readonly isTTY: boolean;
  constructor(private readonly out: (text: string) => void, colors: boolean) {
    super();
    this.isTTY = colors;
  }
  override write(chunk: unknown, ..._rest: unknown[]): boolean {
    this.out(String(chunk));
    return true;
  }
  getColorDepth(): number {
    return this.isTTY ? 8 : 1;
  }
  hasColors(): boolean {
    return this.isTTY;
  }
}

/**
 * cucumber-js's theme without its styles, keeping the status icons, progress characters and bullet: without
 * colours no style is ever applied, whatever FORCE_COLOR says, and the text is the same as with them.
 */
const PLAIN_CUCUMBER_THEME: Theme = {
  status: { icon: CUCUMBER_THEME.status?.icon, progress: CUCUMBER_THEME.status?.progress },
  symbol: CUCUMBER_THEME.symbol,
};

export function terminalFormatter(name: 'pretty' | 'progress' | 'summary', write: (text: string) => void, colors: boolean): Formatter {
  const stream = new TextSink(write, colors);
  const theme = colors ? CUCUMBER_THEME : PLAIN_CUCUMBER_THEME;
  const printer =
    name === 'pretty' ? new PrettyPrinter({ stream, options: { theme, summarise: true } })
    : name === 'progress' ? new ProgressPrinter({ stream, options: { theme, summarise: true } })
    : new SummaryPrinter({ stream, options: { theme } });
  return { update: (envelope) => printer.update(terminalSafe(envelope)), finish: async () => {} };
}

/** The envelope with control characters in its strings shown as escapes (`source` is never printed: kept). */
function terminalSafe(envelope: Envelope): Envelope {
  return envelope.source ? envelope : (escapeStrings(envelope) as Envelope);
}

function escapeStrings(value: unknown): unknown {
  if (typeof value === 'string') return printable(value);
  if (Array.isArray(value)) return value.map(escapeStrings);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = escapeStrings(item);
    return out;
  }
  return value;
}
