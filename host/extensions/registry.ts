// The catalogue: the loaded extensions and their tools, the operator's settings in force, and what they leave
// unmatched. Calling a tool is sessions/call.ts, which reads this catalogue; nothing here runs a guest.
//
// One bad file never stops the others: its failure is recorded and reported, the rest load.
// A source is served only as the code the operator reviewed: the files its build read stay out of every tool's
// reach while it is loaded (buildInputs, capabilities/fs/policy.ts), and a (re)build that would read a file a
// guest wrote through allow.fs is refused and reported (build/guest-writes.ts), the last good build serving on.
// Tool names are unique across everything loaded. A name two files define is served by neither (spec 002: "A
// name that collides with a built-in or another loaded tool is not exposed"): not in tools/list, not callable
// by a client or through plugins[...], whichever file loaded first, and both files are reported (stderr at load,
// kiln_extensions). Which file would serve a contested name must never depend on load order: a file added
// later could otherwise take the arguments, grants and callers meant for another. A name that collides with a
// built-in tool is not loaded and is reported. When a reload (--watch, a changed config) finds the name defined
// once again, that file serves it. Likewise, under [mcp] toolNames = "portable", exposed tools whose advertised
// names would be one (`notes.save`, `notes_save`) are advertised by none of them (extensions/tool-names.ts).
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { openArtifact } from './artifact.js';
import type { LoadedExtension, ToolEntry } from './loaded.js';
import type { Builder, Built } from '../build/artifact.js';
import { BUILD_CACHE, BuildCache } from '../build/cache.js';
import { cacheDir } from '../paths.js';
import { GUEST_WRITES, GuestWrites } from '../build/guest-writes.js';
import { CONFIG_NAMES } from '../config/config-file.js';
import { discover } from './discovery.js';
import type { Engine } from '../engine/engine.js';
import { AuditLog, auditFiles } from '../policy/audit-log.js';
import { grantedSecrets, NotGrantedError } from '../policy/grants.js';
import { ApprovalGate } from '../policy/approvals/gate.js';
import { ExtensionLoadError, KilnError } from '../errors.js';
import { SecretStore } from '../capabilities/secrets/secrets.js';
import { ManifestError, type ToolManifest } from './manifest.js';
import { argsValidator, cachedValidator, ExtensionAjv, resultValidator, usesPatterns, type Validator } from '../schema/validators.js';
import { programBudget } from '../schema/linear-regexp.js';
import { advertisedNames, type ToolNaming } from './tool-names.js';
import { DEFAULT_POLICY, extensionKeys, type OperatorPolicy } from '../policy/policy.js';

export const BUILTIN_TOOLS = ['kiln_extensions', 'kiln_close_session', 'run_script'];

/** The shape of contestedMessage's text (warnContested replaces those lines). */
const CONTESTED = /^tool "[^"]*" is not served: it is defined by \d+ files /;
/** The shape of a warning about an advertised name that several tools would take (warnContested replaces them). */
const NAME_CLASH = /^tools? .* not served over MCP: under \[mcp\] toolNames = /;

/** Files opened at once while loading (artifacts verified, cached builds opened; builds run on build/pool.ts). */
const LOAD_CONCURRENCY = 4;

/** A validator made on first use, from the cache of compiled validators (schema/validators.ts: cachedValidator). A schema
 *  that names other schemas (`$id`, or a `$ref` outside itself) is compiled as the server compiles it, in one
 *  Ajv with the rest of its extension's schemas, so `kiln run` accepts exactly what `kiln mcp` accepts. */
function lazyValidator(tool: ToolManifest, tools: ToolManifest[]): Validator | undefined {
  if (!tool.inputSchema) return undefined;
  let compiled: Promise<Validator | undefined> | undefined;
  const make = async () => {
    if (!crossReferences(tool.inputSchema)) return cachedValidator(tool);
    const ajvs = new ExtensionAjv();
    const all = await Promise.all(tools.map((t) => argsValidator(t, ajvs)));
    return all[tools.indexOf(tool)];
  };
  return async (args) => {
    compiled ??= make();
    return (await compiled)?.(args);
  };
}

function crossReferences(schema: unknown): boolean {
  return JSON.stringify(schema).match(/"\$id"|"\$ref":"(?!#)/) !== null;
}


/** How a warning about a tool's secrets ends: a new policy replaces these warnings with its own. */
const SECRET_WARNING_END = '; its calls fail until then';

export class Registry {
  readonly extensions: LoadedExtension[] = [];
  readonly failures: { file: string; error: string }[] = [];
  readonly warnings: string[] = [];
  readonly tools = new Map<string, ToolEntry>();
  /** Tool names more than one loaded file defines, with those files: served by none of them. */
  readonly contested = new Map<string, string[]>();
  /** [mcp] toolNames: how MCP clients see the exposed tools' names (extensions/tool-names.ts). */
  get naming(): ToolNaming {
    return this.names;
  }
  private names: ToolNaming = 'declared';
  private shown?: ReturnType<typeof advertisedNames> & { asShown: Map<string, string> };
  /** The tools an MCP client sees (exposeAsTool), as opposed to all that plugins[...] can call. */
  get exposed(): number {
    let n = 0;
    for (const t of this.tools.values()) if (t.manifest.exposeAsTool) n++;
    return n;
  }
  private builder?: Builder; // loaded with the first source file: serving only artifacts never loads the bundler
  private readonly buildCache: BuildCache;
  /** What guests wrote through allow.fs (build/guest-writes.ts): its journal, compacted when first needed and
   *  re-read as it changes on disk (other servers write it too); a reload shares it. */
  get guestWrites(): GuestWrites {
    return (this.writes ??= new GuestWrites(GUEST_WRITES, undefined, true));
  }
  private writes?: GuestWrites;
  /** buildInputs(), made on first use after the loaded extensions change. */
  private inputOwners?: Map<string, string>;

  /** The operator's settings in force. One object for the server's life, shared with its sessions: a changed
   *  config (mcp/config-watch.ts) is applied into it (`applyPolicy`), so every later decision reads the new one. */
  readonly policy: OperatorPolicy;

  /** `oneShot` (`kiln run`): compile a tool's inputSchema on its first call instead of at load (a script calls
   *  few tools; a server compiles them all at load, so a bad schema fails its file there), and say nothing
   *  about which tools MCP clients would see (a script calls them all through plugins[...]). */
  constructor(readonly engine: Engine, policy: OperatorPolicy = DEFAULT_POLICY, private readonly oneShot = false) {
    this.policy = { ...policy };
    this.buildCache = new BuildCache(engine.info.id);
    const { path, maxBytes, keep } = policy.audit;
    if (path) this.audit = new AuditLog({ path, maxBytes, keep });
    this.secrets = new SecretStore(policy.secrets); // takes the values out of kiln's environment
    this.approvals = new ApprovalGate(policy.approvals, this.audit);
  }

  /** The operator's [secrets.*] with their values: added by the host to the requests of the tools that
   *  declare them, never shown to a guest (capabilities/secrets/secrets.ts). */
  readonly secrets: SecretStore;
  /** [approvals]: CapabilityContext.approve. A reload keeps the same one (its session answers survive). */
  approvals: ApprovalGate;

  /** The audit log, when the operator configured one ([audit] path) or something observes its records
   *  (`observe`). A reload keeps the same one. */
  audit: AuditLog | undefined;

  /** Tell `fn` every audit record as it happens (calls, decisions, approvals), with or without an audit file. */
  observe(fn: (record: Parameters<AuditLog['write']>[0]) => void): void {
    if (!this.audit) { // before the first call (the gate's questions and answers go to the new log too)
      this.audit = new AuditLog({ maxBytes: this.policy.audit.maxBytes, keep: this.policy.audit.keep });
      this.approvals = new ApprovalGate(this.policy.approvals, this.audit);
    }
    this.audit.observers.push(fn);
  }

  /** Load every file found under `paths`. One file's failure — whatever it is — is recorded for that file,
   *  and the rest load: a crafted artifact must never stop the server. */
  async load(paths: string[], exclude: string[] = []): Promise<void> {
    this.sourcePaths = paths.map((p) => resolve(p));
    const files = discover(paths, exclude);
    // Sources whose build is on disk unchanged are used as they are; the others are built all at once, on a
    // pool of worker threads (build/pool.ts) when there are several.
    const cached = new Map<string, { bytes: Uint8Array; inputs: string[] }>();
    const misses: string[] = [];
    for (const f of files) {
      if (extname(f) === '.wasm') continue;
      const hit = this.buildCache.lookup(f);
      if (hit) cached.set(f, hit);
      else misses.push(f);
    }
    const builds = misses.length ? (await import('../build/pool.js')).buildAll(this.engine, misses, this.policy.limits.timeoutMs) : new Map<string, Promise<Built>>();
    // Opened LOAD_CONCURRENCY at a time and added in discovery order, so which file keeps a contested tool
    // name does not depend on timing.
    const opened: Promise<LoadedExtension>[] = new Array(files.length);
    let next = 0;
    const lanes = Array.from({ length: Math.min(LOAD_CONCURRENCY, files.length) }, async () => {
      for (let i = next++; i < files.length; i = next++) {
        opened[i] = this.open(files[i], cached.get(files[i]), builds.get(files[i]));
        await opened[i].catch(() => {});
      }
    });
    await Promise.all(lanes);
    for (const [i, file] of files.entries()) {
      try {
        await this.add(await opened[i]);
      } catch (e) {
        if (e instanceof ManifestError) this.failures.push({ file, error: `${file}: ${e.message}` });
        else if (e instanceof KilnError) this.failures.push({ file, error: e.message });
        else this.failures.push({ file, error: `${file}: could not be loaded: ${(e as Error)?.message ?? String(e)}` });
      }
    }
    this.warnContested();
    this.warnUnmatched();
  }

  /** Why `name` is not served when more than one file defines it, or undefined. */
  contestedMessage(name: string): string | undefined {
    const files = this.contested.get(name);
    return files && `tool "${name}" is not served: it is defined by ${files.length} files (${files.join(', ')}); a tool name must be defined by one loaded file only (rename one, or exclude a file)`;
  }

  /** Report every contested name once (again after a reload added a file's last good version), and every
   *  advertised name several exposed tools would take. */
  private warnContested(): void {
    this.shown = undefined;
    const lines = [...this.contested.keys()].map((name) => this.contestedMessage(name)!);
    for (const [shown, names] of this.advertised().collisions) {
      const real = names.filter((n) => !BUILTIN_TOOLS.includes(n));
      const builtin = names.find((n) => BUILTIN_TOOLS.includes(n));
      lines.push(`tool${real.length > 1 ? 's' : ''} ${real.map((n) => `"${n}"`).join(', ')} ${real.length > 1 ? 'are' : 'is'} not served over MCP: under [mcp] toolNames = "${this.names}" ` +
        `${builtin ? `it would be advertised as "${shown}", the built-in tool's name` : `they would all be advertised as "${shown}"`}; rename one ` +
        `(plugins[...] still calls each by its own name), or set [mcp] toolNames = "declared"`);
    }
    this.warnings.splice(0, this.warnings.length, ...this.warnings.filter((w) => !CONTESTED.test(w) && !NAME_CLASH.test(w)), ...lines);
  }

  /** Advertise the exposed tools' names as `naming` says ([mcp] toolNames). */
  setNaming(naming: ToolNaming): void {
    if (naming === this.names) return;
    this.names = naming;
    this.warnContested();
  }

  /** The exposed tools as MCP clients see them: each advertised name with the tool it stands for (`toTool`),
   *  each tool with the name it is advertised as (`asShown`; none for a tool whose name collides), and the
   *  advertised names several tools would take (extensions/tool-names.ts). Kept until the tools change. */
  advertised(): ReturnType<typeof advertisedNames> & { asShown: Map<string, string> } {
    if (!this.shown) {
      const exposed = [...this.tools.values()].filter((t) => t.manifest.exposeAsTool).map((t) => t.manifest.name);
      const names = advertisedNames([...BUILTIN_TOOLS, ...exposed], this.names);
      for (const b of BUILTIN_TOOLS) names.toTool.delete(b);
      this.shown = { ...names, asShown: new Map([...names.toTool].map(([shown, tool]) => [tool, shown])) };
    }
    return this.shown;
  }

  /**
   * Load `paths` again (kiln mcp --watch): changed sources are rebuilt (unchanged ones come from the build
   * cache), new files join, deleted ones leave. A file that loaded before and fails now keeps its last good
   * version, and the failure is reported. Returns whether the exposed tools changed.
   */
  async reload(paths: string[], exclude: string[] = []): Promise<boolean> {
    const next = new Registry(this.engine, { ...this.policy, audit: { maxBytes: this.policy.audit.maxBytes, keep: this.policy.audit.keep } }, this.oneShot);
    next.audit = this.audit;
    next.approvals = this.approvals;
    next.writes = this.guestWrites;
    next.names = this.names;
    await next.load(paths, exclude);
    let kept = false;
    for (const f of next.failures) {
      const good = this.extensions.find((e) => e.file === f.file);
      if (!good) continue;
      await next.add(good);
      next.warnings.push(`${f.file}: its last good version keeps serving`);
      kept = true;
    }
    if (kept) { // a key that named nothing before the last good versions joined may name one now
      next.warnings.splice(0, next.warnings.length, ...next.warnings.filter((w) => !w.startsWith('kiln.toml [')));
      next.warnUnmatchedKeys();
    }
    next.warnContested();
    const exposed = (r: Registry) => JSON.stringify([...r.tools.values()].filter((t) => t.manifest.exposeAsTool).map((t) => [t.manifest, t.extension.artifact.sha256]));
    const changed = exposed(this) !== exposed(next);
    this.extensions.splice(0, this.extensions.length, ...next.extensions);
    this.failures.splice(0, this.failures.length, ...next.failures);
    this.warnings.splice(0, this.warnings.length, ...next.warnings);
    this.tools.clear();
    for (const [k, v] of next.tools) this.tools.set(k, v);
    this.inputOwners = undefined;
    this.contested.clear();
    for (const [k, v] of next.contested) this.contested.set(k, v);
    this.shown = undefined;
    this.sourcePaths = next.sourcePaths;
    return changed;
  }

  /** The files and trees no tool may read or write through allow.fs (capabilities/fs/policy.ts): the config
   *  and the other config names kiln would read beside it, the config names in the working directory (where a
   *  `kiln mcp` or `kiln bdd` started with no config reads one: a tool that could create ./kiln.toml would
   *  write the next server's policy, whether or not this one has a config), the approvals store (and its
   *  temporary file), the audit log (and its rotation), every extension file and directory this registry
   *  loads, the build cache. */
  protectedFiles(): string[] {
    const config = this.policy.grants.file;
    const store = this.policy.approvals.store;
    return [
      ...(config ? [...CONFIG_NAMES, basename(config)].map((n) => join(dirname(config), n)) : []),
      ...CONFIG_NAMES.map((n) => join(process.cwd(), n)),
      ...(store ? [store, `${store}.${process.pid}.tmp`] : []),
      ...auditFiles(this.policy.audit),
      ...this.sourcePaths, ...this.extensions.map((e) => e.file),
      BUILD_CACHE, cacheDir(), // built artifacts, and code the host runs (validators, bin/code-cache.js's bytecode)
    ];
  }

  /** Every file a loaded extension's build read (real paths), with the extension file that read it: what no
   *  tool may write (capabilities/fs/policy.ts). */
  buildInputs(): ReadonlyMap<string, string> {
    if (!this.inputOwners) {
      this.inputOwners = new Map();
      for (const e of this.extensions) for (const input of e.inputs ?? []) if (!this.inputOwners.has(input)) this.inputOwners.set(input, e.file);
    }
    return this.inputOwners;
  }

  /** The paths `load` was given (files and directories). */
  private sourcePaths: string[] = [];

  /** Put `next` in force for every later decision (grants, commands, env, net and limits of new guests). The
   *  audit log keeps the file it was opened on. */
  applyPolicy(next: OperatorPolicy): void {
    // A changed [approvals] takes a new gate (its rules, store and session answers); an unchanged one keeps them.
    if (JSON.stringify(next.approvals) !== JSON.stringify(this.policy.approvals)) this.approvals = new ApprovalGate(next.approvals, this.audit);
    Object.assign(this.policy, { ...next, audit: this.policy.audit });
    this.warnings.splice(0, this.warnings.length, ...this.warnings.filter((w) => !w.startsWith('kiln.toml [') && !w.endsWith(SECRET_WARNING_END)));
    this.warnUnmatched(); // says again what the new policy leaves unmatched or ungranted
  }

  /** An operator key that names no loaded file decides nothing: say so (a typo must not pass silently); and a
   *  declared secret that cannot be used. */
  private warnUnmatched(): void {
    this.warnUnmatchedKeys();
    // A declared secret the operator did not grant, or did not configure (or whose variable is unset): its
    // tool's calls will fail.
    for (const e of this.extensions) {
      for (const t of e.artifact.manifest.tools) {
        let why = this.secrets.problem(t);
        try {
          grantedSecrets(this.policy.grants, { file: e.file, sha256: e.artifact.sha256 }, t);
        } catch (err) {
          if (!(err instanceof NotGrantedError)) throw err;
          why = err.message;
        }
        if (why) this.warnings.push(`${e.file}: ${why}${SECRET_WARNING_END}`);
      }
    }
  }

  private warnUnmatchedKeys(): void {
    const loaded = new Set(this.extensions.flatMap((e) => extensionKeys({ file: e.file, sha256: e.artifact.sha256 })));
    const tables: [string, Record<string, unknown>][] = [['[grants]', this.policy.grants.extensions], ['[limits.memory]', this.policy.limits.memory]];
    for (const [section, table] of tables) {
      for (const key of Object.keys(table)) {
        if (!loaded.has(key)) this.warnings.push(`kiln.toml ${section} "${section === '[grants]' ? this.policy.grants.spelled[key] ?? key : key}" names no loaded extension, so it applies to nothing (a key is the extension file's path, relative to kiln.toml, or sha256:<artifact hash>)`);
      }
    }
  }

  /** One file as a loaded extension: an artifact as it is; a source from its cached build (verified like any
   *  artifact), or from `building` (the pool's build of it), or built here — unless its build reads a file a
   *  guest wrote (reviewed). */
  private async open(file: string, cached?: { bytes: Uint8Array; inputs: string[] }, building?: Promise<Built>): Promise<LoadedExtension> {
    const bytes = readFileSync(file);
    if (extname(file) === '.wasm') return { file, kind: 'artifact', artifact: await openArtifact(file, bytes, this.engine) };
    if (cached) {
      const inputs = this.reviewed(file, cached.inputs);
      try {
        return { file, kind: 'source', inputs, artifact: await openArtifact(file, cached.bytes, this.engine) };
      } catch {
        // an entry that does not verify is rebuilt
      }
    }
    let built = await building;
    if (!built) {
      this.builder ??= new (await import('../build/artifact.js')).Builder(this.engine, this.policy.limits.timeoutMs);
      built = await this.builder.build(file);
    }
    const inputs = this.reviewed(file, built.inputs);
    this.buildCache.store(file, built.bytes, built.inputs);
    return { file, kind: 'source', inputs, artifact: await openArtifact(file, built.bytes, this.engine) };
  }

  /** `inputs` as real paths, when none of them is a file a guest wrote through allow.fs; otherwise the build is
   *  refused (an ExtensionLoadError naming the file and who wrote it, and an audit line). */
  private reviewed(file: string, inputs: string[]): string[] {
    const verdict = this.guestWrites.judge(file, inputs);
    if ('paths' in verdict) return verdict.paths;
    const { input, by } = verdict;
    const reason = `not rebuilt: ${verdict.reason}`;
    this.audit?.write({ type: 'build', extension: file, verdict: 'deny', input, writtenBy: by.extension, tool: by.tool, reason: reason.slice(0, 500) });
    throw new ExtensionLoadError(file, reason);
  }

  private async add(ext: LoadedExtension): Promise<void> {
    const { tools, steps } = ext.artifact.manifest;
    // A file that registers nothing (a helper module found in a directory) is reported, not served.
    if (tools.length === 0 && !steps) {
      this.warnings.push(`${ext.file}: not served: it registers no tools (or steps); a helper module belongs in an extension's imports`);
      return;
    }
    if (!this.oneShot && tools.length > 0 && !tools.some((t) => t.exposeAsTool)) {
      this.warnings.push(`${ext.file}: defines ${tools.length} tool(s) but exposes none over MCP (set exposeAsTool: true on those clients should see); they stay callable through plugins[...]`);
    }
    const patterns = programBudget(); // the extension's RE2 program size, inputs and outputs together
    const validators = this.oneShot ? ext.artifact.manifest.tools.map((t) => lazyValidator(t, ext.artifact.manifest.tools)) : await (async () => {
      const ajvs = new ExtensionAjv((warning) => this.warnings.push(`${ext.file}: ${warning}`), patterns); // one per extension: its $ids are its own
      return Promise.all(ext.artifact.manifest.tools.map((t) => argsValidator(t, ajvs)));
    })();
    // An outputSchema with patterns is compiled now, so a pattern RE2 cannot run fails the file at load as in an
    // inputSchema; any other is compiled at its first result.
    const results = this.oneShot ? [] : await Promise.all(ext.artifact.manifest.tools.map((t) => (usesPatterns(t.outputSchema) ? resultValidator(t, patterns) : undefined)));
    this.extensions.push(ext);
    this.inputOwners = undefined;
    for (const [i, manifest] of ext.artifact.manifest.tools.entries()) {
      if (BUILTIN_TOOLS.includes(manifest.name)) {
        this.warnings.push(`${ext.file}: tool "${manifest.name}" is not loaded: the name is taken by a built-in tool`);
        continue;
      }
      const other = this.tools.get(manifest.name)?.extension.file;
      const contested = this.contested.get(manifest.name) ?? (other !== undefined ? [other] : undefined);
      if (contested) {
        this.tools.delete(manifest.name);
        this.contested.set(manifest.name, [...contested, ext.file]);
        continue;
      }
      let checker: Promise<Validator | undefined> | undefined = results[i] && Promise.resolve(results[i]);
      const checkResult = manifest.outputSchema ? () => (checker ??= resultValidator(manifest, patterns)) : undefined;
      this.tools.set(manifest.name, { manifest, extension: ext, validate: validators[i], checkResult });
    }
    this.shown = undefined;
  }
}
