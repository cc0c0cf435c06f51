// `kiln bdd [paths…]`: the command line of the BDD runner (cucumber-js conventions; docs/bdd.md).
import { createWriteStream, existsSync, readdirSync, type WriteStream } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import type { Envelope } from '@cucumber/messages';
import parseTagExpression from '@cucumber/tag-expressions';
import { KilnError } from '../errors.js';
import { defaultConfig } from '../config/config-file.js';
import { discover, globRegExp } from '../extensions/discovery.js';
import { Engine } from '../engine/engine.js';
import { requestedBackend } from '../engine/backends.js';
import { Registry } from '../extensions/registry.js';
import { Sessions } from '../sessions/sessions.js';
import { DEFAULT_POLICY, type OperatorPolicy } from '../policy/policy.js';
import type { KilnConfig } from '../config/config.js';
import { createFormatter, FORMAT_NAMES, type FormatName } from './formats.js';
import type { Formatter } from './formats/formatter.js';
import { findFeatures, lineFilter, parseFeatures } from './features.js';
import { buildImage, fileSha256, grantedAllow, unionAllow, type BddFile } from './image.js';
import { BddRun, meta } from './runner.js';
import { guestLog } from '../untrusted/terminal.js';

/** Step files when [test] steps names none: the seed's globs, and cucumber-js's own default. */
export const DEFAULT_STEP_GLOBS = ['steps/**/*.{js,mjs,ts,mts}', 'step_definitions/**/*.{js,mjs,ts,mts}', 'features/**/*.{js,mjs,ts,mts}'];

/** `a/{b,c}/*.{js,ts}` as the plain globs it stands for. */
export function expandBraces(glob: string): string[] {
  const m = /\{([^{}]*)\}/.exec(glob);
  if (!m) return [glob];
  return m[1].split(',').flatMap((alt) => expandBraces(glob.slice(0, m.index) + alt + glob.slice(m.index + m[0].length)));
}

/** Files under `root` matching any of `globs` (relative to root), sorted; node_modules and dot-dirs skipped. */
export function findSteps(root: string, globs: string[]): string[] {
  const res = globs.flatMap(expandBraces).map((g) => globRegExp(g.replace(/^\.\//, '')));
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 32 || !existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() && !e.name.endsWith('.d.ts') && res.some((r) => r.test(relative(root, p).split(sep).join('/')))) out.push(p);
      if (out.length > 10_000) throw new KilnError(`more than 10000 step files under ${root}`);
    }
  };
  walk(root, 0);
  return out;
}

/** The deepest directory holding all of `dirs`. */
function commonAncestor(dirs: string[]): string {
  let common = dirs[0].split(sep);
  for (const d of dirs.slice(1)) {
    const parts = d.split(sep);
    let i = 0;
    while (i < common.length && i < parts.length && common[i] === parts[i]) i++;
    common = common.slice(0, i);
  }
  return common.join(sep) || sep;
}

/** The files of a run share one guest per worker, so any of them can reach what another may (docs/bdd.md): say
 *  so when their authority differs, naming who may do what. */
function sharedAuthorityNotice(files: BddFile[], policy: OperatorPolicy, root: string, err: (line: string) => void): void {
  const describe = (f: BddFile) => {
    const a = f.tools ? unionAllow(f.tools) : grantedAllow(policy.grants, f.identity);
    const parts = [
      Object.keys(a.commands).length ? `commands ${Object.keys(a.commands).join(', ')}` : '',
      a.net.length ? `net ${a.net.join(', ')}` : '', a.browser.length ? `browser ${a.browser.join(', ')}` : '',
      a.tools?.length ? `tools ${a.tools.join(', ')}` : '', a.fs ? `fs ${[...a.fs.read, ...a.fs.write].join(', ')}` : '',
    ].filter(Boolean);
    return parts.join('; ');
  };
  const described = files.map((f) => ({ file: relative(root, f.file) || f.file, what: describe(f) }));
  if (new Set(described.map((d) => d.what)).size <= 1) return;
  err('kiln bdd: these files share one guest per worker, so code in any of them can use what another may (docs/bdd.md, "Capabilities of steps"):');
  for (const d of described) if (d.what) err(`  ${d.file}: ${d.what}`);
}

function tagMatcher(expression: string): (tags: string[]) => boolean {
  try {
    const e = parseTagExpression(expression);
    return (tags) => e.evaluate(tags);
  } catch (e) {
    throw new KilnError(`kiln bdd --retry-tag-filter ${JSON.stringify(expression)}: ${(e as Error).message}`);
  }
}

export async function bdd(argv: string[], err: (line: string) => void): Promise<number> {
  const T = (what: string) => process.env.KILN_BDD_TIMING && err(`[timing] ${Math.round(performance.now())} ms ${what}`);
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true,
    options: {
      tags: { type: 'string' }, name: { type: 'string', multiple: true }, parallel: { type: 'string' },
      format: { type: 'string', multiple: true }, 'world-parameters': { type: 'string' }, 'dry-run': { type: 'boolean' },
      'fail-fast': { type: 'boolean' }, retry: { type: 'string' }, 'retry-tag-filter': { type: 'string' }, 'no-strict': { type: 'boolean' }, strict: { type: 'boolean' },
      config: { type: 'string' },
    },
  });
  const cwd = process.cwd();
  const int = (flag: string, v: string | undefined, min: number, def: number) => {
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > 64) throw new KilnError(`kiln bdd --${flag} ${v}: a whole number from ${min} to 64`);
    return n;
  };
  const parallel = int('parallel', values.parallel, 1, 1);
  const retry = int('retry', values.retry, 0, 0);
  let worldParameters: unknown = {};
  if (values['world-parameters'] !== undefined) {
    try {
      worldParameters = JSON.parse(values['world-parameters']);
    } catch (e) {
      throw new KilnError(`kiln bdd --world-parameters: not JSON: ${(e as Error).message}`);
    }
  }
  // Formats: NAME or NAME:FILE; one stdout at most; pretty by default, on stderr when stdout is taken.
  const specs = (values.format ?? []).map((f) => {
    const i = f.indexOf(':');
    const name = (i < 0 ? f : f.slice(0, i)) as FormatName;
    if (!FORMAT_NAMES.includes(name)) throw new KilnError(`kiln bdd --format ${f}: unknown format (${FORMAT_NAMES.join(', ')})`);
    return { name, file: i < 0 ? undefined : f.slice(i + 1) };
  });
  if (specs.filter((s) => !s.file).length > 1) throw new KilnError('kiln bdd: only one --format may write to stdout; give the others a file (NAME:FILE)');
  if (!specs.some((s) => s.name === 'pretty' || s.name === 'progress' || s.name === 'summary')) specs.push({ name: 'pretty', file: specs.some((s) => !s.file) ? '/dev/stderr' : undefined });

  const configFile = values.config ? resolve(values.config) : defaultConfig(cwd);
  let config: KilnConfig | undefined;
  if (configFile) config = (await import('../config/config.js')).readConfig(configFile);
  const root = configFile ? dirname(configFile) : cwd;
  const policy: OperatorPolicy = config?.policy ?? DEFAULT_POLICY;

  // Features first: a typo in a path fails before anything is built.
  const featureFiles = findFeatures(positionals.length ? positionals : ['features'], cwd);
  const parsed = parseFeatures(featureFiles, cwd, { tags: values.tags, names: values.name, lines: lineFilter(positionals, cwd) });
  for (const e of parsed.envelopes) {
    const pe = e.parseError;
    if (pe) err(`kiln bdd: parse error in ${pe.source.uri ?? '?'}${pe.source.location ? ` (${pe.source.location.line}:${pe.source.location.column ?? 0})` : ''}: ${pe.message.replace(/^\(\d+:\d+\): /, '')}`);
  }

  T('features');
  const engine = await Engine.load(undefined, undefined, requestedBackend(config?.engine.backend));
  const registry = new Registry(engine, policy);
  const extensionFiles = config ? discover(config.extensions, config.exclude) : [];
  await registry.load(extensionFiles, config?.exclude);
  for (const f of registry.failures) err(`kiln bdd: not loaded: ${f.error}`);
  T('registry');
  const stepFiles = findSteps(root, config?.test.steps ?? DEFAULT_STEP_GLOBS).filter((f) => !extensionFiles.includes(f));
  const files: BddFile[] = [
    ...extensionFiles.filter((f) => !registry.failures.some((x) => x.file === f)).map((file) => {
      const ext = registry.extensions.find((e) => e.file === file);
      return { file, tools: ext?.artifact.manifest.tools, identity: { file, sha256: ext?.artifact.sha256 ?? fileSha256(file) } };
    }),
    ...stepFiles.map((file) => ({ file, identity: { file, sha256: fileSha256(file) } })),
  ];
  sharedAuthorityNotice(files, policy, root, err);
  const builder = new (await import('../build/artifact.js')).Builder(engine, policy.limits.timeoutMs);
  // The bundle may read the project and every file the operator named (an extension outside the project too).
  // Locations in reports are relative to the working directory, as feature URIs are (and as cucumber-js does).
  const image = await buildImage(engine, files, { base: cwd, root: commonAncestor([root, ...files.map((f) => dirname(f.file))]) }, policy.grants, builder);

  T('image');
  const sessions = new Sessions(engine, 'bdd', (_s, _ext, level, message) => guestLog(['bdd'], level, message).forEach(err), policy, { ...policy.sessions, maxSessions: Math.max(policy.sessions.maxSessions, parallel) });
  const streams: WriteStream[] = [];
  const formatters: Formatter[] = specs.map((s) => {
    let write: (t: string) => void = (t) => process.stdout.write(t);
    if (s.file === '/dev/stderr') write = (t) => process.stderr.write(t);
    else if (s.file) {
      const stream = createWriteStream(resolve(cwd, s.file));
      streams.push(stream);
      write = (t) => stream.write(t);
    }
    return createFormatter(s.name, write, { cwd, colors: !s.file && process.stdout.isTTY === true, strict: !values['no-strict'] });
  });
  const emit = (e: Envelope) => { for (const f of formatters) f.update(e); };
  emit(meta());
  const selected = new Set(parsed.pickles.map((p) => p.id));
  for (const e of parsed.envelopes) if (!e.pickle || selected.has(e.pickle.id)) emit(e);
  const run = new BddRun(registry, sessions, image, emit, {
    parallel, dryRun: values['dry-run'] === true, failFast: values['fail-fast'] === true, retry, strict: !values['no-strict'], worldParameters,
    retryTags: values['retry-tag-filter'] ? tagMatcher(values['retry-tag-filter']) : undefined,
  });
  let success = false;
  try {
    const plans = await run.prepare(parsed.pickles);
    T('prepared');
    success = await run.run(parsed.pickles, plans);
    T('ran');
  } finally {
    for (const f of formatters) await f.finish();
    await Promise.all(streams.map((s) => new Promise((r) => s.end(r))));
    sessions.closeAll();
    await sessions.browsers.close();
  }
  return success && parsed.errors === 0 && registry.failures.length === 0 ? 0 : 1;
}
