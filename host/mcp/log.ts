// What `kiln mcp` writes to stderr: kiln's own messages, guests' console lines, and (over HTTP) one line per
// answered call. `--log-format text` is for people (the lines stdio clients show); `json` (the default over
// HTTP) is one JSON object a line, from pino, with a timestamp.
//
// Invariants:
//  - Never a secret, a token or an argument value: a call's line names the request id, the principal, the
//    session (as a digest), the tool, the outcome and the duration.
//  - Bounded: a reader that does not keep up loses lines, counted and reported, and never makes the server wait
//    or hold them in memory (MAX_QUEUED_LOG_BYTES).
//  - Guest text is data: escaped on a terminal (text: untrusted/terminal.ts), a JSON string field (json).
import { createHash } from 'node:crypto';
import { LogLimiter } from '../untrusted/log-limiter.js';
import { guestLog, stderrText } from '../untrusted/terminal.js';

/** Bytes of log lines (stderr) or log notifications (stdout) that may wait for a slow reader; past it, lines
 *  are dropped and counted, never queued in front of later answers. */
export const MAX_QUEUED_LOG_BYTES = 1 << 20;

/** The server's stderr: bounded (so a flood of guest logs cannot queue up in memory, nor a reader who does not
 *  keep up make the server wait), never fatal. */
export function stderrLog(): (line: string) => void {
  process.stderr.on('error', () => {}); // EPIPE/ENOBUFS: a log line is lost, the server goes on
  let dropped = 0;
  const limiter = new LogLimiter<null>({ windowMs: 1000, lines: 5000, chars: 4 << 20, lineChars: 64 * 1024 }, (_l, line) => {
    if (process.stderr.writableLength > MAX_QUEUED_LOG_BYTES) {
      dropped++;
      return;
    }
    if (dropped) {
      process.stderr.write(`kiln: ${dropped} line(s) dropped: stderr was not read as fast as they came\n`);
      dropped = 0;
    }
    process.stderr.write(`${stderrText(line)}\n`); // guest logs and names are untrusted (untrusted/terminal.ts)
  }, null);
  return (line) => limiter.write(null, line);
}

export type LogFormat = 'json' | 'text';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];
export type LogLevel = 'info' | 'warning' | 'error';

/** One answered tools/call request. */
export interface CallLine {
  requestId: string;
  principal: string;
  /** The kiln session as the client named it (written as a digest); undefined for a call's own session
   *  (a 2026 call naming none), written as null. */
  session: string | undefined;
  tool: string;
  outcome: string;
  error?: string;
  durationMs: number;
  revision: string;
}

export interface ServerLog {
  /** A message of kiln's own. */
  kiln(text: string, level?: LogLevel): void;
  /** A guest's console line, from `source` (its file) in `session`. */
  guest(session: string, source: string, level: string, message: string): void;
  /** One answered call (HTTP). */
  call(line: CallLine): void;
}

/** The digest a log shows of a session's name. */
export const sessionDigest = (name: string): string => createHash('sha256').update(name).digest('hex').slice(0, 12);

/** Lines for people: "kiln: ..." and the guests' marked lines, through the bounded stderr writer. */
export function textLog(): ServerLog {
  const write = stderrLog();
  return {
    kiln: (text) => write(`kiln: ${text}`),
    guest: (session, source, level, message) => {
      for (const line of guestLog([session, source], level, message)) write(line);
    },
    call: (l) => write(`kiln: call ${l.tool} ${l.outcome}${l.error ? ` (${l.error})` : ''} in ${l.durationMs} ms; principal ${l.principal}, session ${l.session === undefined ? '(its own)' : sessionDigest(l.session)}, request ${l.requestId}, ${l.revision}`),
  };
}

/** JSON lines (pino), to stderr. */
/** JSON lines; `base`: fields every line carries (the replica's name). */
export async function jsonLog(base: Record<string, string> = {}): Promise<ServerLog> {
  const { default: pino } = await import('pino');
  let dropped = 0;
  const dest = pino.destination({ fd: 2, sync: false, maxLength: MAX_QUEUED_LOG_BYTES });
  dest.on('drop', () => void dropped++);
  dest.on('error', () => {}); // EPIPE: a line is lost, the server goes on
  const logger = pino({ base: Object.keys(base).length ? base : undefined, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } }, dest);
  const level = (l: string) => (l === 'error' ? 'error' : l === 'warn' || l === 'warning' ? 'warn' : l === 'debug' ? 'debug' : 'info');
  const before = () => {
    if (!dropped) return;
    const n = dropped;
    dropped = 0;
    logger.warn({ dropped: n }, `${n} log line(s) dropped: stderr was not read as fast as they came`);
  };
  return {
    kiln: (text, l = 'info') => {
      before();
      logger[level(l)](text);
    },
    guest: (session, source, l, message) => {
      before();
      logger[level(l)]({ guest: source, session: sessionDigest(session) }, message);
    },
    call: (line) => {
      before();
      const { session, ...rest } = line;
      logger.info({ ...rest, session: session === undefined ? null : sessionDigest(session) }, 'call');
    },
  };
}
