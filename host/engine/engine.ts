// The engine: the quickjs-ng component every artifact is made of, compiled once per process.
//
// Invariant: an artifact is exactly the engine component, byte for byte, followed by kiln's custom sections
// (`kiln-manifest`, `kiln-image`: the extension's bytecode, and optionally `kiln-sourcemap`). `verify` checks
// this, so a host runs no code but its own engine's; the prelude lives inside the engine (in its snapshot),
// so an artifact cannot replace kiln's guest runtime either; the image is only ever handed to `guest.load`
// as data. Because the code never differs between artifacts, it is compiled once per process (V8: the core
// modules, compiled and tiered; wasmtime: the precompiled component, mapped), and every extension, session and
// worker instantiates the same code.
//
// Two backends run it (docs/architecture.md, "Engine backends"): wasmtime inside this process through kiln's
// addon (engine/wasmtime.ts), the default where the addon is present; V8 through jco's bindings everywhere
// else and on request. Both get the same import object and give instance.ts the same guest.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { EngineError } from '../errors.js';
import { engineDir } from '../paths.js';
import { coreModules, moduleBytes, readCustomName, sections, WasmFormatError } from './wasm-binary.js';
import { loadAddon, WasmtimeEngine } from './wasmtime.js';
import { requestedBackend, type Backend, type BackendChoice } from './backends.js';

export const IMAGE_SECTION = 'kiln-image';
/** The custom sections an artifact may carry after the engine, and how many of each. */
const ARTIFACT_SECTIONS: Record<string, { min: number; max: number }> = {
  'kiln-manifest': { min: 1, max: 1 },
  [IMAGE_SECTION]: { min: 1, max: 1 },
  'kiln-sourcemap': { min: 0, max: 1 },
};
/** The largest extension image (bytecode) an artifact may carry: it is copied into the guest at load. */
export const MAX_IMAGE_BYTES = 16 * 1024 * 1024;

export type Instantiate = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore?: (m: WebAssembly.Module, i: WebAssembly.Imports) => WebAssembly.Instance | Promise<WebAssembly.Instance>,
) => Promise<Record<string, any>>;

export interface EngineInfo {
  /** sha256 naming the engine component (prelude included): what an artifact must be built for. */
  id: string;
  componentSha256: string;
  quickjs: { name: string; version: string; url: string; sha256: string };
}

export const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

export function engineId(component: Uint8Array): string {
  return sha256(`kiln-engine\n${sha256(component)}\n`);
}

/** The engine's compiled core modules, as a worker receives them from the thread that compiled them. */
export type CompiledModules = WebAssembly.Module[];

/** Run once, right before this process first has V8 compile the engine's core modules (the V8 backend only). */
let beforeV8Compile: (() => void) | undefined;

/** `f` runs right before V8 first compiles the engine in this process, and never on the wasmtime backend.
 *  The command line sets its V8 flags there: a V8 flag changed earlier costs every Node builtin module loaded
 *  after it its code cache (V8 keys the cache by the flags), so each one is parsed and compiled from source. */
export function onFirstV8Compile(f: () => void): void {
  beforeV8Compile = f;
}

export class Engine {
  /** Compiled core modules in the bindings' order (engine.core.wasm, engine.core2.wasm, ...). */
  readonly modules: CompiledModules;

  private constructor(
    /** The engine build directory (a session's worker loads the bindings from it). */
    readonly dir: string,
    readonly component: Uint8Array,
    readonly info: EngineInfo,
    private readonly bindingsFile: string,
    readonly choice: BackendChoice,
    /** The precompiled engine, on the wasmtime backend. */
    readonly wasmtime: WasmtimeEngine | undefined,
    compiled?: CompiledModules,
  ) {
    // On wasmtime V8 compiles nothing: the bindings are kept only for the V8 backend.
    if (!wasmtime && !compiled) {
      const f = beforeV8Compile;
      beforeV8Compile = undefined;
      f?.();
    }
    this.modules = wasmtime ? [] : compiled ?? coreModules(component).map((s) => new WebAssembly.Module(moduleBytes(component, s) as BufferSource));
  }

  get backend(): Backend {
    return this.choice.backend;
  }

  /** jco's bindings (the V8 backend), loaded on first use. */
  get instantiate(): Instantiate {
    // CommonJS (scripts/engine/bindings.mjs, COMMONJS_BINDINGS): no ES module loader on a command's path.
    return (this.bindings ??= createRequire(import.meta.url)(this.bindingsFile)).instantiate as Instantiate;
  }
  private bindings: { instantiate: unknown } | undefined;

  /** Load the engine build from `dir`; `compiled`: modules another thread already compiled from it;
   *  `backend`: the one asked for (requestedBackend; none: wasmtime where it can run, else V8). */
  static async load(dir = engineDir(), compiled?: CompiledModules, backend: Backend | undefined = requestedBackend()): Promise<Engine> {
    const file = (name: string) => join(dir, name);
    if (!existsSync(file('engine.wasm')) || !existsSync(file('bindings/engine.cjs')) || !existsSync(file('engine.json'))) {
      throw new EngineError(`no engine build in ${dir}: run \`npm run build:engine\` (npm test and npm run demo do it for you)`);
    }
    const component = readFileSync(file('engine.wasm'));
    const info: EngineInfo = JSON.parse(readFileSync(file('engine.json'), 'utf8'));
    // The component is the reproducible build engine.json records (and the package ships): a changed or
    // truncated engine.wasm would make every artifact built here differ from everyone else's.
    if (sha256(component) !== info.componentSha256) {
      throw new EngineError(`${file('engine.wasm')} is not the engine its engine.json records (sha256 ${info.componentSha256}): rebuild it with \`npm run build:engine\`, or reinstall the package`);
    }
    let choice: BackendChoice = { backend: backend ?? 'wasmtime' };
    let wasmtime: WasmtimeEngine | undefined;
    if (choice.backend === 'wasmtime') {
      let { addon, why } = loadAddon(dir);
      try {
        if (addon) wasmtime = await WasmtimeEngine.open(addon, dir, component, info.componentSha256);
      } catch (e: any) {
        why = `the wasmtime backend could not load the engine (${e?.message ?? e})`;
      }
      if (!wasmtime) {
        if (backend === 'wasmtime') throw new EngineError(`${why}; choose the V8 backend with KILN_ENGINE=v8 or [engine] backend = "v8" in kiln.toml`);
        choice = { backend: 'v8', fallback: why };
      }
    }
    return new Engine(dir, component, info, file('bindings/engine.cjs'), choice, wasmtime, compiled);
  }

  /** Check that `artifact` is this engine followed only by kiln's custom sections, each as often as allowed.
   *  Returns the image (the extension's bytecode). */
  verify(artifact: Uint8Array): Uint8Array {
    const n = this.component.length;
    if (artifact.length < n || !Buffer.from(artifact.buffer, artifact.byteOffset, n).equals(this.component)) {
      throw new EngineError('the artifact was not built for this engine');
    }
    const seen = new Map<string, Uint8Array[]>();
    try {
      for (const s of sections(artifact, n)) {
        const [name, payload] = s.id === 0 ? readCustomName(artifact, s) : ['', 0];
        if (!(name in ARTIFACT_SECTIONS)) {
          throw new EngineError(`the artifact carries ${s.id === 0 ? `a custom section "${name.slice(0, 40)}"` : `a section of kind ${s.id}`} after the engine; an artifact is the engine plus kiln's own sections only`);
        }
        seen.set(name, [...(seen.get(name) ?? []), artifact.subarray(payload, s.end)]);
      }
    } catch (e) {
      if (e instanceof WasmFormatError) throw new EngineError(`the artifact's sections after the engine are malformed (${e.message})`);
      throw e;
    }
    for (const [name, { min, max }] of Object.entries(ARTIFACT_SECTIONS)) {
      const count = seen.get(name)?.length ?? 0;
      if (count < min || count > max) throw new EngineError(`the artifact has ${count} ${name} sections (expected ${min === max ? min : `${min} to ${max}`})`);
    }
    const image = seen.get(IMAGE_SECTION)![0];
    if (image.length > MAX_IMAGE_BYTES) {
      throw new EngineError(`the artifact's image is ${image.length} bytes, larger than the ${MAX_IMAGE_BYTES} bytes an artifact may carry`);
    }
    return image;
  }

  /** Core modules for the bindings. */
  moduleSet(): (name: string) => WebAssembly.Module {
    return (name) => {
      const m = /^engine\.core(\d*)\.wasm$/.exec(name);
      const mod = m && this.modules[m[1] ? Number(m[1]) - 1 : 0];
      if (!mod) throw new EngineError(`the bindings asked for an unknown core module ${name}`);
      return mod;
    };
  }

  /** The main core module: the one that owns the guest's linear memory. */
  get main(): WebAssembly.Module {
    return this.modules[0];
  }
}
