// A session's worker thread: it runs the session's guests, so a guest spinning until its deadline holds this
// thread, never the server's. Everything else stays on the main thread: capability checks and I/O (each op is
// posted there and its outcome posted back), the registry, the session's processes and cookies.
//
// A worker hosts the guests of several sessions. Each (session, extension) `vars` store lives here, keyed by the
// opaque store key the session chose (one per extension file: the unit of trust), while the
// session is placed on this worker (guest reads are synchronous); every change is mirrored to the main thread,
// which hands the latest copy to the next worker the session is placed on.
import { parentPort, workerData } from 'node:worker_threads';
import { KilnError, ToolError } from '../errors.js';
import { checkVarsSet } from '../sessions/vars.js';
import { Engine } from './engine.js';
import { GuestInstance, type CancelHook, type InstanceHost, type LoadConfig } from './instance.js';

export type ToWorker =
  | { type: 'create'; seq: number; id: number; session: string; image: Uint8Array; config: LoadConfig; runLimitMs: number }
  | { type: 'invoke'; seq: number; id: number; tool: string; args: unknown; limit: number; cpuMs?: number; progress: boolean }
  | { type: 'runScript'; seq: number; id: number; tool: string; bytecode: Uint8Array; limit: number; cpuMs?: number }
  | { type: 'dispose'; id: number; error: WireError }
  /** The caller cancelled the invoke/runScript request `of` (GuestInstance.cancel). */
  | { type: 'cancel'; of: number; reason: string }
  /** Move the deadline of the invoke/runScript request `of` `ms` later (CancelHook.extend). */
  | { type: 'extend'; of: number; ms: number }
  | { type: 'opResult'; req: number; ok: boolean; value?: unknown; error?: WireError; counted?: boolean }
  | { type: 'ping'; seq: number }
  | { type: 'varsInit'; session: string; entries: [string, string][] }
  | { type: 'varsDrop'; session: string };

export type FromWorker =
  | { type: 'reply'; seq: number; ok: boolean; value?: unknown; error?: WireError }
  | { type: 'progress'; seq: number; update: string }
  | { type: 'idle'; id: number }
  /** `of`: the invoke/runScript request whose invocation started it (OpExtras.call on the main thread). */
  | { type: 'op'; id: number; req: number; kind: string; inv: { id: number; tool: string }; request: unknown; body?: Uint8Array; of?: number }
  | { type: 'abort'; req: number; reason?: string }
  | { type: 'discardBody'; id: number; body: number }
  | { type: 'vars'; session: string; op: 'set' | 'delete'; key: string; value?: string }
  | { type: 'log'; id: number; level: string; message: string }
  | { type: 'dead'; id: number; error: WireError }
  | { type: 'taken'; req: number };

/** An error as it crosses threads: its class name, message and (for a ToolError) the guest's detail. */
export interface WireError {
  name: string;
  message: string;
  detail?: string;
  /** What the guest's error exposes besides name and message (CommandError: exitCode, stdout, ...). */
  fields?: unknown;
}

export function toWire(e: unknown): WireError {
  if (e instanceof KilnError) return { name: e.name, message: e.message, detail: (e as any).detail, fields: (e as any).fields };
  return { name: 'Error', message: e instanceof Error ? e.message : String(e) };
}

// An async function, not a top-level await: the command line's bundle is CommonJS (scripts/bundle-cli.mjs).
if (parentPort && workerData?.kilnWorker) void (async (port) => {
  const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer);
  // The engine modules the main thread compiled: this thread instantiates them without compiling again.
  const engine = await Engine.load(workerData.engineDir, workerData.modules, workerData.backend);
  GuestInstance.keepSpares(engine); // a new session's guest on this thread costs its load only
  const varsBySession = new Map<string, Map<string, string>>();
  const varsOf = (session: string) => {
    let v = varsBySession.get(session);
    if (!v) varsBySession.set(session, (v = new Map()));
    return v;
  };
  // Since when (ms after workerData.epoch) this thread has been running guest code; 0 when it is not.
  const busyFlag = new Int32Array(workerData.busy as SharedArrayBuffer);
  const stopWord = new Int32Array(workerData.stop as SharedArrayBuffer);
  const epoch = workerData.epoch as number;
  let depth = 0; // guest entries nest (a completion can run inside another entry's host call)
  const busy = (running: boolean) => {
    depth += running ? 1 : -1;
    if (running && depth === 1) Atomics.store(busyFlag, 0, Math.max(1, Date.now() - epoch));
    if (!running && depth === 0) Atomics.store(busyFlag, 0, 0);
  };
  const instances = new Map<number, GuestInstance>();
  /** The invoke/runScript requests running here, by seq: what a 'cancel' message aborts. */
  const cancels = new Map<number, CancelHook>();
  /** The request seq each of those hooks belongs to: an op names it, so the main thread knows its call. */
  const seqOf = new WeakMap<CancelHook, number>();
  const ops = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  let nextReq = 1;

  const fromWire = (w: WireError) => {
    if (w.name === 'ToolError') return new ToolError(w.message, w.detail ?? w.message);
    const e = new KilnError(w.message);
    e.name = w.name;
    if (w.fields !== undefined) Object.assign(e, { fields: w.fields });
    return e;
  };

  const hostFor = (id: number, session: string, vars = varsOf(session)): InstanceHost => ({
    op: (kind, inv, request, extras) =>
      new Promise((resolve, reject) => {
        if (extras.signal.aborted) return reject(new KilnError(`${kind} was cancelled: its call had ended`));
        const req = nextReq++;
        ops.set(req, { resolve, reject });
        extras.signal.addEventListener('abort', () => post({ type: 'abort', req, reason: (extras.signal.reason as Error | undefined)?.message }), { once: true });
        post({ type: 'op', id, req, kind, inv: { id: inv.id, tool: inv.tool }, request, body: extras.body, of: extras.call && seqOf.get(extras.call) });
      }),
    discardBody: (body) => post({ type: 'discardBody', id, body }),
    idle: () => post({ type: 'idle', id }),
    vars: {
      get: (k) => vars.get(k),
      set: (k, v) => {
        checkVarsSet(vars, k, v);
        vars.set(k, v);
        post({ type: 'vars', session, op: 'set', key: k, value: v });
      },
      delete: (k) => {
        const had = vars.delete(k);
        if (had) post({ type: 'vars', session, op: 'delete', key: k });
        return had;
      },
      keys: () => [...vars.keys()],
    },
    log: (level, message) => post({ type: 'log', id, level, message }),
    busy,
    stopRequested: () => {
      for (let i = 0; i < stopWord.length; i++) if (Atomics.load(stopWord, i) === id) return true;
      return false;
    },
  });

  // A value that cannot be cloned across threads (untrusted/json-depth.ts bounds results; this is the last guard) is
  // answered as an error, never left without a reply.
  const reply = (seq: number, ok: boolean, value?: unknown, error?: WireError) => {
    try {
      post({ type: 'reply', seq, ok, value, error });
    } catch (e) {
      post({ type: 'reply', seq, ok: false, error: { name: 'KilnError', message: `the answer could not be passed back to the server: ${(e as Error)?.message ?? e}` } });
    }
  };
  const settle = (seq: number, p: Promise<unknown>) =>
    p.then((value) => reply(seq, true, value), (e) => reply(seq, false, undefined, toWire(e)));

  port.on('message', (m: ToWorker) => {
    switch (m.type) {
      case 'create':
        settle(m.seq, (async () => {
          const instance = await GuestInstance.create(engine, m.image, hostFor(m.id, m.session), m.runLimitMs);
          instances.set(m.id, instance);
          return instance.load(m.config);
        })());
        break;
      case 'invoke':
      case 'runScript': {
        const instance = instances.get(m.id);
        if (!instance) {
          post({ type: 'reply', seq: m.seq, ok: false, error: { name: 'GuestCrashError', message: 'the guest instance is gone' } });
          break;
        }
        const onProgress = m.type === 'invoke' && m.progress ? (update: string) => post({ type: 'progress', seq: m.seq, update }) : undefined;
        const hook: CancelHook = {};
        cancels.set(m.seq, hook);
        seqOf.set(hook, m.seq);
        const run = m.type === 'invoke'
          ? instance.invoke(m.tool, m.args, m.limit, onProgress, hook, m.cpuMs)
          : instance.runScript(m.tool, m.bytecode, m.limit, hook, m.cpuMs);
        settle(m.seq, run.finally(() => {
          cancels.delete(m.seq);
          if (!instance.alive) {
            instances.delete(m.id);
            post({ type: 'dead', id: m.id, error: { name: 'GuestCrashError', message: 'the guest was discarded' } });
          }
        }));
        break;
      }
      case 'cancel':
        cancels.get(m.of)?.cancel?.(m.reason);
        break;
      case 'extend':
        cancels.get(m.of)?.extend?.(m.ms);
        break;
      case 'dispose':
        for (let i = 0; i < stopWord.length; i++) Atomics.compareExchange(stopWord, i, m.id, 0); // its stop request, if any, is done
        instances.get(m.id)?.dispose(fromWire(m.error));
        instances.delete(m.id);
        break;
      case 'opResult': {
        const op = ops.get(m.req);
        ops.delete(m.req);
        if (op) m.ok ? op.resolve(m.value) : op.reject(fromWire(m.error!));
        if (m.counted) post({ type: 'taken', req: m.req }); // the main thread counts it no longer (remote.ts)
        break;
      }
      case 'ping':
        post({ type: 'reply', seq: m.seq, ok: true, value: 'pong' });
        break;
      case 'varsInit': {
        const vars = varsOf(m.session);
        vars.clear();
        for (const [k, v] of m.entries) vars.set(k, v);
        break;
      }
      case 'varsDrop':
        varsBySession.delete(m.session);
        break;
    }
  });
  post({ type: 'reply', seq: 0, ok: true, value: 'ready' });
})(parentPort);
