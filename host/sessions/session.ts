// A session: one guest instance per extension, created on first use, plus the session's `vars` store and
// persistent processes. Those belong to the session, not to an instance, so they survive a guest reset.
import type { OpenKind } from '../policy/authority.js';
import type { Browsers } from '../capabilities/browser/chromium.js';
import type { SessionBrowser } from '../capabilities/browser/context.js';
import { HttpSession } from '../capabilities/net/http.js';
import { FsTurns } from '../capabilities/fs/turns.js';
import { ProcessTable } from '../capabilities/commands/processes.js';
import { GuestInstance, type Invocation, type OpExtras, type OpKind } from '../engine/instance.js';
import { BUSY_MS, WorkerPool } from '../engine/pool.js';
import type { GuestHandle, SessionWorker } from '../engine/remote.js';
import type { Engine } from '../engine/engine.js';
import { ExtensionLoadError, GuestCrashError, TimeoutError } from '../errors.js';
import { DEFAULT_POLICY, type OperatorPolicy } from '../policy/policy.js';
import { guestEnv } from '../capabilities/env/env.js';
import { guestMemory } from '../policy/limits.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import { MemoryBudget } from '../policy/memory-budget.js';
import { mappedLog } from '../untrusted/guest-log.js';
import { checkVarsSet } from './vars.js';
import type { VarsStore } from './store.js';

let nextSessionKey = 1;

/** The guest's `process.pid`: the same fixed value in every guest, as a process that is its container's first
 *  one sees. Never the server's pid, which would name the server's /proc entries to a command. */
export const GUEST_PID = 1;

export type OpHandler = (inv: Invocation, kind: OpKind, request: unknown, extras: OpExtras) => Promise<unknown>;

export class Session {
  private readonly instances = new Map<LoadedExtension, Promise<GuestHandle>>();
  /** With worker isolation: the thread this session's guests run on (replaced if it is terminated). */
  private worker: SessionWorker | undefined;
  /** Names this session on its worker (a later session of the same name is another session). */
  private readonly key = `session-${nextSessionKey++}`;
  /** `vars`, one store per extension file (the unit of trust): another extension in the same session, or a
   *  run_script (whose guest is its own extension), cannot read or change them. Keyed by ext.file. */
  private readonly varsByExt = new Map<string, Map<string, string>>();
  /** The vars stores placed on the current worker, by their worker key. */
  private readonly attached = new Set<string>();
  /** Persistent processes live with the session, so they survive guest resets. */
  readonly processes = new ProcessTable();
  /** Cookies, open response bodies and in-flight slots, shared by fetch and request: one HttpSession per
   *  extension file (the unit of trust), keyed by ext.file. */
  private readonly httpByExt = new Map<string, HttpSession>();
  private readonly fsByExt = new Map<string, FsTurns>();

  constructor(
    readonly name: string,
    private readonly engine: Engine,
    private readonly host: 'mcp' | 'bdd' | 'script' = 'mcp',
    private readonly onLog: (ext: LoadedExtension, level: string, message: string) => void = () => {},
    private readonly policy: OperatorPolicy = DEFAULT_POLICY,
    private readonly pool: WorkerPool = new WorkerPool(engine, 1),
    private readonly budget: MemoryBudget = new MemoryBudget(Infinity),
    private readonly browsers?: Browsers,
    /** Where vars live beyond this process, when the deployment shares them (sessions/store.ts). */
    private readonly store?: VarsStore,
  ) {}

  /** Calls running in each extension's guest (by ext.file): its vars are read from the store only between them. */
  private readonly running = new Map<string, number>();

  /** Run `fn`, a call into `ext`'s guest: first (no other call in flight there) its vars as the store holds
   *  them now, which the guest sees. */
  async withVars<T>(ext: LoadedExtension, fn: () => Promise<T>): Promise<T> {
    const n = this.running.get(ext.file) ?? 0;
    if (this.store && n === 0) {
      const fresh = await this.store.load(this.name, ext.file);
      const vars = this.varsOf(ext);
      vars.clear();
      for (const [k, v] of fresh) vars.set(k, v);
      const key = `${this.key}\u0000${ext.file}`;
      if (this.worker && this.attached.has(key)) this.worker.attach(key, vars, this.mirror(ext, vars)); // the guest's copy too
    }
    this.running.set(ext.file, (this.running.get(ext.file) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      const left = (this.running.get(ext.file) ?? 1) - 1;
      if (left > 0) this.running.set(ext.file, left);
      else this.running.delete(ext.file);
    }
  }

  /** Every change this session's guests made to their vars has reached the store. */
  flushVars(): Promise<void> {
    return this.store?.flush(this.name) ?? Promise.resolve();
  }

  /** Where a worker's changes to `ext`'s vars go: this copy, and the store. */
  private mirror(ext: LoadedExtension, vars: Map<string, string>) {
    return (op: 'set' | 'delete', k: string, value?: string) => {
      if (op === 'set') vars.set(k, value!);
      else vars.delete(k);
      this.store?.write(this.name, ext.file, op, k, value);
    };
  }

  /** Each extension's browser context in this session (allow.browser), keyed by ext.file: like cookies of
   *  fetch, a context is never shared between extensions (the unit of trust). */
  private readonly browserByExt = new Map<string, SessionBrowser>();

  /** Resolves once the pages of `ext`'s context have stopped running, when no call of its guest is in
   *  flight (SessionBrowser.stopped): a call is answered only after its pages stopped. */
  pagesStopped(ext: LoadedExtension): Promise<void> {
    return this.browserByExt.get(ext.file)?.stopped() ?? Promise.resolve();
  }

  browserFor(ext: LoadedExtension): SessionBrowser | undefined {
    if (!this.browsers) return undefined;
    let b = this.browserByExt.get(ext.file);
    if (!b) this.browserByExt.set(ext.file, (b = this.browsers.forSession(this.name, () => this.discard(ext, 'its browser restarted'))));
    return b;
  }

  /** What each live guest reserved of the server's memory budget, by extension (given back on discard). */
  private readonly reservations = new Map<LoadedExtension, () => void>();

  private giveBack(ext: LoadedExtension): void {
    this.reservations.get(ext)?.();
    this.reservations.delete(ext);
  }

  /** `ext`'s cookies, bodies and in-flight slots in this session. */
  httpFor(ext: LoadedExtension): HttpSession {
    let h = this.httpByExt.get(ext.file);
    if (!h) this.httpByExt.set(ext.file, (h = new HttpSession(() => this.policy.net)));
    return h;
  }

  /** `ext`'s turns of file operations in this session (allow.fs's own concurrency slot). */
  fsTurnsFor(ext: LoadedExtension): FsTurns {
    let t = this.fsByExt.get(ext.file);
    if (!t) this.fsByExt.set(ext.file, (t = new FsTurns()));
    return t;
  }

  private workerFor(): SessionWorker {
    if (!this.worker?.running) {
      if (this.worker) this.leaveWorker();
      this.worker = this.pool.acquire();
    }
    return this.worker;
  }

  /** The vars of `ext` in this session (created empty on first use). */
  varsOf(ext: LoadedExtension): Map<string, string> {
    let v = this.varsByExt.get(ext.file);
    if (!v) this.varsByExt.set(ext.file, (v = new Map()));
    return v;
  }

  /** Place `ext`'s vars on the worker (once per worker); returns the key the worker knows them by. */
  private attachVars(w: SessionWorker, ext: LoadedExtension): string {
    const key = `${this.key}\u0000${ext.file}`;
    if (!this.attached.has(key)) {
      const vars = this.varsOf(ext);
      w.attach(key, vars, this.mirror(ext, vars));
      this.attached.add(key);
    }
    return key;
  }

  private leaveWorker(): void {
    if (!this.worker) return;
    for (const key of this.attached) this.worker.detach(key);
    this.attached.clear();
    this.pool.release(this.worker);
    this.worker = undefined;
  }

  /** Before a call: if this session's worker is busy running another session's guest, move elsewhere. */
  avoidBusyWorker(): void {
    if (this.worker && this.worker.busyMs() > BUSY_MS) {
      this.releaseInstances('its worker was busy with another session');
      this.leaveWorker();
    }
  }

  /** After a timeout: if the session's worker does not answer within `ms`, a guest holds it (a loop the
   *  interrupt cannot reach): terminate it. Its guests are lost; vars, processes and cookies are not. */
  async unstick(ms = 1000): Promise<void> {
    const w = this.worker;
    if (w && !(await w.responsive(ms))) {
      w.terminate(new TimeoutError('the worker did not respond after a timeout and was terminated'));
      for (const ext of [...this.instances.keys()]) {
        this.instances.delete(ext);
        this.giveBack(ext);
      }
    }
  }

  async instanceFor(ext: LoadedExtension, onOp: OpHandler): Promise<GuestHandle> {
    let p = this.instances.get(ext);
    if (p) {
      const live = await p.catch(() => undefined);
      if (live?.alive) return live;
      this.httpByExt.get(ext.file)?.releaseBodies(); // its guest died: nobody can read its bodies
      this.giveBack(ext);
    }
    // The lower of the operator's limit and the lowest its tools declare (policy/limits.ts).
    const memory = guestMemory(this.policy, { file: ext.file, sha256: ext.artifact.sha256 }, ext.artifact.manifest.tools).bytes;
    this.reservations.set(ext, this.budget.reserve(memory)); // throws MemoryBudgetError past the ceiling
    p = this.create(ext, onOp, memory);
    this.instances.set(ext, p);
    p.catch(() => {
      this.instances.delete(ext);
      this.giveBack(ext);
    });
    return p;
  }

  private readonly logListeners = new Set<(level: string, message: string) => void>();

  /** Also send this session's guest logs to `fn` until the returned function is called. */
  captureLogs(fn: (level: string, message: string) => void): () => void {
    this.logListeners.add(fn);
    return () => this.logListeners.delete(fn);
  }

  get liveInstances(): number {
    return this.instances.size;
  }

  /** The extensions that have a guest (or one being made) in this session. */
  guestExtensions(): LoadedExtension[] {
    return [...this.instances.keys()];
  }

  /** Discard every guest of this session (vars, processes and cookies stay). */
  releaseInstances(reason: string): void {
    for (const ext of [...this.instances.keys()]) this.discard(ext, reason);
  }

  /** Throw the extension's guest away, stopping its code if it is running; the next call gets a fresh one
   *  (vars, processes and cookies are kept). */
  /** No call of `ext`'s guest is in flight: its open bodies go, and its browser context stops being driven. */
  private guestIdle(ext: LoadedExtension): void {
    this.httpFor(ext).releaseBodies();
    this.browserByExt.get(ext.file)?.idle();
  }

  discard(ext: LoadedExtension, reason: string): void {
    const p = this.instances.get(ext);
    this.instances.delete(ext);
    this.giveBack(ext);
    // Its open bodies go with it (they hold connections and nobody can read them any more); cookies stay.
    // Its browser context is no longer driven by any of its calls.
    this.httpByExt.get(ext.file)?.releaseBodies();
    this.browserByExt.get(ext.file)?.idle();
    p?.then((i) => i.stop(new GuestCrashError(`the guest was reset: ${reason}`)), () => {}); // stopped even mid-run
  }

  /** The extension files that hold a browser context or HTTP state in this session. */
  extensionFiles(): string[] {
    return [...new Set([...this.browserByExt.keys(), ...this.httpByExt.keys()])];
  }

  /** The operator took away `kinds` of what `file` was granted: its browser context (its pages) is closed, its
   *  requests in flight are aborted and its open bodies destroyed. Cookies and vars stay. */
  revoke(file: string, kinds: OpenKind[]): void {
    if (kinds.includes('browser')) {
      void this.browserByExt.get(file)?.close();
      this.browserByExt.delete(file);
    }
    if (kinds.includes('net')) this.httpByExt.get(file)?.revoke();
  }

  close(): void {
    for (const ext of [...this.instances.keys()]) this.discard(ext, 'the session ended');
    this.leaveWorker();
    this.processes.killAll();
    for (const h of this.httpByExt.values()) h.close();
    for (const b of this.browserByExt.values()) void b.close();
    this.browserByExt.clear();
    this.httpByExt.clear();
    this.fsByExt.clear();
    this.varsByExt.clear();
  }

  private async create(ext: LoadedExtension, onOp: OpHandler, memory: number): Promise<GuestHandle> {
    const log = mappedLog(() => ext.artifact.mapper(), (level, message) => {
      this.onLog(ext, level, message);
      for (const fn of this.logListeners) fn(level, message);
    });
    const config = {
      host: ext.hostKind ?? this.host,
      platform: process.platform,
      pid: GUEST_PID, // never the server's: a command could use it to find the server's /proc entries
      env: guestEnv(this.policy, ext.hostKind === 'script' ? undefined : { identity: { file: ext.file, sha256: ext.artifact.sha256 }, declared: ext.artifact.manifest.tools.flatMap((t) => t.allow.env ?? []) }),
      memoryLimit: memory,
      browser: this.browsers?.enabled === true, // without it no tool sees page or context (the host refuses anyway)
      moduleUrl: `file:///${ext.artifact.manifest.source.name}`,
    };
    const runLimit = this.policy.limits.timeoutMs;
    let instance: GuestHandle;
    let loaded: { tools?: unknown };
    if (this.policy.sessions.isolation === 'worker') {
      const w = this.workerFor();
      const remote = await w.create(this.attachVars(w, ext), ext.artifact.image, config, runLimit, {
        op: (kind, inv, request, extras) => onOp(inv, kind, request, extras),
        discardBody: (body) => this.httpFor(ext).discard(ext.file, body),
        // Work a call leaves behind is cancelled when the call ends: so are the bodies it left open.
        idle: () => this.guestIdle(ext),
        log,
      });
      instance = remote.instance;
      loaded = remote.manifest as { tools?: unknown };
    } else {
      const local = await GuestInstance.create(this.engine, ext.artifact.image, {
        op: (kind, inv, request, extras) => onOp(inv, kind, request, extras),
        discardBody: (body) => this.httpFor(ext).discard(ext.file, body),
        // Work a call leaves behind is cancelled when the call ends: so are the bodies it left open.
        idle: () => this.guestIdle(ext),
        vars: this.varsStore(ext),
        log,
      }, runLimit);
      loaded = local.load(config) as { tools?: unknown };
      instance = local;
    }
    if ((ext.hostKind ?? this.host) === 'mcp') this.checkSameTools(ext, loaded.tools);
    return instance;
  }

  /** The tools the code registers at run time must be the ones its manifest declared at build time. */
  private checkSameTools(ext: LoadedExtension, tools: unknown): void {
    const declared = ext.artifact.manifest.tools.map((t) => t.name).sort().join('\n');
    const registered = Array.isArray(tools) ? tools.map((t: any) => String(t?.name)).sort().join('\n') : '';
    if (declared !== registered) {
      throw new ExtensionLoadError(ext.file, 'the tools its code registers differ from its manifest; rebuild the artifact');
    }
  }

  private varsStore(ext: LoadedExtension) {
    const vars = this.varsOf(ext);
    return {
      get: (k: string) => vars.get(k),
      set: (k: string, v: string) => {
        checkVarsSet(vars, k, v);
        vars.set(k, v);
        this.store?.write(this.name, ext.file, 'set', k, v);
      },
      delete: (k: string) => {
        const had = vars.delete(k);
        if (had) this.store?.write(this.name, ext.file, 'delete', k);
        return had;
      },
      keys: () => [...vars.keys()],
    };
  }
}
