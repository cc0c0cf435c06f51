// The audit log ([audit] path in kiln.toml): one JSON line per tool call (start and end) and per capability
// decision, appended and flushed line by line so it is readable after a crash or SIGTERM, and rotated by size:
// the full file becomes `<path>.1`, `<path>.1` becomes `<path>.2`, … up to `<path>.<keep>` (`auditFiles`).
//
// Invariants:
//  - Every request a page makes is a decision line of its own (op "browser.request", capabilities/browser/gate.ts), like
//    each fetch; the target is its method and URL without query or fragment (CONNECT: only host and port).
//  - Never written: environment values, request or response bodies, command output, URL query strings or
//    fragments (they carry tokens), argument values. A target is a command name, a URL's origin and path, a
//    browser method, a tool name, a workspace path (fs.*: never the file's content).
//  - No line is lost silently. A guest cannot drown earlier lines with repeated decisions: within one call,
//    a decision identical to one already written (same op, target, verdict, rule, reason) is counted, not
//    written, and so is every decision of an op and verdict past the first TARGETS_PER_CALL[verdict]
//    distinct targets, allowed ones as refusals (`Coalescer`); the counts are written as `repeated` lines at
//    the call's end (and every REPEATED_EVERY counted decisions, so a crash mid-call leaves them too). So one
//    call writes a bounded number of decision lines, whatever it does. Rotation drops only `<path>.<keep>`, and the new
//    file's first line says so (`rotated`, with the bytes dropped). A line that cannot be written (disk full,
//    the file removed) never fails a call: it is counted, stderr says so when the failures start and when
//    they end, and the first line written again is `dropped` with the count.
import { appendFileSync, renameSync, statSync } from 'node:fs';
import { writeStderr } from '../untrusted/terminal.js';
import { operation, type OpAuditKind } from '../capabilities/operations.js';

export interface AuditSettings {
  /** Absolute path of the log; undefined: no audit log. */
  path?: string;
  /** Rotate once the file is this large. */
  maxBytes: number;
  /** Rotated files kept beside the current one: `<path>.1` (newest) … `<path>.<keep>`. */
  keep: number;
}

export const DEFAULT_AUDIT: AuditSettings = { maxBytes: 10 * 1024 * 1024, keep: 5 };
/** The bounds of [audit] keep (kiln.toml). */
export const AUDIT_KEEP_RANGE = { min: 1, max: 1000 } as const;

/** Every file the log may write: the current one and its rotations (the files no tool may touch). */
export function auditFiles(settings: AuditSettings): string[] {
  if (!settings.path) return [];
  return [settings.path, ...Array.from({ length: settings.keep }, (_, i) => `${settings.path}.${i + 1}`)];
}

/** Per call, op and verdict: decisions of this many distinct targets are written; the rest are counted.
 *  Allowed ones are what a tool did, so more of them are written one by one. */
export const TARGETS_PER_CALL: Readonly<Record<DecisionRecord['verdict'], number>> = { deny: 20, allow: 100 };
/** A call still running writes its counts each time this many more decisions were counted. */
export const REPEATED_EVERY = 10_000;
/** Distinct decisions a call's Coalescer remembers (its memory bound); later distinct ones are written. */
const MAX_TRACKED = 10_000;

/** Who did it: the call's session, the extension file and artifact hash, the tool. */
export interface AuditSubject {
  session: string;
  extension: string;
  sha256: string;
  tool: string;
}

export type AuditRecord =
  | (AuditSubject & { type: 'call'; phase: 'start' })
  | (AuditSubject & { type: 'call'; phase: 'end'; durationMs: number; outcome: 'ok' | 'error'; error?: string })
  | (AuditSubject & { type: 'decision'; op: string; target: string; verdict: 'allow' | 'deny'; by: string; reason?: string; durationMs: number })
  /** A source whose (re)build would read a file a guest wrote through allow.fs was refused (extensions/registry.ts):
   *  `input` that file, `writtenBy` and `tool` who wrote it. */
  | { type: 'build'; extension: string; verdict: 'deny'; input: string; writtenBy: string; tool: string; reason: string }
  /** [approvals] (policy/approvals/gate.ts): the rules' verdict and the rule that decided ("decision"); a human asked
   *  ("asked") and their answer ("answered": once, session, always, decline, cancel, timeout, cancelled,
   *  error, invalid); an earlier answer that covered it ("remembered"); a required approval nobody could be asked
   *  for ("unasked"). `target` is policy/approvals/question.ts `safeTarget`: no argument values. */
  | (AuditSubject & {
    type: 'approval'; event: 'decision' | 'asked' | 'answered' | 'remembered' | 'unasked'; op: string; target: string;
    verdict?: 'allow' | 'require' | 'deny'; rule?: string; answer?: string; durationMs?: number;
    /** Asked, or answered, as an MCP 2026-07-28 round (the call ended with the question; its retry answered it). */
    round?: true;
  })
  /** A retry's `requestState` (MCP 2026-07-28) that kiln refused, and why (mcp/request-state.ts StateRefusal). */
  | { type: 'approval'; event: 'state-refused'; tool: string; reason: string }
  /** Decisions of one call that were counted, not written (`Coalescer`): `count` of them since the last such
   *  line, like the written decision with this op, target, verdict and rule; `target` "*": decisions of this
   *  op and verdict past its first TARGETS_PER_CALL[verdict] distinct targets (`by`: the first of them's).
   *  `final`: written at the call's end. */
  | (AuditSubject & { type: 'repeated'; op: string; target: string; verdict: 'allow' | 'deny'; by: string; count: number; final: boolean })
  /** The log's own events: the first line of a rotated-to file (`removed`: the rotation dropped, and its
   *  bytes), and the first line written after lines were lost (`dropped`: how many, since when, why). */
  | { type: 'log'; event: 'rotated'; removed?: string; removedBytes?: number }
  | { type: 'log'; event: 'dropped'; lines: number; since: string; error: string };

export type DecisionRecord = Extract<AuditRecord, { type: 'decision' }>;

/** What a capability call is aimed at, as the log may show it (see the invariants above); the operation's
 *  `audit` column (capabilities/operations.ts) says which part of its request that is. */
export function auditTarget(kind: string, request: unknown): string {
  const r = (typeof request === 'object' && request !== null ? request : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v.slice(0, 300) : '');
  // browser.request: a page's own request, judged at its gate (no operation of the guest's).
  const audit: OpAuditKind = kind === 'browser.request' ? 'url' : operation(kind)?.audit ?? 'name';
  switch (audit) {
    case 'url': {
      try {
        const u = new URL(str(r.url));
        return `${str(r.method) || 'GET'} ${u.origin}${u.pathname}`.slice(0, 500);
      } catch {
        return 'invalid URL';
      }
    }
    case 'browser': {
      const method = `${str(r.target)}.${str(r.method)}`;
      if (r.method !== 'goto' || !Array.isArray(r.args)) return method;
      try {
        const u = new URL(str(r.args[0]));
        return `${method} ${u.origin}${u.pathname}`.slice(0, 500);
      } catch {
        return method;
      }
    }
    case 'tool': return str(r.tool);
    case 'paths': return `${str(r.from)} -> ${str(r.to)}`;
    case 'path': return str(r.path); // the path as the guest gave it; never the data
    case 'name': return str(r.name);
  }
}

/** Which decisions of one call are written and which only counted (see the invariants above). Pure: it
 *  decides, the AuditLog writes. */
export class Coalescer {
  /** Written decisions by identity, with the count since the last `repeated` line. */
  private readonly seen = new Map<string, { record: DecisionRecord; count: number }>();
  /** Distinct targets written, by op and verdict; and the decisions past them, counted, by op and verdict. */
  private readonly targets = new Map<string, number>();
  private readonly overflow = new Map<string, { record: DecisionRecord; count: number }>();
  private counted = 0;

  /** True: write `r`. False: it was counted. */
  admit(r: DecisionRecord): boolean {
    const id = JSON.stringify([r.op, r.target, r.verdict, r.by, r.reason ?? '']);
    const seen = this.seen.get(id);
    if (seen) return this.count(seen);
    const key = JSON.stringify([r.op, r.verdict]);
    const n = this.targets.get(key) ?? 0;
    if (n >= TARGETS_PER_CALL[r.verdict]) {
      let o = this.overflow.get(key);
      if (!o) this.overflow.set(key, (o = { record: r, count: 0 }));
      return this.count(o);
    }
    this.targets.set(key, n + 1);
    if (this.seen.size < MAX_TRACKED) this.seen.set(id, { record: r, count: 0 });
    return true;
  }

  private count(entry: { count: number }): false {
    entry.count++;
    this.counted++;
    return false;
  }

  /** Interim counts are due (REPEATED_EVERY counted since the last `repeated` lines). */
  get due(): boolean {
    return this.counted >= REPEATED_EVERY;
  }

  /** The `repeated` lines for what was counted since the last call of this, and the counts reset. */
  take(final: boolean): AuditRecord[] {
    const out: AuditRecord[] = [];
    const line = (e: { record: DecisionRecord; count: number }, target: string) => {
      if (e.count === 0) return;
      const { session, extension, sha256, tool, op, verdict, by } = e.record;
      out.push({ session, extension, sha256, tool, type: 'repeated', op, target, verdict, by, count: e.count, final });
      e.count = 0;
    };
    for (const e of this.seen.values()) line(e, e.record.target);
    for (const e of this.overflow.values()) line(e, '*');
    this.counted = 0;
    return out;
  }
}

export class AuditLog {
  private size: number;
  /** Lines lost since the last one written, the time of the first, and why. */
  private dropped = 0;
  private droppedSince = '';
  private droppedError = '';
  /** The decisions of each running call (its CancelHook), until `endCall`. */
  private readonly calls = new WeakMap<object, Coalescer>();
  /** Calls that ended: a decision that settles after its call's end is written as it is. */
  private readonly ended = new WeakSet<object>();

  /** Told every record as it happens, each decision included (metrics: mcp/metrics.ts), whether or not the log
   *  writes it (it writes nothing without a path). */
  readonly observers: ((record: AuditRecord) => void)[] = [];

  constructor(private readonly settings: AuditSettings, private readonly warn: (line: string) => void = writeStderr) {
    this.size = settings.path ? statSync(settings.path, { throwIfNoEntry: false })?.size ?? 0 : 0;
  }

  /** A capability decision of the call `call` (its hook; none: written as it is). */
  decision(call: object | undefined, record: DecisionRecord): void {
    this.tell(record);
    if (!call || this.ended.has(call)) return this.append0(record);
    let c = this.calls.get(call);
    if (!c) this.calls.set(call, (c = new Coalescer()));
    if (c.admit(record)) this.append0(record);
    else if (c.due) for (const r of c.take(false)) this.write(r);
  }

  private tell(record: AuditRecord): void {
    for (const o of this.observers) {
      try {
        o(record);
      } catch {
        // an observer's failure is its own
      }
    }
  }

  /** The call `call` ended: what it counted is written. */
  endCall(call: object): void {
    this.ended.add(call);
    const c = this.calls.get(call);
    if (!c) return;
    this.calls.delete(call);
    for (const r of c.take(true)) this.write(r);
  }

  write(record: AuditRecord): void {
    this.tell(record);
    this.append0(record);
  }

  /** Write `record` to the file (when there is one), saying once when lines were lost. */
  private append0(record: AuditRecord): void {
    if (!this.settings.path) return;
    const time = new Date().toISOString();
    try {
      if (this.dropped > 0) {
        this.append({ type: 'log', event: 'dropped', lines: this.dropped, since: this.droppedSince, error: this.droppedError }, time);
        this.warn(`kiln: the audit log ${this.settings.path} is written again; ${this.dropped} line(s) were lost (a "dropped" line in it says so)`);
        this.dropped = 0;
      }
      this.append(record, time);
    } catch (e) {
      if (this.dropped === 0) {
        this.droppedSince = time;
        this.droppedError = (e as Error).message.slice(0, 300);
        this.warn(`kiln: the audit log ${this.settings.path} cannot be written: ${this.droppedError}; lines are counted until it can, then the count is written`);
      }
      this.dropped++;
    }
  }

  private append(record: AuditRecord, time: string): void {
    const line = JSON.stringify({ time, ...record }) + '\n';
    const bytes = Buffer.byteLength(line);
    if (this.size + bytes > this.settings.maxBytes && this.size > 0) {
      const rotated = this.rotate();
      this.size = 0;
      this.append({ type: 'log', event: 'rotated', ...rotated }, time);
    }
    appendFileSync(this.settings.path!, line, { mode: 0o600 });
    this.size += bytes;
  }

  /** `<path>.<i>` → `<path>.<i+1>` from the oldest kept, then `<path>` → `<path>.1`; returns what was dropped. */
  private rotate(): { removed?: string; removedBytes?: number } {
    const [path, ...kept] = auditFiles(this.settings);
    const oldest = kept[kept.length - 1];
    const removedBytes = statSync(oldest, { throwIfNoEntry: false })?.size;
    for (let i = kept.length - 1; i > 0; i--) {
      if (statSync(kept[i - 1], { throwIfNoEntry: false })) renameSync(kept[i - 1], kept[i]);
    }
    renameSync(path, kept[0]);
    return removedBytes === undefined ? {} : { removed: oldest, removedBytes };
  }
}
