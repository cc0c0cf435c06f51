// Scripts (MCP `run_script`, `kiln run`): code compiled through the same pipeline as extensions —
// TypeScript stripped by sucrase (which keeps line numbers, so stack lines are the script's own), QuickJS
// bytecode compiled inside the sandbox, cached by content hash — and run in the session's script guest.
//
// A script has no capabilities of its own (no commands, no network): it reaches the world only by calling
// tools through `plugins[name]`, and each of those runs with its own manifest. It shares the session's
// `vars` (scripts of a session share one store of their own; a script cannot read a tool's vars, it calls the
// tool), and `kiln.host` is "script".
import { SCRIPT_HOST_FILE } from '../capabilities/tools/tools.js';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BUILD_CACHE, builder } from '../build/cache.js';
import type { Builder } from '../build/artifact.js';
import { KilnError, ToolError } from '../errors.js';
import type { ToolManifest } from '../extensions/manifest.js';
import type { Registry } from '../extensions/registry.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import type { Session } from './session.js';
import { runInSession } from './call.js';
import type { CallerLimits } from '../policy/limits.js';
import type { AskVia } from '../policy/approvals/gate.js';

/** Where `kiln run` keeps compiled scripts: inside the build cache, which no tool's `allow.fs` may touch. */
export const SCRIPT_CACHE = join(BUILD_CACHE, 'scripts');

export const SCRIPT_TOOL: ToolManifest = { name: 'run_script', exposeAsTool: false, allow: { commands: {}, net: [], browser: [] } };

/** Compiled scripts `kiln run` keeps (each a few KB). */
export const MAX_CACHED_SCRIPTS = 256;

/** Log lines a script's result keeps (the result is also bounded by [limits] maxResultBytes). */
export const MAX_SCRIPT_LOGS = 1000;

export interface ScriptResult {
  status: 'ok' | 'error';
  result: unknown;
  logs: { level: string; message: string }[];
  error: null | { name: string; message: string; stack: string };
}

export class ScriptRunner {
  private readonly cache = new Map<string, Uint8Array>(); // sha256(code) -> bytecode
  private host?: Promise<LoadedExtension>;
  private builder?: Builder;

  /** `bytecodeCache`: a directory where compiled scripts are kept between processes (`kiln run`: the
   *  operator's own script files; never for MCP clients' scripts, whose number a client chooses). */
  constructor(private readonly registry: Registry, private readonly bytecodeCache?: string) {}

  private async compiler(): Promise<Builder> {
    this.builder ??= new (await import('../build/artifact.js')).Builder(this.registry.engine);
    return this.builder;
  }

  /** The guest scripts run in: the engine and prelude with an empty module, and no tools. */
  private scriptHost(): Promise<LoadedExtension> {
    this.host ??= (async () => {
      const engine = this.registry.engine;
      return {
        file: SCRIPT_HOST_FILE,
        kind: 'source',
        hostKind: 'script',
        artifact: {
          file: SCRIPT_HOST_FILE,
          sha256: '',
          manifest: { format: 1, engine: engine.info.id, source: { name: 'script', sha256: '' }, tools: [SCRIPT_TOOL], steps: 0 },
          image: new Uint8Array(),
          mapper: async () => undefined,
        },
      } satisfies LoadedExtension;
    })();
    return this.host;
  }

  async compile(code: string, name: string): Promise<Uint8Array> {
    const key = createHash('sha256').update(name).update('\0').update(code).digest('hex');
    const typescript = !/\.[cm]?js$/.test(name);
    let bc = this.cache.get(key) ?? this.cached(key, typescript);
    if (!bc) {
      let js = code;
      // A .js/.mjs/.cjs file is JavaScript already; anything else (run_script's code, a .ts file) may be
      // TypeScript. sucrase loads only then.
      if (typescript) {
        const { transform } = await import('sucrase');
        try {
          js = transform(code, { transforms: ['typescript'], disableESTransforms: true, keepUnusedImports: true }).code;
        } catch (e: any) {
          throw new ToolError(`SyntaxError: ${e.message}`, `SyntaxError: ${e.message}`);
        }
      }
      bc = await (await this.compiler()).compileSource(js, name, false);
      this.keep(key, typescript, bc);
    }
    this.cache.set(key, bc);
    return bc;
  }

  /** The file a script's bytecode is kept in: named by the engine (bytecode is the engine's own format), kiln's
   *  builder (the compile pipeline), sucrase's version for TypeScript, the script's name (its stack frames say
   *  it) and its text. */
  private cacheFile(key: string, typescript: boolean): string | undefined {
    if (!this.bytecodeCache) return undefined;
    const transform = typescript ? `sucrase ${(createRequire(import.meta.url)('sucrase/package.json') as { version: string }).version}` : 'js';
    return join(this.bytecodeCache, `${createHash('sha256').update(`${this.registry.engine.info.id}\0${builder()}\0${transform}\0${key}`).digest('hex')}.qjsbc`);
  }

  /** A kept compile: the bytecode after its own sha256, which must match (a damaged file is compiled again). */
  private cached(key: string, typescript: boolean): Uint8Array | undefined {
    const file = this.cacheFile(key, typescript);
    let bytes: Buffer;
    try {
      if (!file) return undefined;
      bytes = readFileSync(file);
    } catch {
      return undefined; // not compiled before (or unreadable): compile it
    }
    const bc = bytes.subarray(32);
    return bytes.length > 32 && createHash('sha256').update(bc).digest().equals(bytes.subarray(0, 32)) ? new Uint8Array(bc) : undefined;
  }

  /** Best effort: a read-only installation compiles the script in every process. The directory keeps at most
   *  MAX_CACHED_SCRIPTS entries: past that, the least recently written go. */
  private keep(key: string, typescript: boolean, bc: Uint8Array): void {
    const file = this.cacheFile(key, typescript);
    if (!file) return;
    try {
      mkdirSync(this.bytecodeCache!, { recursive: true });
      const kept = readdirSync(this.bytecodeCache!).filter((f) => f.endsWith('.qjsbc'));
      if (kept.length >= MAX_CACHED_SCRIPTS) {
        const byAge = kept.map((f) => ({ f, t: statSync(join(this.bytecodeCache!, f), { throwIfNoEntry: false })?.mtimeMs ?? 0 })).sort((a, b) => a.t - b.t);
        for (const { f } of byAge.slice(0, kept.length - MAX_CACHED_SCRIPTS + 1)) rmSync(join(this.bytecodeCache!, f), { force: true });
      }
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, Buffer.concat([createHash('sha256').update(bc).digest(), bc]));
      renameSync(tmp, file);
    } catch {
      // nothing kept
    }
  }

  /** Run `code` in `session`. Never throws for the script's own failures: they are the result's `error`. */
  async run(session: Session, code: string, opts: { timeoutMs?: number; name?: string; signal?: AbortSignal; via?: AskVia; caller?: CallerLimits } = {}): Promise<ScriptResult> {
    const logs: ScriptResult['logs'] = [];
    let dropped = 0;
    const stop = session.captureLogs((level, message) => {
      if (logs.length < MAX_SCRIPT_LOGS) logs.push({ level, message });
      else if (dropped++ === 0) logs.push({ level: 'warn', message: `[kiln] the script logged more than ${MAX_SCRIPT_LOGS} lines; the rest are not kept` });
    });
    try {
      const bytecode = await this.compile(code, opts.name ?? 'script');
      const host = await this.scriptHost();
      const result = await runInSession(this.registry, session, host, 'run_script', opts.timeoutMs, (instance, limit, hook, cpuMs) =>
        instance.runScript(SCRIPT_TOOL.name, bytecode, limit, hook, cpuMs), opts.signal, opts.via, opts.caller);
      return { status: 'ok', result, logs, error: null };
    } catch (e) {
      if (!(e instanceof KilnError)) throw e;
      const detail = e instanceof ToolError ? e.detail : `${e.name}: ${e.message}`;
      const m = /^([A-Za-z]*Error): ([^\n]*)/.exec(detail);
      let message = m?.[2] ?? e.message;
      // A script is a script, not a function body: its value is its last expression.
      if (/^return not in a function/.test(message)) message += ' (a script returns the value of its last expression: end it with that expression, without `return`)';
      return {
        status: 'error',
        result: null,
        logs,
        error: { name: m?.[1] ?? e.name, message, stack: detail.split('\n').slice(1).join('\n') },
      };
    } finally {
      stop();
    }
  }
}
