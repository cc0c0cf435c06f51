// Bounding log volume. A guest that calls console.log in a loop, or a server whose stderr nobody drains fast
// enough, must not grow the host's memory or stall it: every log sink passes through a LogLimiter, which lets
// at most `lines` lines and `chars` characters through per window, cuts each line at `lineChars` characters, drops the rest,
// and reports how much it dropped in one line when the next window opens (or on `flush`; with `flushTimer`,
// at the end of the window that dropped, even when nothing else is written).
//
// Used per guest instance (host/engine/instance.ts: before a line leaves the guest's thread), per session on
// the server's thread (host/sessions/sessions.ts: what all of a session's guests send to the server's stderr and to its
// client, so one session's flood is not every session's traffic), and once for the server's stderr
// (host/mcp/server.ts).

export interface LogBudget {
  /** Window length in milliseconds. */
  windowMs: number;
  /** Lines let through per window. */
  lines: number;
  /** Characters (UTF-16 code units) let through per window. */
  chars: number;
  /** A longer line is cut to this many characters. */
  lineChars: number;
}

/** Per guest: plenty for diagnostics, far too little to hurt the server. */
export const GUEST_LOG_BUDGET: LogBudget = { windowMs: 1000, lines: 1000, chars: 1 << 20, lineChars: 16 * 1024 };
/** Per session, on the server's thread: each line a client is sent costs it a message to parse, so a flood
 *  in one session would delay every other session's answers behind it (bench/log-flood.mjs). */
export const SESSION_LOG_BUDGET: LogBudget = { windowMs: 1000, lines: 100, chars: 128 * 1024, lineChars: 16 * 1024 };

export interface LimiterOptions<L> {
  /** The level of the "dropped" notice, from the level of the last line written (default: `noticeLevel`). */
  noticeFor?: (last: L) => L;
  /** Report a window's drops when it ends (a timer that does not keep the process alive). */
  flushTimer?: boolean;
}

export class LogLimiter<L> {
  private windowStart = -Infinity;
  private lines = 0;
  private chars = 0;
  private droppedLines = 0;
  private droppedChars = 0;
  private last: L;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly budget: LogBudget,
    private readonly sink: (level: L, message: string) => void,
    /** The level of the "dropped" notice. */
    private readonly noticeLevel: L,
    private readonly now: () => number = () => performance.now(),
    private readonly options: LimiterOptions<L> = {},
  ) {
    this.last = noticeLevel;
  }

  write(level: L, message: string): void {
    this.last = level;
    const t = this.now();
    if (t - this.windowStart >= this.budget.windowMs) {
      this.flush();
      this.windowStart = t;
      this.lines = 0;
      this.chars = 0;
    }
    let text = message;
    if (message.length > this.budget.lineChars) {
      // Never between the halves of a surrogate pair (the kept half would print as U+FFFD).
      const keep = this.budget.lineChars - (isHighSurrogate(message.charCodeAt(this.budget.lineChars - 1)) ? 1 : 0);
      text = `${message.slice(0, keep)}… [${message.length - keep} more characters cut]`;
    }
    if (this.lines >= this.budget.lines || this.chars + text.length > this.budget.chars) {
      this.droppedLines++;
      this.droppedChars += message.length;
      if (this.options.flushTimer && !this.timer) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.flush();
        }, Math.max(0, this.windowStart + this.budget.windowMs - t));
        this.timer.unref?.();
      }
      return;
    }
    this.lines++;
    this.chars += text.length;
    this.sink(level, text);
  }

  /** Report what was dropped since the last report (if anything). */
  flush(): void {
    if (this.droppedLines === 0) return;
    const { droppedLines, droppedChars } = this;
    this.droppedLines = 0;
    this.droppedChars = 0;
    this.sink(this.options.noticeFor ? this.options.noticeFor(this.last) : this.noticeLevel,
      `[kiln] dropped ${droppedLines} log line(s) (${droppedChars} characters): at most ${this.budget.lines} lines and ` +
        `${this.budget.chars} characters per ${this.budget.windowMs} ms get through`);
  }
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
