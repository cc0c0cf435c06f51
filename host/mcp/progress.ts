// A call's progress, from the guest's ctx.progress to MCP `notifications/progress`. The update is the
// guest's JSON, so it is checked here: a finite `progress` that grows (MCP requires it to increase), an
// optional finite `total`, an optional message (cut at 1,000 characters). At most one notification per
// INTERVAL_MS goes out; an update that comes sooner waits for the end of the interval, and replaces any
// update already waiting (the client sees the newest). Nothing is sent after `close` (the call is over).

export const INTERVAL_MS = 100;
const MAX_MESSAGE = 1000;

export type ProgressParams = {
  progressToken: string | number;
  progress: number;
  total?: number;
  message?: string;
};

export interface ProgressSink {
  (update: string): void;
  close(): void;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The update in a guest's JSON, or undefined when it is not one. */
export function parseProgress(update: string): Omit<ProgressParams, 'progressToken'> | undefined {
  let u: unknown;
  try {
    u = JSON.parse(update);
  } catch {
    return undefined;
  }
  if (typeof u !== 'object' || u === null) return undefined;
  const { progress, total, message } = u as Record<string, unknown>;
  if (!finite(progress) || (total !== undefined && !finite(total)) || (message !== undefined && typeof message !== 'string')) return undefined;
  return { progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message: message.slice(0, MAX_MESSAGE) } : {}) };
}

export function progressSink(progressToken: string | number, send: (p: ProgressParams) => void, now: () => number = Date.now): ProgressSink {
  let last = -Infinity; // the last progress value sent
  let sentAt = -Infinity;
  let waiting: ProgressParams | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const flush = () => {
    timer = undefined;
    if (closed || !waiting) return;
    const p = waiting;
    waiting = undefined;
    last = p.progress;
    sentAt = now();
    send(p);
  };
  const sink = ((update: string) => {
    const u = parseProgress(update);
    if (closed || !u || u.progress <= last || (waiting && u.progress <= waiting.progress)) return;
    waiting = { progressToken, ...u };
    const wait = sentAt + INTERVAL_MS - now();
    if (wait <= 0) flush();
    else timer ??= setTimeout(flush, wait).unref();
  }) as ProgressSink;
  sink.close = () => {
    closed = true;
    if (timer) clearTimeout(timer);
  };
  return sink;
}
