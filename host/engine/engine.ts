// The engine: the QuickJS component every artifact is made of, and the sealing of an extension image
// into it.
//
// Invariant: an artifact is exactly the engine component with one data segment (the image) added to its
// main core module, plus `kiln-*` custom sections. `open` checks this byte for byte, so a host runs no
// code but its own engine's and the image's bytecode, and an artifact built for another engine is refused.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EngineError } from '../errors.js';
import { engineDir } from '../paths.js';
import {
  appendDataSegment, coreModules, findInData, moduleBytes, popDataSegment, replaceCoreModule, stripCustomSections,
  WasmFormatError,
} from './wasm-binary.js';

const SLOT_MAGIC = new TextEncoder().encode('KILN-IMAGE-SLOT\0');
export const KILN_SECTION_PREFIX = 'kiln-';

export type Instantiate = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore?: (m: WebAssembly.Module, i: WebAssembly.Imports) => WebAssembly.Instance | Promise<WebAssembly.Instance>,
) => Promise<Record<string, any>>;

export interface EngineInfo {
  /** sha256 over the engine component and the prelude bytecode: what an artifact must be built for. */
  id: string;
  componentSha256: string;
  preludeSha256: string;
  quickjs: { package: string; integrity: string; version: string };
}

export const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

export function engineId(component: Uint8Array, prelude: Uint8Array): string {
  return sha256(`kiln-engine\n${sha256(component)}\n${sha256(prelude)}\n`);
}

/** The image layout the glue reads: u32 prelude length, u32 module length, prelude, module. */
export function encodeImage(prelude: Uint8Array, module: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + prelude.length + module.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, prelude.length, true);
  dv.setUint32(4, module.length, true);
  out.set(prelude, 8);
  out.set(module, 8 + prelude.length);
  return out;
}

export class Engine {
  private readonly sharedModules: WebAssembly.Module[];
  private readonly mainModule: Uint8Array;
  readonly slot: { address: number; capacity: number };
  private compiledMain?: WebAssembly.Module;

  private constructor(
    /** The engine build directory (a session's worker loads the engine from it). */
    readonly dir: string,
    readonly component: Uint8Array,
    readonly prelude: Uint8Array,
    readonly info: EngineInfo,
    readonly instantiate: Instantiate,
  ) {
    const modules = coreModules(component);
    this.mainModule = moduleBytes(component, modules[0]);
    this.sharedModules = modules.slice(1).map((s) => new WebAssembly.Module(moduleBytes(component, s) as BufferSource));
    const found = findInData(this.mainModule, SLOT_MAGIC);
    if (!found) throw new EngineError('the engine has no image slot (was it built by scripts/build-engine.mjs?)');
    const dv = new DataView(found.after.buffer, found.after.byteOffset, 8);
    this.slot = { address: dv.getUint32(0, true), capacity: dv.getUint32(4, true) };
  }

  /** Load the engine build from `dir`. Without a prelude (during the engine build) only `compile` works. */
  static async load(dir = engineDir(), opts: { withoutPrelude?: boolean } = {}): Promise<Engine> {
    const file = (name: string) => join(dir, name);
    if (!existsSync(file('engine.wasm')) || !existsSync(file('bindings/engine.js'))) {
      throw new EngineError(`no engine build in ${dir}: run \`npm run build:engine\` (npm test and npm run demo do it for you)`);
    }
    const component = readFileSync(file('engine.wasm'));
    const prelude = opts.withoutPrelude ? new Uint8Array() : readFileSync(file('prelude.bc'));
    const info: EngineInfo = opts.withoutPrelude
      ? { id: '', componentSha256: sha256(component), preludeSha256: '', quickjs: { package: '', integrity: '', version: '' } }
      : JSON.parse(readFileSync(file('engine.json'), 'utf8'));
    const bindings = await import(pathToFileURL(file('bindings/engine.js')).href);
    return new Engine(dir, component, prelude, info, bindings.instantiate as Instantiate);
  }

  /** The artifact's bytes (before custom sections) for an image. */
  seal(image: Uint8Array): Uint8Array {
    if (image.length > this.slot.capacity) {
      throw new EngineError(`the extension image is ${image.length} bytes; the engine's slot holds ${this.slot.capacity}`);
    }
    return replaceCoreModule(this.component, 0, appendDataSegment(this.mainModule, this.slot.address, image));
  }

  /** Check that `artifact` is this engine plus an image; returns its main module bytes and the image. */
  verify(artifact: Uint8Array): { main: Uint8Array; image: Uint8Array } {
    try {
      const main = moduleBytes(artifact, coreModules(artifact)[0]);
      const { module, address, bytes } = popDataSegment(main);
      if (bytes.length > this.slot.capacity) {
        throw new EngineError(`the artifact's image is ${bytes.length} bytes, larger than the engine's ${this.slot.capacity}-byte slot`);
      }
      const sameEngine =
        address === this.slot.address &&
        Buffer.from(module).equals(this.mainModule) &&
        Buffer.from(stripCustomSections(artifact, KILN_SECTION_PREFIX)).equals(replaceCoreModule(this.component, 0, main));
      if (sameEngine) return { main, image: bytes };
    } catch (e) {
      if (!(e instanceof WasmFormatError)) throw e;
    }
    throw new EngineError('the artifact was not built for this engine');
  }

  /** Core modules for the bindings: the artifact's main module and the engine's shared ones. */
  moduleSet(main: WebAssembly.Module): (name: string) => WebAssembly.Module {
    const all = [main, ...this.sharedModules];
    return (name) => {
      const m = /^engine\.core(\d*)\.wasm$/.exec(name);
      const mod = m && all[m[1] ? Number(m[1]) - 1 : 0];
      if (!mod) throw new EngineError(`the bindings asked for an unknown core module ${name}`);
      return mod;
    };
  }

  /** The bare engine's main module, compiled once (used for `compile`). */
  bareMain(): WebAssembly.Module {
    this.compiledMain ??= new WebAssembly.Module(this.mainModule as BufferSource);
    return this.compiledMain;
  }
}
