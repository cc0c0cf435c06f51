// The main thread's side of a session's worker (engine/worker.ts): starting it, passing ops to the
// capability layer and their outcomes back, and terminating it when a guest will not stop.
import { Worker } from 'node:worker_threads';
import { CancelledError, CpuLimitError, GuestCrashError, KilnError, MemoryLimitError, TimeoutError, ToolError } from '../errors.js';
import type { Engine } from './engine.js';
import { WORKER_STACK_MB } from './stack.js';
import type { CancelHook, Invocation, LoadConfig, OpExtras, OpKind } from './instance.js';
import { toWire, type FromWorker, type ToWorker, type WireError } from './worker.js';

/** What a session holds for one extension's guest, local or in a worker. */
export interface GuestHandle {
  readonly alive: boolean;
  /** `hook` is filled in with how to cancel the call (the guest is told: GuestInstance.cancel). `cpuMs`: the
   *  call's CPU time budget, if it has one. */
  invoke(tool: string, args: unknown, timeoutMs: number, onProgress?: (update: string) => void, hook?: CancelHook, cpuMs?: number): Promise<unknown>;
  runScript(tool: string, bytecode: Uint8Array, timeoutMs: number, hook?: CancelHook, cpuMs?: number): Promise<unknown>;
  dispose(reason?: KilnError): void;
  /** Dispose of the guest and stop its code now if it is running (a cancelled call). */
  stop(reason: KilnError): void;
}

export interface RemoteHooks {
  op(kind: OpKind, inv: Invocation, request: unknown, extras: OpExtras): Promise<unknown>;
  discardBody(body: number): void;
  log(level: string, message: string): void;
  /** No call of the guest is in flight any more (InstanceHost.idle). */
  idle?(): void;
}

function fromWire(w: WireError): KilnError {
  switch (w.name) {
    case 'ToolError': return new ToolError(w.message, w.detail ?? w.message);
    case 'TimeoutError': return new TimeoutError(w.message);
    case 'CpuLimitError': return new CpuLimitError(w.message);
    case 'MemoryLimitError': return new MemoryLimitError(w.message);
    case 'GuestCrashError': return new GuestCrashError(w.message);
    default: {
      const e = new KilnError(w.message);
      e.name = w.name;
      return e;
    }
  }
}

/** Op results of at least this size are counted until the thread has taken them (it says so: `taken`). */
const COUNTED_RESULT_BYTES = 64 * 1024;
/** Bytes of op results one guest may have been sent and not taken yet. Results queue while a guest of the
 *  thread runs (its event loop is busy), outside any guest's heap limit: 64 reads of a 16 MiB file started
 *  without awaiting, then a busy loop, held 1.8 GB. Past the bound that guest's next result is dropped and
 *  its op fails; with nothing running, results are taken as they come. Counted per guest, so one guest
 *  cannot use up another's share of its thread. */
export const MAX_UNTAKEN_RESULT_BYTES = 256 * 1024 * 1024;

/** The bytes a result carries (bytes, text, or an object of them: a command's output). */
function resultBytes(v: unknown): number {
  if (v instanceof Uint8Array) return v.byteLength;
  if (typeof v === 'string') return v.length;
  let n = 0;
  if (v && typeof v === 'object') for (const x of Object.values(v)) n += x instanceof Uint8Array ? x.byteLength : typeof x === 'string' ? x.length : 0;
  return n;
}

let nextInstance = 1;
/** Guests of one worker that can be waiting to be stopped at once (requestStop). */
export const STOP_SLOTS = 32;

export class RemoteInstance implements GuestHandle {
  private dead: KilnError | undefined;
  constructor(private readonly worker: SessionWorker, readonly id: number) {}

  get alive(): boolean {
    return !this.dead && this.worker.running;
  }

  kill(reason: KilnError): void {
    this.dead ??= reason;
  }

  invoke(tool: string, args: unknown, timeoutMs: number, onProgress?: (update: string) => void, hook?: CancelHook, cpuMs?: number): Promise<unknown> {
    if (!this.alive) return Promise.reject(this.dead ?? new GuestCrashError('the session worker stopped'));
    return this.worker.request({ type: 'invoke', id: this.id, tool, args, limit: timeoutMs, cpuMs, progress: onProgress !== undefined }, onProgress, hook);
  }

  runScript(tool: string, bytecode: Uint8Array, timeoutMs: number, hook?: CancelHook, cpuMs?: number): Promise<unknown> {
    if (!this.alive) return Promise.reject(this.dead ?? new GuestCrashError('the session worker stopped'));
    return this.worker.request({ type: 'runScript', id: this.id, tool, bytecode, limit: timeoutMs, cpuMs }, undefined, hook);
  }

  dispose(reason: KilnError = new GuestCrashError('the guest instance was discarded')): void {
    if (this.dead) return;
    this.dead = reason;
    this.worker.send({ type: 'dispose', id: this.id, error: toWire(reason) });
    this.worker.forget(this.id);
  }

  stop(reason: KilnError): void {
    if (this.dead) return;
    this.worker.requestStop(this.id);
    this.dispose(reason);
  }
}

type Pending = { resolve(v: unknown): void; reject(e: unknown): void };
type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;

export class SessionWorker {
  private readonly worker: Worker;
  private readonly replies = new Map<number, Pending>();
  /** Progress listeners of requests in flight, by their seq. */
  private readonly progress = new Map<number, (update: string) => void>();
  private readonly hooks = new Map<number, { hooks: RemoteHooks; instance: RemoteInstance }>();
  /** The host operations this worker's guests have in flight, by request id, with the instance that asked. */
  private readonly aborts = new Map<number, { id: number; abort: AbortController }>();
  /** The hooks of invoke/runScript requests in flight, by seq: an op names its request (OpExtras.call). */
  private readonly callHooks = new Map<number, CancelHook>();
  /** Counted op results sent and not yet taken by the thread, by request id, and their sum per guest
   *  (MAX_UNTAKEN_RESULT_BYTES). */
  private readonly untaken = new Map<number, { id: number; size: number }>();
  private readonly untakenBytes = new Map<number, number>();
  private seq = 1;
  private stopped: KilnError | undefined;
  readonly ready: Promise<unknown>;
  private readonly busyFlag = new Int32Array(new SharedArrayBuffer(4));
  /** The id of an instance whose running code must stop now: its interrupt reads it (worker.ts). */
  private readonly stopWord = new Int32Array(new SharedArrayBuffer(4 * STOP_SLOTS));
  private readonly epoch = Date.now();
  /** Sessions placed on this worker (the pool balances on it). */
  sessions = 0;

  /** Where each session's vars changes go: that session's own copy. */
  private readonly varsListeners = new Map<string, (op: 'set' | 'delete', key: string, value?: string) => void>();

  constructor(engine: Engine) {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: { kilnWorker: true, engineDir: engine.dir, modules: engine.modules, backend: engine.backend, busy: this.busyFlag.buffer, stop: this.stopWord.buffer, epoch: this.epoch },
      // A larger native stack than the default 4 MB gives guests the deepest recursion the engine allows (the
      // guest's own limit follows it: host/engine/stack.ts); it is reserved, and touched only by deep recursion.
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
    });
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => this.replies.set(0, { resolve, reject }));
    this.ready.catch(() => {});
    this.worker.on('message', (m: FromWorker) => this.receive(m));
    this.worker.on('error', (e) => this.stop(new GuestCrashError(`the session worker failed: ${e.message}`)));
    this.worker.on('exit', () => this.stop(new GuestCrashError('the session worker stopped')));
  }

  get running(): boolean {
    return !this.stopped;
  }

  /** How long the thread has been running guest code without a break (0: it is not). */
  busyMs(): number {
    const since = Atomics.load(this.busyFlag, 0);
    return since === 0 ? 0 : Date.now() - this.epoch - since;
  }

  send(m: ToWorker): void {
    if (!this.stopped) this.worker.postMessage(m);
  }

  /** Send a message that expects a reply; `seq` is filled in here. */
  /** Send a message that expects a reply; `seq` is filled in here. `hook.cancel` tells the worker to cancel
   *  the request (a guest busy on the thread hears it only when it yields). */
  request(m: DistributiveOmit<Extract<ToWorker, { seq: number }>, 'seq'>, onProgress?: (update: string) => void, hook?: CancelHook): Promise<unknown> {
    if (this.stopped) return Promise.reject(this.stopped);
    const seq = this.seq++;
    const p = new Promise<unknown>((resolve, reject) => this.replies.set(seq, { resolve, reject }));
    if (onProgress) this.progress.set(seq, onProgress);
    this.worker.postMessage({ ...m, seq });
    if (hook) {
      hook.cancel = (reason) => this.send({ type: 'cancel', of: seq, reason });
      hook.extend = (ms) => this.send({ type: 'extend', of: seq, ms });
      this.callHooks.set(seq, hook);
    }
    return p;
  }

  /** Place a session here: the worker gets its vars, and mirrors every change back through `onVars`. */
  attach(session: string, vars: Map<string, string>, onVars: (op: 'set' | 'delete', key: string, value?: string) => void): void {
    this.varsListeners.set(session, onVars);
    this.send({ type: 'varsInit', session, entries: [...vars] });
  }

  detach(session: string): void {
    this.varsListeners.delete(session);
    this.send({ type: 'varsDrop', session });
  }

  async create(session: string, image: Uint8Array, config: LoadConfig, runLimitMs: number, hooks: RemoteHooks): Promise<{ instance: RemoteInstance; manifest: unknown }> {
    await this.ready;
    const id = nextInstance++;
    const instance = new RemoteInstance(this, id);
    this.hooks.set(id, { hooks, instance });
    try {
      const manifest = await this.request({ type: 'create', id, session, image, config, runLimitMs });
      return { instance, manifest };
    } catch (e) {
      this.hooks.delete(id);
      throw e;
    }
  }

  /** A disposed instance's hooks are dropped (the worker will not report it dead), and the host operations
   *  it started are aborted here: a guest spinning on the worker could not ask for that itself. */
  forget(id: number): void {
    this.hooks.delete(id);
    for (const [req, a] of this.aborts) {
      if (a.id !== id) continue;
      this.aborts.delete(req);
      a.abort.abort();
    }
  }

  /** Stop instance `id`'s code if it is running on the thread now: the engine's interrupt polls these words
   *  (worker.ts), so a guest that never yields stops within a few thousand instructions. One slot per guest
   *  to stop, so that stopping two guests back to back cannot overwrite the first before its interrupt reads
   *  it; the worker empties a slot when it disposes of that guest. Ids are never reused. With every slot
   *  taken, the oldest request is overwritten (that guest then runs to its deadline). */
  requestStop(id: number): void {
    for (let i = 0; i < STOP_SLOTS; i++) if (Atomics.compareExchange(this.stopWord, i, 0, id) === 0) return;
    Atomics.store(this.stopWord, this.nextOverwrite++ % STOP_SLOTS, id);
  }
  private nextOverwrite = 0;


  /** Whether the worker answers within `ms` (it cannot while a guest holds it). */
  async responsive(ms: number): Promise<boolean> {
    if (this.stopped) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const answer = this.request({ type: 'ping' }).then(() => true, () => false);
    const ok = await Promise.race([answer, late]);
    clearTimeout(timer);
    return ok;
  }

  /** Stop the thread and every guest on it. */
  terminate(reason: KilnError): void {
    this.stop(reason);
    void this.worker.terminate();
  }

  private stop(reason: KilnError): void {
    if (this.stopped) return;
    this.stopped = reason;
    for (const p of this.replies.values()) p.reject(reason);
    this.replies.clear();
    this.progress.clear();
    this.callHooks.clear();
    for (const { instance } of this.hooks.values()) instance.kill(reason);
    this.hooks.clear();
    for (const a of this.aborts.values()) a.abort.abort();
    this.aborts.clear();
    this.untaken.clear();
    this.untakenBytes.clear();
  }

  /** Send op `req`'s value, counted if it is large; dropped, and the op failed, past the thread's bound. */
  private sendResult(id: number, req: number, kind: string, value: unknown): void {
    const size = resultBytes(value);
    if (size < COUNTED_RESULT_BYTES) return this.send({ type: 'opResult', req, ok: true, value });
    const held = this.untakenBytes.get(id) ?? 0;
    if (held + size > MAX_UNTAKEN_RESULT_BYTES) {
      const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
      return this.send({ type: 'opResult', req, ok: false, error: { name: 'Error', message: `${kind}: its result (${mib(size)}) was dropped: ${mib(held)} of this guest's results are waiting for it (it is busy), at most ${mib(MAX_UNTAKEN_RESULT_BYTES)}; await results before starting more` } });
    }
    this.send({ type: 'opResult', req, ok: true, value, counted: true });
    this.untaken.set(req, { id, size });
    this.untakenBytes.set(id, held + size);
  }

  private receive(m: FromWorker): void {
    switch (m.type) {
      case 'progress':
        this.progress.get(m.seq)?.(m.update);
        break;
      case 'reply': {
        const p = this.replies.get(m.seq);
        this.replies.delete(m.seq);
        this.progress.delete(m.seq);
        this.callHooks.delete(m.seq);
        if (p) m.ok ? p.resolve(m.value) : p.reject(fromWire(m.error!));
        break;
      }
      case 'op': {
        const h = this.hooks.get(m.id);
        const abort = new AbortController();
        this.aborts.set(m.req, { id: m.id, abort });
        const work = h
          ? Promise.resolve().then(() => h.hooks.op(m.kind as OpKind, m.inv, m.request, { body: m.body, signal: abort.signal, call: m.of === undefined ? undefined : this.callHooks.get(m.of) }))
          : Promise.reject(new GuestCrashError('the guest instance is gone'));
        work.then(
          (value) => {
            try {
              this.sendResult(m.id, m.req, m.kind, value);
            } catch (e) { // not cloneable (a capability's bug): the op fails, the thread and its guests go on
              this.send({ type: 'opResult', req: m.req, ok: false, error: { name: 'Error', message: `${m.kind} produced a value that cannot be passed to the guest (${(e as Error).message})` } });
            }
          },
          (e) => this.send({ type: 'opResult', req: m.req, ok: false, error: toWire(e) }),
        ).finally(() => this.aborts.delete(m.req));
        break;
      }
      case 'abort':
        this.aborts.get(m.req)?.abort.abort(m.reason === undefined ? undefined : new CancelledError(m.reason));
        break;
      case 'idle':
        this.hooks.get(m.id)?.hooks.idle?.();
        break;
      case 'discardBody':
        this.hooks.get(m.id)?.hooks.discardBody(m.body);
        break;
      case 'vars':
        this.varsListeners.get(m.session)?.(m.op, m.key, m.value);
        break;
      case 'log':
        this.hooks.get(m.id)?.hooks.log(m.level, m.message);
        break;
      case 'dead':
        this.hooks.get(m.id)?.instance.kill(fromWire(m.error));
        this.hooks.delete(m.id);
        break;
      case 'taken': {
        const t = this.untaken.get(m.req);
        this.untaken.delete(m.req);
        if (!t) break;
        const left = (this.untakenBytes.get(t.id) ?? 0) - t.size;
        if (left > 0) this.untakenBytes.set(t.id, left);
        else this.untakenBytes.delete(t.id);
        break;
      }
    }
  }
}
