// A session: one guest instance per extension, created on first use, plus the session's `vars` store and
// persistent processes. Those belong to the session, not to an instance, so they survive a guest reset.
import { HttpSession } from './capabilities/http.js';
import { ProcessTable } from './capabilities/processes.js';
import { GuestInstance, type Invocation, type OpExtras, type OpKind } from './engine/instance.js';
import type { Engine } from './engine/engine.js';
import { ExtensionLoadError, GuestCrashError, KilnError } from './errors.js';
import { DEFAULT_POLICY, guestEnv, memoryLimit, type OperatorPolicy } from './policy.js';
import type { LoadedExtension } from './registry.js';

export const VARS_LIMITS = { keys: 1024, keyBytes: 256, valueBytes: 64 * 1024 };

export type OpHandler = (inv: Invocation, kind: OpKind, request: unknown, extras: OpExtras) => Promise<unknown>;

export class Session {
  private readonly instances = new Map<LoadedExtension, Promise<GuestInstance>>();
  readonly vars = new Map<string, string>();
  /** Persistent processes live with the session, so they survive guest resets. */
  readonly processes = new ProcessTable();
  /** Cookies and open response bodies, shared by fetch and request. */
  readonly http: HttpSession;

  constructor(
    readonly name: string,
    private readonly engine: Engine,
    private readonly host: 'mcp' | 'bdd' | 'script' = 'mcp',
    private readonly onLog: (ext: LoadedExtension, level: string, message: string) => void = () => {},
    private readonly policy: OperatorPolicy = DEFAULT_POLICY,
  ) {
    this.http = new HttpSession(policy.net);
  }

  async instanceFor(ext: LoadedExtension, onOp: OpHandler): Promise<GuestInstance> {
    let p = this.instances.get(ext);
    if (p) {
      const live = await p.catch(() => undefined);
      if (live?.alive) return live;
    }
    p = this.create(ext, onOp);
    this.instances.set(ext, p);
    p.catch(() => this.instances.delete(ext));
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

  /** Discard every guest of this session (vars, processes and cookies stay). */
  releaseInstances(reason: string): void {
    for (const ext of [...this.instances.keys()]) this.discard(ext, reason);
  }

  /** Throw the extension's guest away; the next call gets a fresh one (vars are kept). */
  discard(ext: LoadedExtension, reason: string): void {
    const p = this.instances.get(ext);
    this.instances.delete(ext);
    p?.then((i) => i.dispose(new GuestCrashError(`the guest was reset: ${reason}`)), () => {});
  }

  close(): void {
    for (const ext of [...this.instances.keys()]) this.discard(ext, 'the session ended');
    this.processes.killAll();
    this.http.close();
    this.vars.clear();
  }

  private async create(ext: LoadedExtension, onOp: OpHandler): Promise<GuestInstance> {
    const instance = await GuestInstance.create(this.engine, ext.artifact.module, {
      op: (kind, inv, request, extras) => onOp(inv, kind, request, extras),
      discardBody: (body) => this.http.discard(ext.file, body),
      vars: this.varsStore(),
      log: (level, message) => {
        this.onLog(ext, level, message);
        for (const fn of this.logListeners) fn(level, message);
      },
    }, this.policy.limits.timeoutMs);
    const loaded = instance.load({
      host: ext.hostKind ?? this.host,
      platform: process.platform,
      pid: process.pid,
      env: guestEnv(this.policy),
      memoryLimit: memoryLimit(this.policy, ext.artifact.manifest.source.name),
    }) as { tools?: unknown };
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

  private varsStore() {
    const vars = this.vars;
    const bytes = (s: string) => Buffer.byteLength(s);
    return {
      get: (k: string) => vars.get(k),
      set: (k: string, v: string) => {
        if (bytes(k) > VARS_LIMITS.keyBytes) throw new KilnError(`vars key is over ${VARS_LIMITS.keyBytes} bytes`);
        if (bytes(v) > VARS_LIMITS.valueBytes) throw new KilnError(`vars value is over ${VARS_LIMITS.valueBytes} bytes`);
        if (!vars.has(k) && vars.size >= VARS_LIMITS.keys) throw new KilnError(`vars holds at most ${VARS_LIMITS.keys} keys`);
        vars.set(k, v);
      },
      delete: (k: string) => vars.delete(k),
      keys: () => [...vars.keys()],
    };
  }
}
