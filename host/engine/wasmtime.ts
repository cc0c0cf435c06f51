// The wasmtime backend: the engine component run by wasmtime inside this process, through kiln's addon
// (host/engine/wasmtime/, Rust with napi-rs), instead of by V8 through jco's bindings.
//
// Invariants:
//  - The addon answers no import itself: an instance gets the same import object as on V8 (engine/imports.ts,
//    engine/wasi.ts), and the addon calls those functions synchronously on this thread.
//  - Precompiled code is mapped only from the file this module wrote for this engine component (its sha256)
//    and this addon's wasmtime version, in kiln's own build or cache directory, and only when its bytes hash
//    to the sha256 written beside it (the addon reads the file once, hashes those bytes and hands the same
//    bytes to wasmtime, which copies them); wasmtime refuses one compiled for another configuration or CPU.
//    Either way it is compiled again.
//  - The guest object an instance gets behaves as jco's: result-typed exports return their value or throw an
//    Error carrying `payload`; a run past its deadline throws `code: 'KILN_DEADLINE'`.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { cacheDir, isCheckout } from '../paths.js';

/** The addon's file for this platform, in the engine build directory (scripts/build-wasmtime.sh writes it). */
export const ADDON_FILE = `kiln-wasmtime.${platform()}-${arch()}.node`;

/** Bytes of native stack wasm code may use on wasmtime (engine-wide), a backstop below every thread's stack
 *  that runs guests (a session worker's 8 MiB, the main thread's 8 MiB). The guest's own limit stays the one
 *  host/engine/stack.ts derives from V8's: wasmtime's frames share the thread's stack with V8's, and the host
 *  functions a deep guest calls must still find V8's limit unreached. */
export const WASM_STACK_BYTES = 6 * 1024 * 1024;

interface Outcome {
  ok: boolean;
  value?: string;
  bytes?: Uint8Array;
}

/** One instance as the addon hands it out (host/engine/wasmtime/src/lib.rs `Guest`). Its deadline and the
 *  memory its last run left are in the state array it shares with this module (`STATE_*`), read and written
 *  without a call. */
interface NativeGuest {
  setMemoryCeiling(bytes: number): void;
  load(config: string, image: Uint8Array): Outcome;
  invoke(inv: number, tool: string, args: string): void;
  complete(op: number, ok: boolean, value: string): void;
  completeBytes(op: number, bytes: Uint8Array | null, error: string | null): void;
  cancel(inv: number, reason: string): void;
  runScript(inv: number, bytecode: Uint8Array): void;
  compile(source: string, filename: string, module: boolean): Outcome;
  readonly importCalls: number;
  snapshot(): MemorySnapshot;
}

/** A guest's memory between two of its runs (lib.rs `Snapshot`), which other guests of the engine can start
 *  from copy-on-write. */
export interface MemorySnapshot {
  /** Bytes of its non-zero pages: held once by the process, however many guests map it. */
  readonly residentBytes: number;
  /** Bytes of the memory a guest starts with. */
  readonly bytes: number;
}

interface Addon {
  wasmtimeVersion(): string;
  configure(wasmStackBytes: number): void;
  precompile(wasm: Uint8Array): Uint8Array;
  /** `source`: the engine component `code` was compiled from (its memory's initial bytes come from it). */
  Runtime: new (key: string, code: Uint8Array, source: Uint8Array) => NativeRuntime;
  /** The precompiled engine in `file`, read, checked against `sha256` and loaded on a thread of Node's pool;
   *  rejects when its bytes do not hash to it or wasmtime refuses them. */
  openPrecompiled(file: string, sha256: string, source: Uint8Array): Promise<NativeRuntime>;
}

interface NativeRuntime {
  instantiate(imports: Record<string, unknown>, state: Float64Array, snapshot?: MemorySnapshot): NativeGuest;
}

/** The state array's elements (lib.rs `Guest`): milliseconds from the start of the next run to its deadline
 *  (< 0: none), written here; the largest linear memory's bytes and 1 once a growth past the ceiling was
 *  refused, written by the addon after every run. */
const STATE_DEADLINE = 0;
const STATE_MEMORY = 1;
const STATE_REFUSED = 2;

/** What instance.ts needs of a wasmtime instance besides its exports. */
export interface WasmtimeGuest {
  /** The guest's exports, shaped as jco's. */
  guest: Record<string, (...args: any[]) => unknown>;
  memoryBytes(): number;
  /** True when the guest asked for memory past its ceiling and was refused. */
  memoryRefused(): boolean;
  setMemoryCeiling(bytes: number): void;
  /** The next run is stopped `ms` from now (Infinity: only at the instance's own limits). */
  setDeadline(ms: number): void;
  /** Calls the guest has made to the host (any import) since it was made. */
  importCalls(): number;
  /** Its memory now (between runs), to start other instances from. */
  snapshot(): MemorySnapshot;
}

/** True for the error a run stopped at its deadline throws. */
export const isDeadline = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === 'KILN_DEADLINE';

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const payloadError = (text: string) => Object.assign(new Error(text), { payload: text });

/** Each addon file loaded in this process (Node loads a native module once per process and thread). */
const loaded = new Map<string, Addon>();

/** The addon of the engine build in `engineDir`, or why there is none. */
export function loadAddon(engineDir: string): { addon?: Addon; why?: string } {
  const file = join(engineDir, ADDON_FILE);
  const known = loaded.get(file);
  if (known) return { addon: known };
  if (!existsSync(file)) {
    return { why: `no wasmtime addon for ${platform()}-${arch()} (${file}): ${isCheckout ? 'run `npm run setup` with cargo installed' : 'this platform has no prebuilt one'}` };
  }
  try {
    const a = createRequire(import.meta.url)(file) as Addon;
    a.configure(WASM_STACK_BYTES);
    loaded.set(file, a);
    return { addon: a };
  } catch (e: any) {
    return { why: `the wasmtime addon ${file} did not load (${e?.message ?? e})` };
  }
}

/** The precompiled engine: read from the file compiled for this component and wasmtime, compiled (and
 *  written) first when there is none, or it fails its sha256, or wasmtime refuses it. */
export class WasmtimeEngine {
  private constructor(private readonly runtime: NativeRuntime, readonly wasmtimeVersion: string, readonly precompiledFile: string) {}

  static async open(a: Addon, engineDir: string, component: Uint8Array, componentSha256: string): Promise<WasmtimeEngine> {
    const version = a.wasmtimeVersion();
    // `.code`: the component's code without its memory's data segments, which each instance maps from the
    // component's bytes instead (lib.rs `precompile`).
    const name = `engine.${componentSha256.slice(0, 16)}.wasmtime-${version}.${platform()}-${arch()}.code.cwasm`;
    const dirs = [engineDir, join(cacheDir(), 'engine')];
    for (const dir of dirs) {
      const file = join(dir, name);
      // Used only when its bytes are the ones written beside their sha256: wasmtime checks the header
      // (version, configuration, CPU features) but not the code, which runs as it is. The addon checks the
      // bytes it then hands to wasmtime, which copies them, so a change to the file after the check changes
      // nothing. It reads, hashes and loads them off this thread (4.4 MB: a few ms a one-shot process spends
      // loading its own modules meanwhile).
      if (!existsSync(file) || !existsSync(`${file}.sha256`)) continue;
      try {
        return new WasmtimeEngine(await a.openPrecompiled(file, readFileSync(`${file}.sha256`, 'utf8').trim(), component), version, file);
      } catch {
        // Damaged, or compiled for another configuration or CPU: compiled again below.
      }
    }
    const code = a.precompile(component);
    let lastError: unknown;
    for (const dir of dirs) {
      const file = join(dir, name);
      try {
        mkdirSync(dir, { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, code);
        writeFileSync(`${tmp}.sha256`, `${sha256(code)}\n`);
        renameSync(tmp, file);
        renameSync(`${tmp}.sha256`, `${file}.sha256`);
        // Older engines' precompiled files go (a process still mapping one keeps its pages).
        for (const f of readdirSync(dir)) if (/^engine\.[0-9a-f]{16}\.wasmtime-.*\.cwasm(\.sha256)?$/.test(f) && !f.startsWith(name)) rmSync(join(dir, f), { force: true });
        return new WasmtimeEngine(new a.Runtime(sha256(code), code, component), version, file);
      } catch (e) {
        lastError = e; // a read-only package directory: the user's cache next
      }
    }
    throw lastError;
  }

  /** A new instance whose imports are `imports` (keyed by interface, as jco's), its memory `snapshot`'s if
   *  given (taken of an instance of this engine), else the engine's own. */
  instantiate(imports: Record<string, unknown>, snapshot?: MemorySnapshot): WasmtimeGuest {
    // Over an ArrayBuffer of its own: its memory never moves (the addon keeps a pointer to it).
    const state = new Float64Array(new ArrayBuffer(3 * Float64Array.BYTES_PER_ELEMENT));
    const g = snapshot ? this.runtime.instantiate(imports, state, snapshot) : this.runtime.instantiate(imports, state);
    const guest = {
      load: (config: string, image: Uint8Array) => {
        const r = g.load(config, image);
        if (!r.ok) throw payloadError(r.value ?? '');
        return r.value;
      },
      invoke: (inv: number, tool: string, args: string) => g.invoke(inv, tool, args),
      complete: (op: number, o: { tag: 'ok' | 'err'; val: string }) => g.complete(op, o.tag === 'ok', o.val),
      completeBytes: (op: number, o: { tag: 'ok'; val: Uint8Array } | { tag: 'err'; val: string }) =>
        o.tag === 'ok' ? g.completeBytes(op, o.val, null) : g.completeBytes(op, null, o.val),
      cancel: (inv: number, reason: string) => g.cancel(inv, reason),
      runScript: (inv: number, bytecode: Uint8Array) => g.runScript(inv, bytecode),
      compile: (source: string, filename: string, module: boolean) => {
        const r = g.compile(source, filename, module);
        if (!r.ok) throw payloadError(r.value ?? '');
        return r.bytes;
      },
    };
    return {
      guest,
      memoryBytes: () => state[STATE_MEMORY],
      memoryRefused: () => state[STATE_REFUSED] !== 0,
      setMemoryCeiling: (bytes) => g.setMemoryCeiling(Number.isFinite(bytes) ? bytes : 0),
      setDeadline: (ms) => {
        state[STATE_DEADLINE] = Number.isFinite(ms) ? Math.max(0, ms) : -1;
      },
      importCalls: () => g.importCalls,
      snapshot: () => g.snapshot(),
    };
  }
}
