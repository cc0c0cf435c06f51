// The `kiln` command line: build, inspect, mcp.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { readManifest } from './extensions/artifact.js';
import { Engine, onFirstV8Compile, sha256 } from './engine/engine.js';
import { requestedBackend } from './engine/backends.js';
import { KilnError, UsageError } from './errors.js';
import { repoRoot } from './paths.js';
import { discover } from './extensions/discovery.js';
import { GUEST_WRITES, GuestWrites } from './build/guest-writes.js';
import { BUILTIN_TOOLS, Registry } from './extensions/registry.js';
import type { KilnConfig } from './config/config.js';
import type { WatchOptions } from './mcp/server.js';
import { defaultConfig } from './config/config-file.js';
import { guestLog, printableLine, stderrAsJson, writeStderr, writeStderrAt } from './untrusted/terminal.js';

/** V8's default is 1,800,000; a billion is never spent by a one-shot command. */
export const ONE_SHOT_TIERING_BUDGET = 1_000_000_000;

const VERSION = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version as string;

const USAGE = `kiln ${VERSION}: a WebAssembly-isolated plugin host

usage:
  kiln build <file> [-o out.wasm]      compile an extension into a sealed artifact; prints its sha256
  kiln build <file>... [--out-dir DIR]  several at once (each DIR/<name>.wasm)
  kiln build <dir> -o <outdir>          every extension under <dir> (as kiln mcp finds them), same paths
  kiln inspect <artifact.wasm> [--json] [--config FILE]
                                        show an artifact's tools, schemas and declared capabilities
                                        (with --config: what the operator grants it, and the effective)
  kiln run <script> [path...] [--config FILE] [--timeout-ms N]
                                        run a script with the tools of the extensions named (or in
                                        ./kiln.toml); prints the value of its last expression as JSON
  kiln mcp [path...] [--config FILE] [--http HOST:PORT] [--watch] [--log-format json|text]
                                        serve tools over MCP (stdio, or Streamable HTTP at /mcp with a bearer
                                        token: KILN_TOKEN, [http] token, [principals.*] or [http.oauth]);
                                        paths are files or directories; --watch reloads changed, new and
                                        deleted files without a restart (scanned recursively); with none,
                                        ./kiln.toml is read; the config also sets the operator's [commands]
                                        ceiling; --log-format: JSON lines (the default over HTTP) or text
  kiln bdd [paths...] [--tags EXPR] [--name REGEX] [--parallel N] [--format NAME[:FILE]]
                                        run Gherkin features (default features/) against step definitions
           [--world-parameters JSON] [--dry-run] [--fail-fast] [--retry N] [--retry-tag-filter EXPR]
           [--no-strict] [--config FILE]
                                        (steps/, step_definitions/, features/ or [test] steps, and the
                                        config's extensions) in the sandbox; formats: pretty, progress,
                                        summary, json, junit, message, html (docs/bdd.md)
  kiln --version                        print the version

  kiln <command> --help                 one command's usage

exit codes: 0 success; 1 a file failed to build or load, or the script failed; 2 a usage error
(unknown command or option); 70 an internal error (a bug in kiln: please report it)
`;

/** `kiln <command> --help`: one usage block per command (the lines of USAGE that name it). */
function commandHelp(cmd: string): string | undefined {
  const out: string[] = [];
  let inside = false;
  for (const line of USAGE.split('\n')) {
    inside = line.startsWith(`  kiln ${cmd} `) || (inside && /^ {10,}\S/.test(line));
    if (inside) out.push(line);
  }
  return out.length ? `usage:\n${out.join('\n')}\n` : undefined;
}

/** A message on stderr; untrusted parts (file names, tool names, messages from a build) cannot deceive the
 *  reader, nor print a line of their own (untrusted/terminal.ts `stderrText`). */
const err = writeStderr;

async function build(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { out: { type: 'string', short: 'o' }, 'out-dir': { type: 'string' } } });
  if (positionals.length === 0) throw new KilnError('kiln build: name at least one extension file or directory');
  if (values.out && positionals.length > 1) throw new KilnError('kiln build: -o takes one input (a file, or a directory to build into -o); use --out-dir for several');
  // [source, artifact path, found by scanning a directory]: a directory's extensions keep their relative paths.
  const jobs: [string, string, boolean][] = [];
  for (const p of positionals) {
    if (isDirectory(p)) {
      const outDir = values.out ?? values['out-dir'] ?? '.';
      for (const f of discover([p])) if (extname(f) !== '.wasm') jobs.push([f, join(outDir, relative(resolve(p), f).replace(/\.[^./]+$/, '.wasm')), true]);
    } else {
      jobs.push([p, values.out ?? join(values['out-dir'] ?? '.', basename(p, extname(p)) + '.wasm'), false]);
    }
  }
  const { Builder } = await import('./build/artifact.js');
  const builder = new Builder(await Engine.load());
  // The record of files guests wrote through allow.fs, in the build cache this build uses: an artifact is
  // never made from one (the same verdict as kiln mcp's loads).
  const writes = new GuestWrites(GUEST_WRITES);
  let failed = 0;
  for (const [file, out, scanned] of jobs) {
    try {
      const { bytes, manifest, inputs, notes } = await builder.build(file);
      for (const n of notes) err(`note: ${file}: ${n}`);
      const verdict = writes.judge(file, inputs);
      if (!('paths' in verdict)) throw new KilnError(`${file}: not built: ${verdict.reason}`);
      if (scanned && manifest.tools.length === 0 && !manifest.steps) {
        err(`kiln: ${file}: not built: it registers no tools (a helper module, imported by the extensions that use it)`);
        continue;
      }
      mkdirSync(dirname(resolve(out)), { recursive: true });
      writeFileSync(out, bytes);
      process.stdout.write(`${sha256(bytes)}  ${out}\n`);
    } catch (e) {
      if (!(e instanceof KilnError)) throw e;
      failed++;
      err(`error: ${e.message}`);
    }
  }
  for (const w of builder.warnings) err(`warning: ${w}`);
  return failed ? 1 : 0;
}

const isDirectory = (p: string): boolean => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false; // missing: the build of that input reports it
  }
};

async function inspect(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, config: { type: 'string' } } });
  if (positionals.length !== 1) throw new KilnError('kiln inspect: name one artifact');
  const file = positionals[0];
  const bytes = readFileSync(file);
  const manifest = readManifest(file, bytes);
  // --config: what the operator's grants make of each tool's declaration (policy/grants.ts), for this very file.
  const config = values.config ? (await import('./config/config.js')).readConfig(resolve(values.config)) : undefined;
  const policy = config?.policy;
  // The names MCP clients would see for this artifact's exposed tools, under either [mcp] toolNames.
  const { advertisedNames, portableName } = await import('./extensions/tool-names.js');
  const exposedNames = manifest.tools.filter((t) => t.exposeAsTool).map((t) => t.name);
  const portable = advertisedNames([...BUILTIN_TOOLS, ...exposedNames], 'portable');
  const naming = config?.mcp.toolNames ?? 'declared';
  const shownAs = advertisedNames([...BUILTIN_TOOLS, ...exposedNames], naming);
  const advertised = (t: (typeof manifest.tools)[number]) => (t.exposeAsTool && !BUILTIN_TOOLS.includes(t.name) && [...shownAs.toTool].find(([, n]) => n === t.name)?.[0]) || null;
  const { authority } = await import('./policy/authority.js');
  const identity = { file: resolve(file), sha256: sha256(bytes) };
  const authorityOf = (t: (typeof manifest.tools)[number]) => (policy ? authority(t.allow, identity, policy) : undefined);
  const engine = await Engine.load().catch(() => undefined);
  const engineNote = !engine ? 'no local engine to compare' : engine.info.id === manifest.engine ? 'matches this host' : 'NOT this host\'s engine: rebuild it';
  if (values.json) {
    const tools = manifest.tools.map((t) => ({ ...t, ...(policy ? { authority: authorityOf(t), mode: policy.grants.mode, advertisedAs: advertised(t) } : {}) }));
    process.stdout.write(JSON.stringify({ file, sha256: sha256(bytes), ...manifest, tools }, null, 2) + '\n');
    return 0;
  }
  // Everything below comes from the artifact: each field is printed on its own line, escaped (untrusted/terminal.ts).
  const lines = [
    `artifact  ${file}`,
    `sha256    ${sha256(bytes)}`,
    `engine    ${manifest.engine} (${engineNote})`,
    `source    ${manifest.source.name} (sha256 ${manifest.source.sha256})`,
    `tools     ${manifest.tools.length}`,
  ];
  for (const t of manifest.tools) {
    lines.push('', `  ${t.name}${t.exposeAsTool ? '  [MCP tool]' : '  [plugins only]'}`);
    const clash = t.exposeAsTool ? portable.collisions.get(portableName(t.name)) : undefined;
    if (clash) {
      lines.push(`    portable     ${portableName(t.name)}: not served under [mcp] toolNames = "portable", where ${clash.map((n) => `"${n}"`).join(' and ')} would all be advertised as "${portableName(t.name)}"`);
    } else if (t.exposeAsTool && portableName(t.name) !== t.name) {
      lines.push(`    portable     ${portableName(t.name)} (its name under [mcp] toolNames = "portable"${naming === 'portable' ? `, which ${values.config} sets` : ''})`);
    }
    if (t.title) lines.push(`    title        ${t.title}`);
    if (t.description) lines.push(`    description  ${t.description}`);
    if (t.timeoutMs) lines.push(`    timeoutMs    ${t.timeoutMs}`);
    if (t.cpuMs) lines.push(`    cpuMs        ${t.cpuMs}`);
    if (t.memoryLimitBytes) lines.push(`    memoryLimitBytes ${t.memoryLimitBytes}`);
    lines.push(`    inputSchema  ${t.inputSchema ? JSON.stringify(t.inputSchema) : '(none)'}`);
    if (t.outputSchema) lines.push(`    outputSchema ${JSON.stringify(t.outputSchema)}`);
    if (t.annotations) lines.push(`    annotations  ${JSON.stringify(t.annotations)} (as claimed; the server may only make them more cautious)`);
    const cmds = Object.entries(t.allow.commands);
    lines.push(`    commands     ${cmds.length ? '' : '(none)'}`);
    for (const [name, spec] of cmds) lines.push(`      ${name}: ${JSON.stringify(spec.run)}${spec.persistent ? ' (persistent)' : ''}`);
    lines.push(`    net          ${t.allow.net.length ? t.allow.net.join(', ') : '(none)'}`);
    lines.push(`    browser      ${t.allow.browser.length ? t.allow.browser.join(', ') : '(none)'}`);
    const fs = t.allow.fs;
    lines.push(`    fs           ${fs ? `read: ${fs.read.join(', ') || '(none)'}; write: ${fs.write.join(', ') || '(none)'}` : '(none)'}`);
    if (t.allow.secrets?.length) lines.push(`    secrets      ${t.allow.secrets.join(', ')} (the operator's [secrets.*]; the guest never sees them)`);
    const a = authorityOf(t);
    if (a) {
      const show = (v: string[] | null) => (v === null ? '(not narrowed)' : v.length ? v.join(', ') : '(none)');
      lines.push(`    under ${values.config} (mode "${policy!.grants.mode}"): kind: declared → granted → effective`);
      for (const k of Object.keys(a.declared) as (keyof typeof a.declared)[]) {
        if (a.declared[k].length === 0 && !a.granted[k]?.length) continue;
        lines.push(`      ${k.padEnd(9)} ${show(a.declared[k])} → ${show(a.granted[k])} → ${show(a.effective[k])}`);
      }
    }
  }
  process.stdout.write(lines.map(printableLine).join('\n') + '\n');
  return 0;
}

/** What `kiln mcp` says when it was given no extension and found no config file in `cwd`. */
export const NOTHING_TO_SERVE = (cwd: string) =>
  `no extensions to serve: name extension files or directories after \`kiln mcp\` (for example \`npx -y kiln-mcp mcp /abs/path/extensions\`), ` +
  `or a config with --config /abs/path/kiln.toml (extensions = ["./extensions"]), or write ./kiln.toml in ${cwd} (the directory kiln was started in: ` +
  `an MCP client chooses it, so prefer absolute paths); see the README's "Installing it"`;

/** Extensions from the named paths and/or a config file (./kiln.toml, .yaml, .yml or .json when none is named
 *  and one exists). */
async function loadRegistry(paths: string[], configFile: string | undefined, required: boolean, oneShot = false, onConfig?: (c: KilnConfig, file: string) => void): Promise<Registry> {
  let config;
  const file = configFile ? resolve(configFile) : paths.length === 0 ? defaultConfig(process.cwd()) : undefined;
  if (file) {
    const { readConfig } = await import('./config/config.js'); // the TOML/YAML parsers load only when there is a config
    config = readConfig(file);
    onConfig?.(config, file);
    paths = [...paths, ...config.extensions];
  }
  const registry = new Registry(await Engine.load(undefined, undefined, requestedBackend(config?.engine.backend)), config?.policy, oneShot);
  if (config) registry.setNaming(config.mcp.toolNames); // before loading: its name clashes are reported with the rest
  await registry.load(paths, config?.exclude);
  // A server started with nothing to serve still answers, so that its client (not only its stderr, which a
  // client rarely shows) is told what to do.
  if (required && paths.length === 0) registry.warnings.push(NOTHING_TO_SERVE(process.cwd()));
  for (const f of registry.failures) writeStderrAt('error', `kiln: not loaded: ${f.error}`);
  for (const w of registry.warnings) writeStderrAt('warn', `kiln: ${w}`);
  return registry;
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string' }, 'timeout-ms': { type: 'string' } } });
  const [script, ...paths] = positionals;
  if (!script) throw new KilnError('kiln run: name a script file');
  let code: string;
  try {
    code = readFileSync(script, 'utf8');
  } catch (e: any) {
    throw new KilnError(`kiln run: cannot read ${script}: ${e?.code === 'ENOENT' ? 'no such file' : e?.code === 'EISDIR' ? 'it is a directory' : String(e?.message ?? e)}`);
  }
  const timeoutMs = values['timeout-ms'] === undefined ? undefined : Number(values['timeout-ms']);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) throw new KilnError('kiln run: --timeout-ms must be a positive integer');
  // The modules that run the script load while the engine loads (wasmtime's precompiled engine is read and
  // checked off this thread).
  const modules = Promise.all([import('./sessions/sessions.js'), import('./sessions/scripts.js')]);
  modules.catch(() => {}); // a failed load of the registry is the error reported; this one is then awaited by no one
  const registry = await loadRegistry(paths, values.config, false, true);
  const [{ Sessions }, { ScriptRunner, SCRIPT_CACHE }] = await modules;
  // One script, no server to protect: guests run on this thread (deadlines still interrupt them), so no
  // worker thread is started.
  const policy = { ...registry.policy, sessions: { ...registry.policy.sessions, isolation: 'inline' as const } };
  const sessions = new Sessions(registry.engine, 'script', (_s, ext, level, message) => guestLog([ext.artifact.manifest.source.name], level, message).forEach(err), policy, policy.sessions);
  try {
    const r = await sessions.run('default', 'script', (s) => new ScriptRunner(registry, SCRIPT_CACHE).run(s, code, { timeoutMs, name: basename(script) }));
    if (r.status === 'ok') {
      process.stdout.write(JSON.stringify(r.result ?? null) + '\n');
      return 0;
    }
    err(`error: ${r.error!.name}: ${r.error!.message}${r.error!.stack ? `\n${r.error!.stack}` : ''}`);
    return 1;
  } finally {
    sessions.closeAll();
  }
}

async function mcp(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string' }, http: { type: 'string' }, watch: { type: 'boolean' }, 'log-format': { type: 'string' } } });
  if (values.http !== undefined) (await import('./mcp/http.js')).parseListen(values.http); // a usage error, before anything loads
  const logFormat = values['log-format'] ?? (values.http !== undefined ? 'json' : 'text');
  if (logFormat !== 'json' && logFormat !== 'text') throw new UsageError(`--log-format takes json or text, not ${JSON.stringify(logFormat).slice(0, 40)}`);
  if (values.http === undefined && values['log-format'] !== undefined) throw new UsageError('--log-format applies to kiln mcp --http (stdio writes text for people)');
  let config: KilnConfig | undefined;
  let configPath: string | undefined;
  let http: typeof import('./mcp/http.js') | undefined;
  if (values.http !== undefined) {
    http = await import('./mcp/http.js');
    if (logFormat === 'json') stderrAsJson(process.env.KILN_REPLICA ? { replica: process.env.KILN_REPLICA } : {});
    http.checkHttpStart(values.http); // the environment's settings, before anything loads
  }
  const registry = await loadRegistry(positionals, values.config, true, false, (c, f) => {
    config = c;
    configPath = f;
    if (http) {
      const replica = process.env.KILN_REPLICA || c.http.replica;
      if (logFormat === 'json') stderrAsJson(replica ? { replica } : {});
      http.checkHttpStart(values.http!, { http: c.http, principals: c.principals, mcp: c.mcp }); // and the file's
    }
  });
  const watch: WatchOptions = {
    ...(values.watch ? { files: { paths: [...positionals, ...(config?.extensions ?? [])], exclude: config?.exclude ?? [] } } : {}),
    ...(config && configPath ? { config: { file: configPath, positionals, current: config } } : {}),
  };
  err(`kiln: serving ${registry.exposed} tool(s) from ${registry.extensions.length} extension(s) over ${values.http ? 'HTTP' : 'stdio'}` +
    (registry.tools.size > registry.exposed ? ` (and ${registry.tools.size - registry.exposed} callable only through plugins[...])` : '') +
    `; guests run on ${registry.engine.backend === 'wasmtime' ? `wasmtime ${registry.engine.wasmtime?.wasmtimeVersion}` : 'V8'}` +
    (registry.engine.choice.fallback ? ` (${registry.engine.choice.fallback})` : ''));
  // A server that may run commands says at start when it cannot isolate them (processes.ts).
  if (registry.policy.commands.enabled && registry.extensions.some((e) => e.artifact.manifest.tools.some((t) => Object.keys(t.allow.commands).length > 0))) {
    (await import('./capabilities/commands/processes.js')).checkCommandSupport();
  }
  if (http) {
    await http.serveHttp(registry, VERSION, values.http!, { http: config?.http, principals: config?.principals, mcp: config?.mcp, logFormat, watch: watch.files || watch.config ? watch : undefined });
  } else {
    const { serveStdio } = await import('./mcp/stdio.js'); // the MCP SDK loads only for `kiln mcp`
    await serveStdio(registry, VERSION, config?.mcp, watch.files || watch.config ? watch : undefined);
  }
  return -1; // keep running
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd && (rest.includes('--help') || rest.includes('-h'))) {
    const help = commandHelp(cmd);
    if (help) {
      process.stdout.write(help);
      return 0;
    }
  }
  // A one-shot command ends soon: V8 would compile the engine's hottest functions (the interpreter loop, the
  // parser) with TurboFan in the background, mostly for nothing, and Node waits for those compiles before it
  // exits (measured: 110-150 ms after one script call). One-shot commands run on Liftoff code only (an
  // effectively unreachable tiering budget): CPU-bound guest code is then 10-30 % slower, which a process
  // that lives for a fraction of a second never makes up. The server keeps V8's default. Set only when V8
  // compiles the engine (on wasmtime V8 compiles no wasm), because a changed V8 flag costs every Node builtin
  // module loaded after it its code cache (engine.ts `onFirstV8Compile`).
  if (cmd === 'run' || cmd === 'build' || cmd === 'inspect') {
    onFirstV8Compile(() => {
      // bin/code-cache.js makes the caches of the code compiled so far under the flags it was compiled with
      (globalThis as Record<symbol, (() => void) | undefined>)[Symbol.for('kiln.beforeV8Flags')]?.();
      setFlagsFromString(`--wasm-tiering-budget=${ONE_SHOT_TIERING_BUDGET}`);
    });
  }
  switch (cmd) {
    case 'build': return build(rest);
    case 'inspect': return inspect(rest);
    case 'mcp': return mcp(rest);
    case 'bdd': return (await import('./bdd/cli.js')).bdd(rest, err);
    case 'run': return run(rest);
    case undefined: case 'help': case '--help': case '-h':
      process.stdout.write(USAGE);
      return 0;
    case '--version':
      process.stdout.write(VERSION + '\n');
      return 0;
    default:
      err(`kiln: unknown command "${cmd}"`);
      process.stderr.write(`\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => { if (code >= 0) process.exitCode = code; },
  (e) => {
    const usage = e instanceof UsageError || (typeof e?.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS_'));
    writeStderrAt('error', e instanceof KilnError || usage ? `kiln: ${e.message}` : `kiln: internal error: ${e?.stack ?? e}`);
    process.exitCode = usage ? 2 : e instanceof KilnError ? 1 : 70;
    // A server that could not start ends now (its loaded extensions' threads would keep the process up).
    if (process.argv[2] === 'mcp') setImmediate(() => process.exit());
  },
);
