// Bundling an extension: rollup resolves its whole import graph (relative files, JSON files and node_modules
// packages, preferring a package's browser build), strips TypeScript, tree-shakes, inlines dynamic imports, and
// emits one ES module with a source map. A Node built-in with no authority resolves to kiln's implementation of
// it (node-builtins.ts), and a free `Buffer` to the `buffer` built-in's; no other Node builtin may remain:
// QuickJS has none, and an import that resolves to nothing fails the build naming the importing file, its
// package and the replacement. No message carries one of rollup's internal module ids (they start with a NUL
// byte). What the author should know about the choices made — a package's build for browsers picked over its
// default entry (entries.ts), a package that uses `document` or `window` (free-globals.ts) — comes back as
// notes, which `kiln build` prints.
import commonjsPlugin from '@rollup/plugin-commonjs';
import jsonPlugin from '@rollup/plugin-json';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import injectPlugin from '@rollup/plugin-inject';
import sucrasePlugin from '@rollup/plugin-sucrase';
import { existsSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { rollup, type Plugin, type RollupLog } from '@rollup/wasm-node';
import { SOURCE_EXTENSIONS } from '../extensions/discovery.js';
import { containmentViolation, extensionRoot, real } from './containment.js';
import { kilnImporter, kilnRoot, NODE_BUILTINS, OTHER_BUILTIN, REFUSED_BUILTINS } from './node-builtins.js';
import { checkNesting, NestingError } from './nesting.js';
import { regexLiterals } from './regex-literals.js';
import { BROWSER_CONDITIONS, EntryChoices } from './entries.js';
import { describeFreeGlobal, freeGlobals } from './free-globals.js';

// The plugins' type declarations describe their CommonJS shape; at run time the ESM default is the function.
const commonjs = commonjsPlugin as unknown as typeof commonjsPlugin.default;
const sucrase = sucrasePlugin as unknown as typeof sucrasePlugin.default;
const json = jsonPlugin as unknown as typeof jsonPlugin.default;
const inject = injectPlugin as unknown as typeof injectPlugin.default;

/** Export conditions besides rollup's ('default', 'module', 'import'/'require'): a package's build for
 *  browsers or web workers is the one that runs without Node builtins. 'production' is named so that the
 *  builder's NODE_ENV never changes an artifact. 'node' is not a condition: its builds need Node. */
const EXPORT_CONDITIONS = [...BROWSER_CONDITIONS, 'production'];

/** Where the "way out" of a Node builtin import is documented. */
const BUILTINS_DOC = 'docs/extensions.md, "Node builtins"';

export interface Bundle {
  code: string;
  /** Source map (v3) whose sources are relative to the extension's directory. */
  map: { version: number; sources: string[]; mappings: string; names: string[] };
  /** Every file the bundle read (the entry, its imports, the packages' files, and the package.json that
   *  decided how each of them resolves): what a build cache checks, and what no tool may rewrite while the
   *  extension is served (extensions/registry.ts, capabilities/fs/policy.ts). */
  inputs: string[];
  /** What the author should know about how it was built: each package whose build for browsers was chosen
   *  over its default entry (entries.ts), each package that uses a browser global kiln has not
   *  (free-globals.ts). `kiln build` prints them. */
  notes: string[];
}

export class BundleError extends Error {
  override name = 'BundleError';
}

function describe(log: RollupLog): string {
  const loc = log.loc ? `${log.loc.file ?? log.id ?? ''}:${log.loc.line}:${log.loc.column + 1}: ` : '';
  return `${loc}${log.message}`;
}

/** The file behind one of rollup's module ids: plugins' virtual ids (`\0/path/x.js?commonjs-proxy`) are
 *  NUL-prefixed and may carry a query. */
const fileOf = (id: string) => id.replace(/^\0+/, '').replace(/\?.*$/, '');

/** A rollup error's own message, without the "[plugin x] id (line:column): " rollup puts before it (its id is
 *  relative to the process's working directory; the caller names the file relative to the extension). */
function unaugmented(e: any): string {
  let m = String(e?.message ?? e).replace(/^\[plugin [^\]]+\] /, '');
  const id: unknown = e?.id ?? e?.loc?.file;
  if (typeof id === 'string') {
    const rel = isAbsolute(id) ? relative(process.cwd(), id) : id;
    if (m.startsWith(rel)) m = m.slice(rel.length).replace(/^ \(\d+:\d+\)/, '').replace(/^: /, '');
    // A plugin's wrapping ("Error transforming <id>: ", "… in <id>") and a parser's own "(line:column)": the
    // caller states the file and position once, from e.loc.
    if (m.startsWith(`Error transforming ${id}: `)) m = m.slice(`Error transforming ${id}: `.length);
    for (const name of [id, rel]) if (m.endsWith(` in ${name}`)) m = m.slice(0, -` in ${name}`.length);
    if (e?.loc) m = m.replace(/ \(\d+:\d+\)$/, '');
  }
  return m;
}

/** `text` with every internal module id replaced by its file, and no NUL byte left. */
const clean = (text: string) => text.replace(/\0([^\s"'`?]*)(\?[\w=&-]*)?/g, '$1').replaceAll('\0', '');

/** The package a file belongs to (the directory after its last node_modules), with its version if known. */
function packageOf(file: string): string | undefined {
  const parts = file.split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const name = parts[at + 1].startsWith('@') ? parts.slice(at + 1, at + 3).join('/') : parts[at + 1];
  try {
    const version = JSON.parse(readFileSync(join(parts.slice(0, at + 1).join(sep), name, 'package.json'), 'utf8')).version;
    return typeof version === 'string' && /^[\w.+-]{1,64}$/.test(version) ? `${name}@${version}` : name;
  } catch {
    return name;
  }
}

/** Why `source`, imported by `importer`, resolved to nothing: a Node builtin (with the documented way out), or
 *  neither a file nor an installed package. Names the importing file and its package. */
function unresolvedMessage(source: string, importer: string | undefined, base: string): string {
  const from = importer ? relative(base, importer) : undefined;
  const pkg = importer ? packageOf(importer) : undefined;
  const where = from ? ` (imported by ${from}${pkg ? `, in package ${pkg}` : ''})` : '';
  if (!isBuiltin(source)) return `cannot import "${source}"${where}: it is not a file or an installed package`;
  const way = builtinWayOut(source);
  return `cannot import "${source}"${where}: it is a Node builtin that extensions do not get (they run in QuickJS, with ` +
    'only the built-ins that carry no authority); ' +
    (pkg ? `${pkg} offers no browser build without it (kiln prefers one): use a package made for browsers` : '') +
    (pkg && way === OTHER_BUILTIN ? '' : `${pkg ? '; ' : ''}use ${way}`) + ` (see ${BUILTINS_DOC})`;
}

/** Which unresolved import a failed build names first, the same every time (rollup resolves in parallel): a
 *  missing package, then a refused builtin with a replacement of its own (http says more than the zlib it also
 *  imports), then the rest; by name within each. */
function rank(source: string): number {
  if (!isBuiltin(source)) return 0;
  return builtinWayOut(source) === OTHER_BUILTIN ? 2 : 1;
}

/** What to use instead of builtin `source`: REFUSED_BUILTINS' replacement, as docs/extensions.md's table says. */
function builtinWayOut(source: string): string {
  const name = source.replace(/^node:/, '');
  return Object.hasOwn(REFUSED_BUILTINS, name) ? REFUSED_BUILTINS[name] : OTHER_BUILTIN;
}

/** Every module the bundle reads must be inside the extension's directory or its node_modules
 *  (containment.ts), or be one of kiln's Node built-in implementations: a file that an import of a built-in
 *  resolved to, from kiln's own directory, or that such a file imports (`granted`, real paths). Nothing else of
 *  kiln's tree: an extension's own import of one of those files, by path or through a symlink, is judged by
 *  containment like any other. No module may nest deeper than the parsers survive (nesting.ts). This plugin
 *  comes first, so it sees each import before anything reads it and each module's code before anything parses
 *  it. */
function guard(entry: string, root: string, base: string, unresolved: Map<string, string>, granted: Set<string>,
  entries: EntryChoices): Plugin {
  const refuse = (id: string, why: string, importer?: string) => {
    throw new BundleError(`${importer ? `${relative(base, importer)}: ` : ''}cannot import ${JSON.stringify(id)}: ${why}; ` +
      'an extension may import only files under its own directory and installed packages');
  };
  const virtual = (id: string) => id.startsWith('\0');
  const path = (id: string) => id.replace(/\?.*$/, '');
  const ownModule = (id: string) => !/[\\/]node_modules[\\/]/.test(path(id));
  const isGranted = (id: string) => granted.has(real(fileOf(id)));
  return {
    name: 'kiln-guard',
    async resolveId(source, importer, options) {
      if (virtual(source)) return null;
      const fromKiln = importer !== undefined && isGranted(importer);
      // A built-in: `node:x` always means kiln's; a bare `x` is an installed package of that name if there is
      // one (the author's choice, or a package's dependency), else kiln's.
      const name = isBuiltin(source) ? source.replace(/^node:/, '') : undefined;
      let r = name !== undefined && source.startsWith('node:') ? null : await this.resolve(source, importer, { ...options, skipSelf: true });
      if (!r && name !== undefined && Object.hasOwn(NODE_BUILTINS, name)) {
        const impl = NODE_BUILTINS[name];
        if ('file' in impl) {
          const file = join(kilnRoot, impl.file);
          granted.add(real(file));
          return file;
        }
        r = await this.resolve(impl.package, kilnImporter, { ...options, skipSelf: true });
        if (r && !r.external && !virtual(r.id)) granted.add(real(path(r.id)));
        return r;
      }
      if (fromKiln && r && !r.external && !virtual(r.id)) {
        granted.add(real(path(r.id))); // a built-in implementation's own import: kiln's code, not the extension's
        return r;
      }
      // Nothing resolves it: remember who asked, for the message (the commonjs plugin turns the import into a
      // virtual module of its own, which is all rollup's warning names). A require() inside try/catch stays a
      // require() in the bundle (the package's optional dependency), which throws when it runs. Of several
      // files that import it, the first by path is named, the same every time (rollup resolves in parallel).
      if (!r && importer && !virtual(importer)) {
        const seen = unresolved.get(source);
        if (seen === undefined || path(importer) < seen) unresolved.set(source, path(importer));
      }
      if (!r || r.external) return r;
      // Which entry of a package this import chose (the commonjs plugin may answer with a virtual module: the
      // file behind it is the one chosen).
      if (!ownModule(fileOf(r.id))) entries.note(source, fileOf(r.id), Boolean((options.custom?.['node-resolve'] as { isRequire?: boolean } | undefined)?.isRequire));
      if (virtual(r.id)) return r;
      const why = importer ? containmentViolation(root, path(r.id)) : undefined;
      if (why) refuse(source, why, !importer || virtual(importer) || importer === entry ? undefined : importer);
      // The author's own modules run exactly as written: rollup drops no statement it believes has no effect
      // (an empty loop, a busy-wait, a toString side effect), nor unused exports. Packages under node_modules
      // are tree-shaken as their sideEffects field allows.
      return ownModule(r.id) ? { ...r, moduleSideEffects: 'no-treeshake' } : r;
    },
    load(id) {
      if (virtual(id) || isGranted(id)) return null;
      const why = containmentViolation(root, path(id));
      if (why) refuse(id, why);
      return null;
    },
    transform(code, id) {
      try {
        checkNesting(code, virtual(id) ? 'a module' : relative(base, path(id)));
      } catch (e) {
        if (e instanceof NestingError) throw new BundleError(e.message);
        throw e;
      }
      return null;
    },
  };
}

/** `files` and, for each, the nearest package.json above it: the resolver read it (a package's main, exports
 *  and browser map; the browser map of the author's own directory too), so it decided what the bundle holds. */
function withManifests(files: string[]): string[] {
  const out = new Set(files);
  const seen = new Set<string>();
  for (const f of files) {
    for (let dir = dirname(f); !seen.has(dir); dir = dirname(dir)) {
      seen.add(dir);
      const manifest = join(dir, 'package.json');
      if (existsSync(manifest)) {
        out.add(manifest);
        break;
      }
      if (dirname(dir) === dir) break;
    }
  }
  return [...out];
}

/** `file`'s name in a source map if it is one of kiln's built-in implementations: `kiln:` and its path from
 *  kiln's directory, or from the last node_modules for a package (installed next to kiln or above it). */
function kilnSource(file: string, granted: Set<string>): string | undefined {
  const at = file.lastIndexOf(`${sep}node_modules${sep}`);
  if (!granted.has(real(file))) return undefined;
  return `kiln:${(at >= 0 ? file.slice(at + 1) : relative(kilnRoot, file)).split(sep).join('/')}`;
}

/** What a bundle of generated code needs (kiln bdd's image: host/bdd/image.ts). */
export interface BundleOptions {
  /** Modules with no file behind them: id → code. The entry may be one (its id a path in `root`). */
  virtual?: Record<string, string>;
  /** Import specifiers that resolve to a virtual module: specifier → id. */
  aliases?: Record<string, string>;
  /** The directory whose files (and node_modules) the bundle may read: the entry's by default. */
  root?: string;
}

/** Serves BundleOptions' virtual modules and aliases, ahead of every other plugin. */
function virtualModules(options: BundleOptions): Plugin {
  const code = options.virtual ?? {};
  const aliases = options.aliases ?? {};
  return {
    name: 'kiln-virtual',
    resolveId: (source) => (Object.hasOwn(aliases, source) ? aliases[source] : Object.hasOwn(code, source) ? source : null),
    load: (id) => (Object.hasOwn(code, id) ? code[id] : null),
  };
}

export async function bundle(file: string, options: BundleOptions = {}): Promise<Bundle> {
  const entry = resolve(file);
  const base = dirname(entry);
  const root = options.root ?? extensionRoot(entry);
  const misses = new Map<string, string | undefined>(); // an import nothing resolves -> who imported it
  let failure: string | undefined; // another failure rollup logged
  const unresolved = new Map<string, string>(); // import -> the real file, first by path, that imports it
  // kiln's built-in implementation files this bundle reads; kilnImporter (no file: only what resolves them)
  // is in it so that what a resolution from it resolves in turn is kiln's too.
  const granted = new Set<string>([real(kilnImporter)]);
  const entries = new EntryChoices();
  let build;
  try {
    build = await rollup({
      input: entry,
      treeshake: true,
      plugins: [
        ...(options.virtual || options.aliases ? [virtualModules(options)] : []),
        guard(entry, root, base, unresolved, granted, entries),
        nodeResolve({
          extensions: [...SOURCE_EXTENSIONS, '.json'], // require('./data') finds data.json, as in Node
          preferBuiltins: false, // an installed package named like a builtin (events, buffer, punycode) is used
          browser: true, // the browser field: main entry and per-file replacements (a Node-only file -> false)
          exportConditions: EXPORT_CONDITIONS,
        }),
        json({ preferConst: true }),
        // TypeScript is stripped first, so regexLiterals sees every module as JavaScript before commonjs
        // parses it (commonjs takes only .js files, sucrase none of them: their order changes nothing else).
        sucrase({ include: /\.(tsx?|mts|cts|jsx)$/, transforms: ['typescript', 'jsx'], disableESTransforms: true }),
        regexLiterals(),
        commonjs(),
        // A free `Buffer`, as in Node, in any module that names one (and only those: the others pay nothing):
        // an import of the `buffer` built-in's, run before the module's own code, so a top level using it works.
        inject({ Buffer: ['node:buffer', 'Buffer'] }),
      ],
      onLog(level, log) {
        if (level === 'warn' && log.code === 'UNRESOLVED_IMPORT') {
          const source = log.exporter ?? '';
          const importer = unresolved.get(source) ?? (log.id && !log.id.startsWith('\0') ? log.id : undefined);
          if (log.exporter) { if (!misses.has(source)) misses.set(source, importer); } else failure ??= log.message;
        }
      },
    });
    if (misses.size) {
      const [first, ...more] = [...misses.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
      throw new BundleError(unresolvedMessage(first, misses.get(first), base) +
        (more.length ? `; also unresolved: ${more.slice(0, 8).map((s) => `"${s}"`).join(', ')}${more.length > 8 ? ', …' : ''}` : ''));
    }
    if (failure) throw new BundleError(failure);
    const { output } = await build.generate({
      format: 'es',
      inlineDynamicImports: true, // an artifact is one module: `import()` of a bundled file resolves inside it
      sourcemap: true,
      sourcemapExcludeSources: true,
      // kiln's built-in implementations by their place in kiln, not on this disk: the artifact does not depend on
      // where kiln is installed.
      sourcemapPathTransform: (rel, mapPath) => kilnSource(resolve(dirname(mapPath), rel), granted) ?? relative(base, resolve(dirname(mapPath), rel)),
      file: resolve(base, basename(entry) + '.bundle.js'),
    });
    const chunk = output[0];
    const inputs = withManifests(build.watchFiles.filter((id) => !id.startsWith('\0') && isAbsolute(id)));
    const map = JSON.parse(chunk.map!.toString());
    const globals = await freeGlobals(chunk.code, map, (source) => packageOf(resolve(base, source))); // the author's own files: none
    return { code: chunk.code, map, inputs, notes: [...entries.lines(), ...globals.map(describeFreeGlobal)] };
  } catch (e: any) {
    // Whatever rollup or a plugin throws, at any stage, fails this file with a message, never the process.
    const b = e instanceof BundleError ? e : e?.cause instanceof BundleError ? e.cause : undefined;
    if (b) throw new BundleError(clean(b.message));
    const id: string | undefined = e?.loc?.file ?? e?.id;
    const message = unaugmented(e) + (e?.cause?.message ? `: ${e.cause.message}` : '');
    const file = relative(base, fileOf(id ?? entry));
    const text = e?.loc ? describe({ message, loc: { ...e.loc, file } } as RollupLog) : id ? `${file}: ${message}` : message;
    throw new BundleError(clean(text).replaceAll(base + sep, '')); // a plugin may name a file by its absolute path
  } finally {
    await build?.close();
  }
}
