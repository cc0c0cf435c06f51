// One guest instance: a QuickJS VM in its own component instance, and the host half of the op-id event loop.
//
// The guest never blocks. A capability call returns an op id at once; the host runs the operation as an
// ordinary promise and, when it settles, calls `guest.complete` (always later, from the event loop, never
// from inside an import). So two operations the guest starts together run concurrently here, and the host
// thread is free between them. A handler's end arrives through the `runtime.finish` import. The import table
// itself, one block per WIT interface, is engine/imports.ts; how outcomes cross the boundary (an op's value or
// error as the guest receives it, a guest's failure as a ToolError) is engine/outcomes.ts; this file is the loop.
//
// Invariants:
//  - Imports never throw into the guest (a JS exception unwinding through QuickJS's C frames would leave it
//    inconsistent); failures become op outcomes. Only the `result` imports throw, as the ABI's error value.
//  - An op is accepted only for an invocation that this instance started and that has not finished.
//  - After a trap the instance is dead: every pending invocation fails and nothing is delivered to it again.
//  - Work does not outlive its call. When an invocation finishes (or fails, or times out), the operations it
//    started are aborted (their AbortSignal fires: fetches are cancelled, commands killed); when no invocation
//    is left in flight, every remaining operation and timer is cancelled too, and one started while the guest
//    is idle never completes. So a guest that has answered uses no CPU and starts nothing until its next call.
//  - A handler's result is accepted only before its deadline: code stuck in a native call the interrupt cannot
//    reach (a huge typed-array sort) that returns late is a TimeoutError, never a late success.
//  - CPU time (cpuMs): the time each run of guest code takes is charged to every invocation in flight in this
//    instance (one call, plus the calls it made to its own file's tools through plugins[...]); waiting for I/O
//    or timers is not a run and costs nothing. A run is interrupted when an invocation's budget is spent, and
//    a result reported past it is a CpuLimitError, never a success; the instance is discarded either way.
import { CancelledError, CpuLimitError, GuestCrashError, InvalidResultError, KilnError, MemoryLimitError, TimeoutError } from '../errors.js';
import { MAX_JSON_DEPTH, textNestsDeeper } from '../untrusted/json-depth.js';
import { parseGuestJson } from '../untrusted/guest-json.js';
import { GUEST_LOG_BUDGET, LogLimiter } from '../untrusted/log-limiter.js';
import type { OpKind } from '../capabilities/operations.js';
import { witImports, type GuestVars, type LogLevel, type Outcome } from './imports.js';
import { IntlHost } from './intl.js';
import { errorText, opJson, OUT_OF_MEMORY, toolError, type BytesOutcome } from './outcomes.js';
import { guestStackLimit } from './stack.js';
import type { Engine } from './engine.js';
import { wasiImports } from './wasi.js';
import { isDeadline, type MemorySnapshot, type WasmtimeEngine, type WasmtimeGuest } from './wasmtime.js';
import { hasSnapshotOf, keepSnapshot, snapshotFor, snapshotKey, wantSnapshot } from './snapshots.js';

export type { OpKind } from '../capabilities/operations.js';
export type { LogLevel } from './imports.js';
export { toolError };

export interface Invocation {
  readonly id: number;
  readonly tool: string;
}

/** How long a cancelled call's guest has to finish (seeing ctx.signal abort) before the caller stops and
 *  discards it (sessions/call.ts); its abort listeners run under the same bound (`cancel`). */
export const CANCEL_GRACE_MS = 200;

/** How long one synchronous run of guest code may take when no invocation sets a deadline. */
export const DEFAULT_RUN_MS = 30_000;

/** Linear memory a guest may have beyond its QuickJS heap limit: the engine's own data and stack (~2 MiB), the
 *  image while it is read, buffers the glue copies values through, and allocator fragmentation. Past limit + slack the
 *  instance is discarded after the run, whatever QuickJS counted: linear memory never shrinks, so this bounds
 *  what a guest keeps resident even if the heap accounting were wrong. */
export const MEMORY_SLACK = 32 * 1024 * 1024;

/** Host operations (capability calls) one guest may have in flight; past it they are refused (op id 0). */
export const MAX_OPS_IN_FLIGHT = 1024;

/** Host timers (runtime.sleep) one guest may have pending, counted apart from its operations so that neither
 *  starves the other: kiln's guest keeps its timers itself and asks for at most two wake-ups at a time
 *  (guest/web/timers.js); the rest of the allowance is for a guest that is not kiln's. */
export const MAX_TIMERS = 16;

/** Bytes of requests and bodies (a file to write, an upload, a tool call's arguments) one guest's operations
 *  in flight may carry together; past it an operation fails at once, unless none is in flight (one alone may
 *  carry what the guest's own memory held). Each is a copy on the host, outside the guest's heap limit, and a
 *  queued one is held until its turn: one 16 MiB buffer written 100 times without awaiting held 4 GB of the
 *  server's memory. */
export const MAX_OP_BYTES_IN_FLIGHT = 64 * 1024 * 1024;

/** Per-operation extras: a request body, and the signal the guest's abort() fires. */
export interface OpExtras {
  body?: Uint8Array;
  signal: AbortSignal;
  /** The hook of the call whose invocation started the op (the object its caller passed to invoke/runScript),
   *  so the caller can tell its ops apart (sessions/call.ts: approvals pause that call's clock); none for ops that
   *  belong to no such call. */
  call?: CancelHook;
}

/** What an instance needs from its host. Capability checks live behind `op`, never in the guest.
 *  An op that resolves to a Uint8Array is delivered as bytes (guest.complete-bytes). */
export interface InstanceHost {
  op(kind: OpKind, inv: Invocation, request: unknown, extras: OpExtras): Promise<unknown>;
  /** The guest will not read this response body. */
  discardBody?(body: number): void;
  vars: GuestVars;
  log(level: LogLevel, message: string): void;
  /** Told when guest code starts and stops running on this thread (the worker publishes it). */
  busy?(running: boolean): void;
  /** Told when no call of this guest is in flight any more: what its calls left open (response bodies) goes. */
  idle?(): void;
  /** Asked by the interrupt: true stops the running guest now (another thread asked to stop it: worker.ts). */
  stopRequested?(): boolean;
}

export interface LoadConfig {
  host: 'mcp' | 'bdd' | 'script';
  browser?: boolean;
  /** For the guest's `process`: the server's platform, a pid that is not the server's (sessions/session.ts GUEST_PID),
   *  and the environment the operator allows. */
  platform?: string;
  pid?: number;
  env?: Record<string, string>;
  /** QuickJS heap limit in bytes. */
  memoryLimit?: number;
  /** The extension module's `import.meta.url`. */
  moduleUrl?: string;
  /** Set by `kiln build` only: the guest writes each Standard Schema validator's JSON Schema into the manifest
   *  (a served guest skips that work; its manifest is read for tool names). */
  build?: boolean;
  /** Bytes of wasm shadow stack QuickJS may use before its RangeError; `load` sets it from the native stack
   *  of the thread the guest runs on (host/engine/stack.ts). */
  stackLimit?: number;
}


interface Running extends Invocation {
  /** performance.now() after which this invocation's code is stopped. */
  deadline: number;
  /** Milliseconds of guest runs this invocation may be charged (none: no budget), and what it has been. */
  cpuMs?: number;
  cpuUsed: number;
  /** Set (to the reason) when the caller cancelled it: it may start nothing more on the host. */
  cancelled?: string;
  /** Where its ctx.progress updates go (raw JSON: the MCP layer checks them), if the caller wants them. */
  onProgress?: (update: string) => void;
  /** The caller's hook: handed to the host with each op this invocation starts (OpExtras.call). */
  hook?: CancelHook;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** Filled in by `invoke`/`runScript`: how the caller cancels that invocation (GuestInstance.cancel). A plain
 *  object rather than an AbortSignal: a call that is never cancelled (nearly all) costs no listener. */
export interface CancelHook {
  cancel?(reason: string): void;
  /** Filled in likewise: move the invocation's deadline `ms` later (the time its call spent waiting for a
   *  human's approval, which does not count against it). */
  extend?(ms: number): void;
}

let nextInvocation = 1;

/** The call rewrites this with the setting that set the budget (sessions/call.ts). */
const cpuSpent = (r: Running) => new CpuLimitError(`tool "${r.tool}" used more than its ${r.cpuMs} ms of CPU time (cpuMs) and was stopped`);

/** A guest timer on the host: a Timeout, or for runtime.sleep(0) an Immediate (which has no `refresh`). */
type HostTimer = NodeJS.Timeout | NodeJS.Immediate;
const clearHostTimer = (t: HostTimer): void => ('refresh' in t ? clearTimeout(t) : clearImmediate(t));

/** Each engine's spare instance (a promise: it is being made), and the engines that keep one. */
const spares = new WeakMap<Engine, Promise<GuestInstance | undefined>>();
const keepingSpares = new WeakSet<Engine>();

export class GuestInstance {
  private guest!: Record<string, any>;
  private readonly running = new Map<number, Running>();
  /** Pending timers by op id. */
  private readonly timers = new Map<number, HostTimer>();
  /** Set when a host operation starts; `idle` is told only then (see cancelIdleWork). */
  private opsSinceIdle = false;
  /** Pending host operations by op id, with the invocation that started them. */
  private readonly ops = new Map<number, { inv: number; abort: AbortController; bytes: number }>();
  private nextOp = 1;
  /** True while the top level runs (`load`): timers may be set, and are cancelled when it ends. */
  private loading = false;
  /** Set when a handler reported its result after its deadline: the instance is discarded after the run. */
  private overran = false;
  private host!: InstanceHost;
  private image: Uint8Array | undefined;
  private runLimitMs = DEFAULT_RUN_MS;
  private logs!: LogLimiter<LogLevel>;
  /** The guest's linear memory (V8) or the instance that has it (wasmtime), and the size past which the
   *  instance is discarded (see `enter`). */
  private memory?: WebAssembly.Memory;
  private native?: WasmtimeGuest;
  /** Set by `create` when this instance's guest is made at `load` (from a snapshot, if its load has one). */
  private unmade?: Engine;
  private fromSnapshot = false;
  private memoryCeiling = Infinity;
  private dead: KilnError | undefined;
  /** Armed while guest code runs: the interrupt import answers true past it. */
  private runDeadline = Infinity;
  /** The part of runDeadline an invocation's CPU budget sets (Infinity when a deadline comes first). */
  private cpuDeadline = Infinity;
  /** When the current run started (charged to the invocations in flight when it ends: see enter). */
  private runStartedAt = 0;
  private interruptedAt: number | undefined;
  /** Set when the interrupt stopped a run because a CPU budget was spent (not a deadline or a stop). */
  private interruptedByCpu = false;
  /** Set when a handler reported its result after its CPU budget was spent: discarded after the run. */
  private overranCpu = false;
  /** Set when the guest reported running out of memory: it is discarded after the current run. */
  private outOfMemory = false;
  /** The guest's Intl formatters, and its budget of new ones (host/engine/intl.ts). */
  private readonly intl = new IntlHost();

  private constructor() {}

  /** `image`: the extension's bytecode (empty for none), handed to the guest at `load`. `runLimitMs`: the
   *  deadline of guest code that runs for no invocation (the top level, timers). Takes the engine's spare
   *  instance when there is one (see keepSpares). */
  static async create(engine: Engine, image: Uint8Array, host: InstanceHost, runLimitMs = DEFAULT_RUN_MS): Promise<GuestInstance> {
    let self: GuestInstance;
    if (engine.wasmtime && image.length > 0 && hasSnapshotOf(image)) {
      // Made at `load`, from the snapshot of its load if there is one (engine/snapshots.ts).
      self = new GuestInstance();
      self.unmade = engine;
    } else {
      const spare = spares.get(engine);
      spares.delete(engine);
      self = (spare && (await spare)) || (await GuestInstance.blank(engine));
    }
    self.host = host;
    self.image = image;
    self.runLimitMs = runLimitMs;
    self.logs = new LogLimiter<LogLevel>(GUEST_LOG_BUDGET, (level, message) => host.log(level, message), 'warn');
    if (keepingSpares.has(engine) && !self.unmade) {
      // The next spare is made once this turn is over, off the path of the session being created now.
      setTimeout(() => {
        if (!spares.has(engine)) spares.set(engine, GuestInstance.blank(engine).catch(() => undefined));
      }, 0).unref();
    }
    return self;
  }

  /**
   * Keep one blank instance of `engine` ready, so a new session's guest costs `load` only. Every artifact
   * runs on the same engine, so one spare serves any extension. A blank instance has run no guest code and
   * has no host or image until `create` hands it out. For servers (a one-shot process never needs one).
   */
  static keepSpares(engine: Engine): void {
    keepingSpares.add(engine);
    if (!spares.has(engine)) spares.set(engine, GuestInstance.blank(engine).catch(() => undefined));
  }

  /** The engine instantiated, its imports bound to an instance that has no host yet. */
  private static async blank(engine: Engine): Promise<GuestInstance> {
    const self = new GuestInstance();
    if (engine.wasmtime) {
      self.instantiateNative(engine.wasmtime);
      return self;
    }
    const imports = self.importObject();
    const main = engine.main;
    const exports = await engine.instantiate(
      engine.moduleSet(),
      imports,
      (m, i) => {
        const instance = new WebAssembly.Instance(m, i);
        if (m === main) self.memory = instance.exports.memory as WebAssembly.Memory;
        return instance;
      },
    );
    self.guest = exports.guest;
    return self;
  }

  /** Every import the engine declares, bound to this instance (jco's shape, keyed by interface). */
  private importObject(): Record<string, any> {
    return { ...wasiImports((stream, text) => this.host.log(stream === 'stderr' ? 'error' : 'info', text)), ...this.imports() };
  }

  /** This instance's guest on wasmtime, its memory `snapshot`'s if given, else the engine's. */
  private instantiateNative(wasmtime: WasmtimeEngine, snapshot?: MemorySnapshot): void {
    this.native = wasmtime.instantiate(this.importObject(), snapshot);
    this.guest = this.native.guest;
  }

  /** True when this instance's guest started from the snapshot of an earlier load (engine/snapshots.ts)
   *  instead of running the extension's top level. */
  get startedFromSnapshot(): boolean {
    return this.fromSnapshot;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Run the extension's top level; returns the manifest it registered. On wasmtime, a top level that calls
   *  no host is run once or twice per process and its snapshot taken; later instances start from that
   *  (engine/snapshots.ts). */
  load(config: LoadConfig): unknown {
    if (config.memoryLimit) this.memoryCeiling = config.memoryLimit + MEMORY_SLACK;
    const image = this.image ?? new Uint8Array();
    this.image = undefined; // the guest has its own copy now
    const text = JSON.stringify({ ...config, stackLimit: guestStackLimit() });
    const onWasmtime = this.unmade !== undefined || this.native !== undefined;
    const key = onWasmtime && image.length > 0 && !config.build ? snapshotKey(image, text) : undefined;
    if (this.unmade) {
      const made = key ? snapshotFor(key) : undefined;
      this.instantiateNative(this.unmade.wasmtime!, made?.memory);
      this.unmade = undefined;
      if (made) {
        this.fromSnapshot = true;
        this.native!.setMemoryCeiling(this.memoryCeiling);
        return JSON.parse(made.manifest);
      }
    }
    this.native?.setMemoryCeiling(this.memoryCeiling);
    this.loading = true;
    try {
      const calls = this.native?.importCalls();
      const manifest = this.enter(() => this.guest.load(text, image)) as string;
      const native = this.native;
      if (key && native && this.alive && native.importCalls() === calls && this.ops.size === 0 && this.timers.size === 0 && wantSnapshot(key, native.memoryBytes())) {
        // A snapshot only saves later loads their time: one that cannot be made (no descriptor left for its
        // memfd, no memory for its copy) leaves this load as it is, as one never snapshotted.
        let memory: MemorySnapshot | undefined;
        try {
          memory = native.snapshot();
        } catch {
          // none kept: a later load of the key tries again
        }
        if (memory) keepSnapshot(key, { memory, manifest });
      }
      return JSON.parse(manifest);
    } finally {
      this.loading = false;
      this.cancelIdleWork();
    }
  }

  /** Compile source to QuickJS bytecode inside the sandbox (build time). */
  compile(source: string, filename: string, module: boolean): Uint8Array {
    return this.enter(() => this.guest.compile(source, filename, module)) as Uint8Array;
  }

  /** Run tool `tool`'s handler with `args`; settles when the handler's promise does. Its code, run by run,
   *  is stopped once `timeoutMs` has passed since now (the caller also races the promise itself). */
  invoke(tool: string, args: unknown, timeoutMs = DEFAULT_RUN_MS, onProgress?: (update: string) => void, hook?: CancelHook, cpuMs?: number): Promise<unknown> {
    return this.start(tool, timeoutMs, (id) => this.guest.invoke(id, tool, JSON.stringify(args ?? null)), onProgress, hook, cpuMs);
  }

  /** Run a compiled script as an invocation of `tool` (whose manifest its capability calls are checked
   *  against); settles with the script's last expression's value, awaited. */
  runScript(tool: string, bytecode: Uint8Array, timeoutMs = DEFAULT_RUN_MS, hook?: CancelHook, cpuMs?: number): Promise<unknown> {
    return this.start(tool, timeoutMs, (id) => this.guest.runScript(id, bytecode), undefined, hook, cpuMs);
  }

  /** A new invocation of `tool` with its deadline, started by `enterGuest`; its outcome is the promise. */
  private start(
    tool: string, timeoutMs: number, enterGuest: (id: number) => unknown, onProgress?: (update: string) => void, hook?: CancelHook, cpuMs?: number,
  ): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    const id = nextInvocation++;
    const deadline = performance.now() + timeoutMs;
    const done = new Promise<unknown>((resolve, reject) => this.running.set(id, { id, tool, deadline, cpuMs, cpuUsed: 0, resolve, reject, onProgress, hook }));
    try {
      this.enter(() => enterGuest(id));
    } catch {
      // the instance died; `done` has been rejected with the reason
    }
    if (hook) {
      hook.cancel = (reason) => this.cancel(id, reason);
      hook.extend = (ms) => {
        const r = this.running.get(id);
        if (r) r.deadline += ms;
      };
    }
    return done;
  }

  /** The caller cancelled invocation `inv`: the operations it started are aborted (fetches cancelled, commands
   *  killed), and the guest is told (guest.cancel): its ctx.signal aborts and what it awaits rejects with an
   *  AbortError. Whether it then finishes is the guest's business; the caller discards a guest that does not. */
  cancel(inv: number, reason: string): void {
    const r = this.running.get(inv);
    if (this.dead || !r || r.cancelled !== undefined) return;
    r.cancelled = reason; // from now on it may start nothing on the host (startOp)
    const why = new CancelledError(reason);
    for (const [op, o] of this.ops) {
      if (o.inv !== inv) continue;
      this.ops.delete(op);
      o.abort.abort(why); // a callee through plugins[...] hears the client's reason too
    }
    try {
      // Its abort listeners run now: they get the grace period, not the call's whole deadline (inline, a
      // listener that spins would hold the server's thread until then).
      this.enter(() => this.guest.cancel(inv, reason), performance.now() + CANCEL_GRACE_MS);
    } catch {
      // the instance died; what was running has been failed with the reason
    }
  }

  /** Set by `stop`: the interrupt stops any guest code of this instance still running. */
  private stopping = false;

  /** Dispose of the instance and stop its code if it is running (it is, when `stop` is called from inside a
   *  host call it made); with worker isolation, the main thread stops a running guest through the worker's
   *  shared stop word instead (remote.ts). */
  stop(reason: KilnError): void {
    this.stopping = true;
    this.dispose(reason);
  }

  /** Stop delivering anything to this instance and fail what is still running. */
  dispose(reason: KilnError = new GuestCrashError('the guest instance was discarded')): void {
    if (!this.dead) this.dead = reason;
    for (const r of this.running.values()) r.reject(this.dead);
    this.running.clear();
    this.cancelIdleWork();
  }

  /** An invocation ended: abort what it started; with none left in flight, cancel everything pending. */
  private endInvocation(inv: number): void {
    if (this.running.size === 0) return this.cancelIdleWork();
    // Another call is still in flight: what this one started is stopped, and its failure still delivered,
    // since that other call's code may be the one awaiting it (a continuation runs as the invocation whose
    // operation resumed it: kept silent, the other call hung until its deadline).
    for (const o of this.ops.values()) if (o.inv === inv) o.abort.abort();
  }

  /** No call is in flight (or the instance is gone): nothing it started may go on. */
  private cancelIdleWork(): void {
    if (this.timers.size) {
      for (const t of this.timers.values()) clearHostTimer(t);
      this.timers.clear();
    }
    if (this.ops.size) {
      const ops = [...this.ops.values()];
      this.ops.clear();
      for (const o of ops) o.abort.abort();
    }
    // Only an op can leave something open on the host (a response body): a call that started none costs no
    // message (with worker isolation, `idle` is one more wake-up of the main thread per call).
    if (this.opsSinceIdle) {
      this.opsSinceIdle = false;
      this.host?.idle?.();
    }
    this.logs.flush();
  }

  /** Whether the guest may start work now: a call is in flight, or the top level is running. */
  private get active(): boolean {
    return this.running.size > 0 || this.loading;
  }

  /** Call into the guest; a trap kills the instance. A result-typed export's err becomes a ToolError.
   *  The run is given the earliest deadline of the invocations in flight; code still running past it is
   *  interrupted, and the instance discarded, as it is after running out of memory. */
  private enter(fn: () => unknown, until = Infinity): unknown {
    if (this.dead) throw this.dead;
    const startedAt = performance.now();
    let deadline = Math.min(until, startedAt + this.runLimitMs);
    let cpuDeadline = Infinity;
    for (const r of this.running.values()) {
      deadline = Math.min(deadline, r.deadline);
      if (r.cpuMs !== undefined) cpuDeadline = Math.min(cpuDeadline, startedAt + r.cpuMs - r.cpuUsed);
    }
    this.runDeadline = Math.min(deadline, cpuDeadline);
    this.cpuDeadline = cpuDeadline < deadline ? cpuDeadline : Infinity;
    this.runStartedAt = startedAt;
    this.interruptedAt = undefined;
    this.interruptedByCpu = false;
    let result: unknown;
    let failure: unknown;
    this.host.busy?.(true);
    // wasmtime stops the run itself at the deadline (epoch interruption), even in code that never reaches
    // the interrupt import; V8 relies on the import alone.
    this.native?.setDeadline(this.runDeadline - startedAt);
    try {
      result = fn();
    } catch (e: any) {
      failure = e;
      if (isDeadline(e) && this.interruptedAt === undefined) {
        this.interruptedAt = performance.now();
        this.interruptedByCpu = this.interruptedAt > this.cpuDeadline;
      }
    } finally {
      this.runDeadline = Infinity;
      this.cpuDeadline = Infinity;
      // The run's time is charged to every invocation still in flight (one that finished during it was
      // judged in settle, with the run's time so far).
      const spent = performance.now() - startedAt;
      for (const r of this.running.values()) r.cpuUsed += spent;
      this.host.busy?.(false);
    }
    if (this.interruptedAt !== undefined) {
      this.dispose(this.interruptedByCpu
        ? new CpuLimitError('the guest used up its CPU time budget (cpuMs) and was stopped; its globals were reset')
        : new TimeoutError('the guest ran past its time limit and was stopped; its globals were reset'));
      throw this.dead;
    }
    if (this.outOfMemory || this.native?.memoryRefused()) {
      this.dispose(new MemoryLimitError('the guest ran out of its memory limit; its globals were reset'));
      throw this.dead;
    }
    const memoryBytes = this.native ? this.native.memoryBytes() : this.memory?.buffer.byteLength ?? 0;
    if (memoryBytes > this.memoryCeiling) {
      this.dispose(new MemoryLimitError(`the guest's memory grew to ${memoryBytes} bytes, past its limit; its globals were reset`));
      throw this.dead;
    }
    if (this.overran) {
      this.dispose(new TimeoutError('the guest returned after its time limit; its globals were reset'));
      throw this.dead;
    }
    if (this.overranCpu) {
      this.dispose(new CpuLimitError('the guest returned after its CPU time budget (cpuMs) was spent; its globals were reset'));
      throw this.dead;
    }
    if (failure === undefined) return result;
    const e = failure as any;
    if (e && typeof e === 'object' && 'payload' in e && typeof e.payload === 'string') throw toolError(e.payload);
    this.dispose(new GuestCrashError(`the guest crashed (${e?.message ?? e}); its instance was discarded`));
    throw this.dead;
  }

  /** Deliver an op's outcome, unless it was cancelled (see endInvocation) or the instance is gone. */
  private deliver(op: number, outcome: Outcome | BytesOutcome): void {
    if (!this.ops.delete(op) && !this.timers.delete(op)) return;
    if (this.dead) return;
    try {
      if (outcome.val instanceof Uint8Array) this.enter(() => this.guest.completeBytes(op, outcome));
      else this.enter(() => this.guest.complete(op, outcome));
    } catch {
      // the instance is dead now; `dispose` already failed everything pending
    }
  }

  private startOp(kind: OpKind, inv: number, requestJson: string, body?: Uint8Array): number {
    if (this.active && this.ops.size >= MAX_OPS_IN_FLIGHT) return 0; // refused, and nothing kept for it
    const op = this.nextOp++;
    if (!this.active) return op; // the guest has answered: nothing it starts now runs or completes
    const running = this.running.get(inv);
    const bytes = requestJson.length + (body?.byteLength ?? 0);
    let held = 0;
    for (const o of this.ops.values()) held += o.bytes;
    const heavy = held > 0 && held + bytes > MAX_OP_BYTES_IN_FLIGHT;
    const cancelled = running?.cancelled;
    const abort = new AbortController();
    this.ops.set(op, { inv, abort, bytes: heavy ? 0 : bytes });
    this.opsSinceIdle = true;
    const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    const work = heavy
      ? Promise.reject(new KilnError(`${kind}: its ${mib(bytes)} would bring this guest's operations in flight to ${mib(held + bytes)} of requests and bodies, more than the ${mib(MAX_OP_BYTES_IN_FLIGHT)} a guest may have at once; await some first`))
      : cancelled !== undefined
      ? Promise.reject(Object.assign(new KilnError(`${kind} refused: ${cancelled}`), { name: 'AbortError' }))
      : running
      ? Promise.resolve().then(() => {
        if (abort.signal.aborted) throw new KilnError(`${kind} was cancelled: its call had ended`);
        return this.host.op(kind, running, kind === 'plugins.call' ? JSON.parse(requestJson) : parseGuestJson(requestJson), { body, signal: abort.signal, call: running.hook });
      })
      : Promise.reject(new KilnError(`${kind} can only be called while a handler runs (not from top-level code or after the handler returned)`));
    work.then(
      (v) => this.deliver(op, v instanceof Uint8Array ? { tag: 'ok', val: v } : opJson(kind, v)),
      (e) => this.deliver(op, { tag: 'err', val: errorText(e) }),
    );
    return op;
  }

  /** A handler's reported outcome, as the host sees it. Never throws (it runs inside an import). */
  private settle(r: Running, outcome: Outcome): void {
    const now = performance.now();
    if (this.interruptedAt !== undefined && this.interruptedByCpu) return r.reject(cpuSpent(r));
    if (this.interruptedAt !== undefined || now > r.deadline) {
      if (this.interruptedAt === undefined) this.overran = true;
      return r.reject(new TimeoutError(`tool "${r.tool}" was stopped at its deadline`));
    }
    if (r.cpuMs !== undefined && r.cpuUsed + (now - this.runStartedAt) > r.cpuMs) {
      this.overranCpu = true; // spent between two polls of the interrupt: still no success
      return r.reject(cpuSpent(r));
    }
    if (outcome.tag === 'err') {
      if (!OUT_OF_MEMORY.test(outcome.val)) return r.reject(toolError(outcome.val));
      this.outOfMemory = true;
      return r.reject(new MemoryLimitError(`tool "${r.tool}" ran out of its memory limit; the session's guest for it was reset`));
    }
    if (textNestsDeeper(outcome.val)) {
      return r.reject(new InvalidResultError(`tool "${r.tool}" returned a result nested more than ${MAX_JSON_DEPTH} levels deep; results may nest at most ${MAX_JSON_DEPTH}`));
    }
    let value: unknown;
    try {
      value = JSON.parse(outcome.val);
    } catch {
      return r.reject(toolError(`TypeError: tool "${r.tool}" reported a result that is not JSON`));
    }
    r.resolve(value);
  }

  /** The import table bound to this instance (engine/imports.ts): the op loop's entry points below. */
  private imports(): Record<string, unknown> {
    const self = this;
    return witImports({
      startOp: (kind, inv, request, body) => this.startOp(kind, inv, request, body),
      abortOp: (op) => this.ops.get(op)?.abort.abort(),
      discardBody: (body) => this.host.discardBody?.(body),
      get vars() {
        return self.host.vars;
      },
      log: (level, message) => this.logs.write(level, message),
      sleep: (ms) => this.sleep(ms),
      clearTimer: (op) => this.clearTimer(op),
      interrupted: () => this.interrupted(),
      progress: (inv, update) => this.running.get(inv)?.onProgress?.(update),
      finish: (inv, outcome) => this.finish(inv, outcome),
      intl: (spec, op, args) => this.intl.result(spec, op, args),
    });
  }

  /** runtime.sleep: a guest timer; 0 when refused (the guest's setTimeout throws). */
  private sleep(ms: number): number {
    if (this.timers.size >= MAX_TIMERS) return 0;
    const op = this.nextOp++;
    if (!this.active) return op; // idle: a timer set now never fires
    const fire = () => this.deliver(op, { tag: 'ok', val: 'null' });
    // 0 is the guest's setImmediate: the host's next turn (the guest's setTimeout asks for 1 ms at least).
    this.timers.set(op, ms === 0 ? setImmediate(fire) : setTimeout(fire, ms));
    return op;
  }

  /** runtime.clear-timer: only the guest's own timers; an op id that is not one (a fetch, a command) is not
   *  touched here. */
  private clearTimer(op: number): void {
    const t = this.timers.get(op);
    if (t === undefined) return;
    clearHostTimer(t);
    this.timers.delete(op);
  }

  /** runtime.interrupted: true stops the running guest (its deadline or CPU budget passed, or it is stopped). */
  private interrupted(): boolean {
    const now = performance.now();
    if (now <= this.runDeadline && !this.stopping && !this.host.stopRequested?.()) return false;
    if (this.interruptedAt === undefined) {
      this.interruptedAt = now;
      this.interruptedByCpu = !this.stopping && now > this.cpuDeadline;
    }
    return true;
  }

  /** runtime.finish: a handler's outcome. */
  private finish(inv: number, outcome: Outcome): void {
    // Invocation 0: the instance itself ran out of memory where no handler could report it (the promise
    // machinery itself failed). It is discarded after this run, and what is running fails.
    if (inv === 0 && outcome.tag === 'err' && OUT_OF_MEMORY.test(outcome.val)) this.outOfMemory = true;
    const r = this.running.get(inv);
    if (!r) return;
    this.running.delete(inv);
    this.settle(r, outcome);
    this.endInvocation(inv);
  }
}
