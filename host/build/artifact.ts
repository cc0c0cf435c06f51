// `kiln build`: extension source → rolldown bundle → QuickJS bytecode (compiled inside the sandbox) → manifest
// extracted by running the top level once → the engine component plus custom sections (manifest, image, map).
// The same source and engine give the same bytes anywhere: no absolute path, clock or randomness enters.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { ARTIFACT_FORMAT, MANIFEST_SECTION, SOURCEMAP_SECTION, type ArtifactManifest } from '../extensions/artifact.js';
import { IMAGE_SECTION, MAX_IMAGE_BYTES, sha256, type Engine } from '../engine/engine.js';
import { GuestInstance, type InstanceHost } from '../engine/instance.js';
import { concat, customSection } from '../engine/wasm-binary.js';
import { ExtensionLoadError, KilnError, TimeoutError, ToolError } from '../errors.js';
import { ManifestError, parseTools } from '../extensions/manifest.js';
import { argsValidator, ExtensionAjv, resultValidator } from '../schema/validators.js';
import { BUNDLE_PREFIX, StackMapper } from '../untrusted/source-map.js';
import { checkNesting, NestingError } from './nesting.js';
import { guestLog, writeStderr } from '../untrusted/terminal.js';

/** Nothing is granted while building: top-level code may only register tools. */
const buildHost: InstanceHost = {
  op: async () => {
    throw new KilnError('capabilities are not available while an extension is being built');
  },
  vars: { get: () => undefined, set: () => {}, delete: () => false, keys: () => [] },
  log: (level, message) => guestLog(['build'], level, message).forEach(writeStderr), // the extension's top level
};

export interface Built {
  bytes: Uint8Array;
  manifest: ArtifactManifest;
  /** The files the build read (cache.ts keys a cached build on their contents). */
  inputs: string[];
  /** How packages were built that the author should know (bundle.ts `notes`): `kiln build` prints them. */
  notes: string[];
}

/** How long an extension's top level may run when it is built (to read its manifest), unless the caller
 *  says otherwise (the server passes its [limits] timeoutMs). Long enough that a busy machine still builds a
 *  large package (mathjs's top level takes 0.75 s on an idle 2-core machine, several times that on a loaded one); a top
 *  level that never ends still fails its file. */
export const DEFAULT_LOAD_TIMEOUT_MS = 60_000;

export class Builder {
  private compiler?: GuestInstance;
  /** Warnings about what was built (schema keywords Ajv ignores, ...), each naming its file and tool. */
  readonly warnings: string[] = [];
  constructor(readonly engine: Engine, readonly loadTimeoutMs = DEFAULT_LOAD_TIMEOUT_MS) {}

  /** QuickJS bytecode for `source`, compiled inside the sandbox: a module, or a global script. Code nesting
   *  deeper than the parser survives is refused first; a compiler instance that trapped anyway is replaced. */
  async compileSource(source: string, name: string, module: boolean): Promise<Uint8Array> {
    try {
      checkNesting(source, name.replace(BUNDLE_PREFIX, ''));
    } catch (e) {
      if (e instanceof NestingError) throw new ToolError(`SyntaxError: ${e.message}`, `SyntaxError: ${e.message}`);
      throw e;
    }
    if (!this.compiler?.alive) this.compiler = await GuestInstance.create(this.engine, new Uint8Array(), buildHost);
    return this.compiler.compile(source, name, module);
  }

  /** Build one extension file. Every failure is an ExtensionLoadError naming the file and, where known, the line. */
  async build(file: string): Promise<Built> {
    const name = basename(file);
    const fail = (msg: string) => new ExtensionLoadError(file, msg);
    let source: Buffer;
    try {
      source = readFileSync(file);
    } catch (e: any) {
      // A missing file, a directory: this file fails, with the reason, and the build goes on to the next.
      throw fail(`cannot read it: ${e?.code === 'EISDIR' ? 'it is a directory' : e?.code === 'ENOENT' ? 'no such file' : String(e?.message ?? e)}`);
    }
    let b;
    try {
      b = await (await import('./bundle.js')).bundle(file); // the bundler loads only when an extension is built
    } catch (e) {
      if (e instanceof Error && e.name === 'BundleError') throw fail(e.message);
      throw e;
    }
    const mapper = new StackMapper(name, b.map);
    // "line: Name: message", then the guest's stack (its first line repeats the message). A syntax error's
    // "stack" is only its position, already said at the front: it is said once.
    const located = (e: ToolError) => {
      const where = mapper.firstLocation(e.detail);
      let stack = mapper.rewrite(e.detail.split('\n').slice(1).join('\n'));
      if (where && stack.trim() === `at ${where}`) stack = '';
      return fail(`${where ? `${where}: ` : ''}${mapper.rewrite(e.message)}${stack ? `\n${stack}` : ''}`);
    };
    let bytecode: Uint8Array;
    try {
      bytecode = await this.compileSource(b.code, BUNDLE_PREFIX + name, true);
    } catch (e) {
      if (e instanceof ToolError) throw located(e);
      throw e;
    }
    if (bytecode.length > MAX_IMAGE_BYTES) {
      const mib = (n: number) => `${(n / 1048576).toFixed(2)} MiB`;
      throw fail(`its bytecode is ${mib(bytecode.length)}; an artifact holds at most ${mib(MAX_IMAGE_BYTES)}: import less (packages are tree-shaken as their sideEffects allow)`);
    }
    // What the top level logs names the author's files and lines, as a served tool's logs do.
    const host: InstanceHost = { ...buildHost, log: (level, message) => buildHost.log(level, mapper.rewrite(message)) };
    const instance = await GuestInstance.create(this.engine, bytecode, host, this.loadTimeoutMs);
    let raw: any;
    try {
      raw = instance.load({ host: 'mcp', moduleUrl: `file:///${name}`, build: true });
    } catch (e) {
      if (e instanceof ToolError) throw located(e);
      if (e instanceof TimeoutError) throw fail(`its top level did not finish within ${this.loadTimeoutMs} ms (the server's [limits] timeoutMs when serving); an extension's top level should only register tools`);
      if (e instanceof KilnError) throw fail(e.message);
      throw e;
    } finally {
      instance.dispose();
    }
    let tools;
    try {
      tools = parseTools(raw.tools);
      const ajvs = new ExtensionAjv((warning) => this.warnings.push(`${file}: ${warning}`));
      for (const t of tools) await Promise.all([argsValidator(t, ajvs), resultValidator(t, ajvs.patterns)]);
    } catch (e) {
      if (e instanceof ManifestError) throw fail(e.message);
      throw e;
    }
    const manifest: ArtifactManifest = {
      format: ARTIFACT_FORMAT,
      engine: this.engine.info.id,
      source: { name, sha256: sha256(source) },
      tools,
      steps: Number(raw.steps) || 0,
    };
    const enc = new TextEncoder();
    const bytes = concat([
      this.engine.component,
      customSection(MANIFEST_SECTION, enc.encode(JSON.stringify(manifest))),
      customSection(IMAGE_SECTION, bytecode),
      customSection(SOURCEMAP_SECTION, enc.encode(JSON.stringify(b.map))),
    ]);
    return { bytes, manifest, inputs: b.inputs, notes: b.notes };
  }
}
