// The sessions of a server: created on first use, serialised within, reaped when idle.
//
// Invariants:
//  - Calls to one guest — one extension in one session, the unit that shares a `globalThis` — run one at a
//    time, in arrival order (`run`); calls to different extensions, or in different sessions, run at once. A
//    tool calling another through `plugins[...]` is part of its caller's call and does not queue.
//  - A queued call whose signal aborts (the client cancelled it) leaves the queue without running.
//  - A session idle for `idleTtlMs` is closed: its guests, vars, persistent processes and cookies go.
//  - At most `maxSessions` sessions are held; a new one past that closes an idle session — the least recently
//    used of the owner holding the most (`ownerOf`) — (its guests, vars, processes and cookies go), or is
//    refused with a KilnError if every session is busy.
//  - At most `maxInstances` guests are alive across all sessions; past that, the least recently used idle
//    session's guests are discarded (its vars, processes and cookies stay; its next call starts fresh globals).
//  - In a server (host "mcp"), what all of a session's guests log reaches the server's stderr and its client
//    through one SESSION_LOG_BUDGET per session (untrusted/log-limiter.ts), its drops reported at the window's end: one
//    session's log flood does not become every session's traffic.
import type { OpenKind } from '../policy/authority.js';
import type { Engine } from '../engine/engine.js';
import { WorkerPool } from '../engine/pool.js';
import { CancelledError, KilnError, cancelledMessage } from '../errors.js';
import { DEFAULT_POLICY, DEFAULT_SESSION_SETTINGS, type OperatorPolicy, type SessionSettings } from '../policy/policy.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import { MemoryBudget } from '../policy/memory-budget.js';
import { Browsers } from '../capabilities/browser/chromium.js';
import { Session } from './session.js';
import { LogLimiter, SESSION_LOG_BUDGET } from '../untrusted/log-limiter.js';
import type { Origin } from '../capabilities/commands/processes.js';
import type { VarsStore } from './store.js';

/** A session's name as a client gives it; the server may put a principal's key before it (mcp/host.ts). */
const SESSION_NAME = /^[\w.:@-]{1,128}$/;
/** A session's name as the server keeps it. */
const KEPT_NAME = /^[\w.:@-]{1,200}$/;

export const validSessionName = (name: string): boolean => SESSION_NAME.test(name);

/** Why a call whose `signal` aborted failed: its reason when that is a KilnError, else a CancelledError. */
function cancelledBy(signal: AbortSignal): Error {
  const why = signal.reason;
  if (why instanceof KilnError) return why;
  return new CancelledError(cancelledMessage('the call', why));
}

/** Rejects when `signal` aborts (cancelledBy). */
function aborted<T>(signal: AbortSignal): Promise<T> {
  return new Promise<T>((_, reject) => {
    if (signal.aborted) return reject(cancelledBy(signal));
    signal.addEventListener('abort', () => reject(cancelledBy(signal)), { once: true });
  });
}

interface Entry {
  session: Session;
  lastUsed: number;
  busy: number;
  /** The tail of each guest's queue, by unit (an extension file, or the session's scripts). */
  queues: Map<string, Promise<unknown>>;
  /** Calls of this session running now (started, not settled). */
  running: number;
}

/** The queue unit of a session's script guest (run_script): no extension file is named like this. */
export const SCRIPT_UNIT = '\u0000run_script';

/** Who a session belongs to, for sharing room fairly: its name up to the first ':' (an HTTP principal's
 *  sessions are named `<principal key>:<name>`: mcp/host.ts); a name without one, to nobody in particular. */
export function ownerOf(name: string): string {
  const i = name.indexOf(':');
  return i < 0 ? '' : name.slice(0, i);
}

export class Sessions {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;
  /** The threads the sessions' guests run on (with worker isolation). */
  private readonly pool: WorkerPool;

  constructor(
    private readonly engine: Engine,
    private readonly host: 'mcp' | 'bdd' | 'script',
    private readonly onLog: (session: string, ext: LoadedExtension, level: string, message: string) => void,
    private readonly policy: OperatorPolicy = DEFAULT_POLICY,
    readonly settings: SessionSettings = DEFAULT_SESSION_SETTINGS,
  ) {
    this.sweeper = setInterval(() => this.reap(), Math.max(10, Math.min(60_000, settings.idleTtlMs / 4)));
    this.sweeper.unref();
    this.pool = new WorkerPool(engine);
    if (settings.isolation === 'worker') this.pool.warm();
    this.budget = new MemoryBudget(policy.limits.totalMemoryBytes, (bytes) => this.reclaimMemory(bytes));
    this.browsers = new Browsers(policy.browser, () => policy.net);
  }

  /** The server's browser (launched when a tool first uses `page` or `context`). */
  readonly browsers: Browsers;

  /** Where vars live beyond this process ([sessions] store, sessions/store.ts); set before the first call. */
  store: VarsStore | undefined;

  /** The server's ceiling on guest memory (policy/memory-budget.ts). */
  readonly budget: MemoryBudget;

  /** Free idle sessions' guests, least recently used first, until `bytes` of the budget are free. */
  private reclaimMemory(bytes: number): void {
    const target = this.budget.reserved - bytes;
    const idle = [...this.entries.values()].filter((e) => e.busy === 0 && e.session.liveInstances > 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of idle) {
      if (this.budget.reserved <= target) break;
      e.session.releaseInstances('the server needed its memory for another guest');
    }
  }

  /** Live guest instances across every session. */
  liveGuests(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.session.liveInstances;
    return n;
  }

  /** Bytes of the server's memory budget the live guests hold ([limits] totalMemoryBytes). */
  reservedBytes(): number {
    return this.budget.reserved;
  }

  get size(): number {
    return this.entries.size;
  }

  /** How many sessions have a name starting with `prefix`. */
  count(prefix: string): number {
    let n = 0;
    for (const name of this.entries.keys()) if (name.startsWith(prefix)) n++;
    return n;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  private entry(name: string): Entry {
    if (!KEPT_NAME.test(name)) throw new KilnError(`session name ${JSON.stringify(name)} must be 1-128 characters of letters, digits and . _ : @ -`);
    let e = this.entries.get(name);
    if (!e) {
      this.makeRoom();
      const session = new Session(name, this.engine, this.host, this.sessionLog(name), this.policy, this.pool, this.budget, this.browsers, this.store);
      e = { session, lastUsed: Date.now(), busy: 0, queues: new Map(), running: 0 };
      this.entries.set(name, e);
    }
    return e;
  }

  /** Where session `name`'s guests log: `onLog`, bounded per session in a server (see the invariants). */
  private sessionLog(name: string): (ext: LoadedExtension, level: string, message: string) => void {
    if (this.host !== 'mcp') return (ext, level, msg) => this.onLog(name, ext, level, msg);
    // The "dropped" notice goes out as the extension that logged last (noticeFor); a limiter has dropped
    // nothing before its first line, so the placeholder level is never sent.
    const limiter = new LogLimiter<{ ext?: LoadedExtension; level: string }>(
      SESSION_LOG_BUDGET, ({ ext, level }, msg) => ext && this.onLog(name, ext, level, msg), { level: 'warn' },
      undefined, { noticeFor: (last) => ({ ext: last.ext, level: 'warn' }), flushTimer: true },
    );
    return (ext, level, msg) => limiter.write({ ext, level }, msg);
  }

  /** Before a new session: at `maxSessions`, close an idle one — the least recently used of the owner holding
   *  the most sessions (ownerOf), so that one client filling the server makes room from its own; none idle:
   *  refuse. */
  private makeRoom(): void {
    if (this.entries.size < this.settings.maxSessions) return;
    const held = new Map<string, number>();
    for (const name of this.entries.keys()) held.set(ownerOf(name), (held.get(ownerOf(name)) ?? 0) + 1);
    let victim: [string, Entry] | undefined;
    const rank = ([name, e]: [string, Entry]) => [held.get(ownerOf(name))!, -e.lastUsed];
    for (const kv of this.entries) {
      if (kv[1].busy !== 0) continue;
      if (!victim) { victim = kv; continue; }
      const [a, b] = [rank(kv), rank(victim)];
      if (a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])) victim = kv;
    }
    if (!victim) throw new KilnError(`the server holds ${this.settings.maxSessions} sessions, all busy; retry later or raise [sessions] maxSessions`);
    this.close(victim[0]);
  }

  /** Run `fn` in session `name` after every call queued before it for the same `unit` (the guest it runs
   *  in: an extension's file). A call cancelled through `signal` while it waits never runs. */
  run<T>(name: string, unit: string, fn: (session: Session) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const e = this.entry(name);
    e.busy++;
    const before = e.queues.get(unit) ?? Promise.resolve();
    const result = before.then(async () => {
      if (signal?.aborted) throw cancelledBy(signal);
      e.lastUsed = Date.now();
      // A busy worker with none of this session's calls running is another session's guest spinning: move.
      // With one of ours running, it is ours: the call waits its turn on the thread, nothing is discarded.
      if (e.running === 0) e.session.avoidBusyWorker();
      e.running++;
      try {
        return await fn(e.session);
      } finally {
        e.running--;
      }
    });
    // While it waits, a cancelled call answers at once (it will not run: see above).
    const answer = signal ? Promise.race([result, aborted<T>(signal)]) : result;
    const tail: Promise<void> = result.then(() => this.settled(e, unit, tail), () => this.settled(e, unit, tail));
    e.queues.set(unit, tail);
    return answer;
  }

  private settled(e: Entry, unit: string, tail: Promise<unknown>): void {
    if (e.queues.get(unit) === tail) e.queues.delete(unit);
    e.busy--;
    e.lastUsed = Date.now();
    this.reclaim();
  }

  /** End a session now: guests, vars, processes and cookies. */
  /** End session `name` here. `forget`: it ends everywhere (closed by its client): its vars leave the store too. */
  close(name: string, forget = false): boolean {
    if (forget) void this.store?.drop(name);
    const e = this.entries.get(name);
    if (!e) return false;
    this.entries.delete(name);
    e.session.close();
    return true;
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const name of [...this.entries.keys()]) this.close(name);
    this.pool.closeAll();
    void this.browsers.close();
  }

  /** Discard every session's guests (their extensions were reloaded); vars, processes and cookies stay. */
  releaseGuests(reason: string): void {
    for (const e of this.entries.values()) e.session.releaseInstances(reason);
  }

  /** Discard every session's guests once the calls already queued for them have finished (the operator's
   *  config changed: mcp/config-watch.ts): a call in flight keeps its guest to the end, the next one gets a fresh
   *  guest under the new settings. */
  retireGuests(reason: string): void {
    for (const [name, e] of this.entries) {
      for (const ext of e.session.guestExtensions()) {
        // The queue of a guest is its extension file's (scripts' guest: the script unit); queued behind it, the
        // discard waits for what runs there now.
        const unit = ext.hostKind === 'script' ? SCRIPT_UNIT : ext.file;
        void this.run(name, unit, async (s) => s.discard(ext, reason)).catch(() => {});
      }
    }
  }

  /** A revocation (the operator's config changed: mcp/config-watch.ts): in every session, stop the commands
   *  `covered` no longer covers, and close what `narrowed(file)` says each extension lost (its browser pages,
   *  its requests in flight). Returns the commands stopped, as "session: name". */
  revoke(covered: (name: string, origin: Origin) => boolean, narrowed: (file: string) => OpenKind[]): string[] {
    const stopped: string[] = [];
    const lost = new Map<string, OpenKind[]>();
    for (const [name, e] of this.entries) {
      for (const c of e.session.processes.revoke(covered, 'was stopped: the operator revoked its grant')) stopped.push(`${name}: ${c}`);
      for (const file of e.session.extensionFiles()) {
        if (!lost.has(file)) lost.set(file, narrowed(file));
        const kinds = lost.get(file)!;
        if (kinds.length) e.session.revoke(file, kinds);
      }
    }
    return stopped;
  }

  /** Close sessions idle past the TTL. */
  reap(now = Date.now()): void {
    for (const [name, e] of this.entries) {
      if (e.busy === 0 && now - e.lastUsed > this.settings.idleTtlMs) this.close(name);
    }
  }

  /** Past the instance budget, free the guests of the least recently used idle sessions. */
  private reclaim(): void {
    let live = 0;
    for (const e of this.entries.values()) live += e.session.liveInstances;
    if (live <= this.settings.maxInstances) return;
    const idle = [...this.entries.values()].filter((e) => e.busy === 0 && e.session.liveInstances > 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of idle) {
      if (live <= this.settings.maxInstances) break;
      live -= e.session.liveInstances;
      e.session.releaseInstances('the server reclaimed an idle session');
    }
  }
}
