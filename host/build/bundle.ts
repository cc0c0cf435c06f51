// Bundling an extension into one ES module with a source map, by rolldown (a bundler in native code: its
// resolver, CommonJS support, JSON and TypeScript are Rust, so a package of a thousand files bundles in about a
// second), in three passes:
//   1. the author's modules, each kept a module of its own and exactly as written (TypeScript and JSX
//      stripped, nothing tree-shaken or inlined); every import of a package is left as an import of the file
//      it resolved to;
//   2. those package files, tree-shaken to the names the author's modules use of each and as their
//      sideEffects field allows, with the browser build of a package preferred; a package's import of one of
//      the author's modules is left as an import of it;
//   3. both joined, unchanged, in the order Node evaluates them, dynamic imports inlined.
// A Node built-in with no authority resolves to kiln's implementation of it (node-builtins.ts), and a free
// `Buffer` to the `buffer` built-in's; no other Node builtin may remain: QuickJS has none, and an import that
// resolves to nothing fails the build naming the importing file, its package and the replacement. Every
// module read is judged by containment.ts and nesting.ts first. No message carries one of the bundler's
// internal module ids (they start with a NUL byte), nor its terminal colours. What the author should know
// about the choices made — a package's build for browsers picked over its default entry (entries.ts), a
// package that uses `document` or `window` (free-globals.ts) — comes back as notes, which `kiln build` prints.
import { existsSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import { rolldown, type InputOptions, type OutputChunk, type PartialResolvedId, type Plugin, type ResolvedId, type RolldownLog } from 'rolldown';
import { parseAst } from 'rolldown/parseAst';
import { SOURCE_EXTENSIONS } from '../extensions/discovery.js';
import { containmentViolation, extensionRoot, real, realOnce } from './containment.js';
import { kilnImporter, kilnRoot, NODE_BUILTINS, OTHER_BUILTIN, REFUSED_BUILTINS } from './node-builtins.js';
import { checkNesting, NestingError } from './nesting.js';
import { BROWSER_CONDITIONS, EntryChoices } from './entries.js';
import { regexLiteralError } from './regex-literals.js';
import { describeFreeGlobal, freeGlobals } from './free-globals.js';

/** Export conditions besides the resolver's own ('import' or 'require' by the kind of import, and 'default'): a
 *  package's build for browsers or web workers is the one that runs without Node builtins; 'module' as
 *  bundlers take it. 'production' is named so that the builder's NODE_ENV never changes an artifact. 'node'
 *  is not a condition: its builds need Node. */
const EXPORT_CONDITIONS = [...BROWSER_CONDITIONS, 'production', 'module'];

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

/** A message of rolldown's, as one line of plain text: its terminal colours, its "[CODE] " and the code frame
 *  it draws below the first line removed (the caller states the file and position once). */
const plain = (message: string) => uncoloured(message).split('\n')[0].replace(/^\[[A-Z_]+\] /, '').trim();
/** `text` without terminal colour sequences. */
const uncoloured = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

function describe(log: RolldownLog): string {
  const loc = log.loc ? `${log.loc.file ?? log.id ?? ''}:${log.loc.line}:${log.loc.column + 1}: ` : '';
  return `${loc}${log.message}`;
}

/** The file behind one of the bundler's module ids: virtual ids (`\0rolldown/empty.js`) are NUL-prefixed,
 *  and an id may carry a query. */
const fileOf = (id: string) => id.replace(/^\0+/, '').replace(/\?.*$/, '');

/** A bundler error's own message, without the "[plugin x] id (line:column): " put before it (its id is
 *  relative to the process's working directory; the caller names the file relative to the extension). */
function unaugmented(e: any): string {
  let m = plain(String(e?.message ?? e)).replace(/^\[plugin [^\]]+\] /, '');
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

/** Which unresolved import a failed build names first, the same every time (the bundler resolves in parallel): a
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
  entries: EntryChoices, real: (path: string) => string, packages?: Packages, authored?: ReadonlyMap<string, string>): Plugin {
  const refuse = (id: string, why: string, importer?: string) => {
    throw new BundleError(`${importer ? `${relative(base, importer)}: ` : ''}cannot import ${JSON.stringify(id)}: ${why}; ` +
      'an extension may import only files under its own directory and installed packages');
  };
  const virtual = (id: string) => id.startsWith('\0');
  const path = (id: string) => id.replace(/\?.*$/, '');
  const ownModule = (id: string) => !/[\\/]node_modules[\\/]/.test(path(id));
  // rolldown reads a module's id as it is, query and all: `a.js?/../../x.txt` is a path on this disk (a
  // directory named `a.js?` makes it one), so an id is judged both with its query and without.
  const isGranted = (id: string) => path(id) === id && granted.has(real(id));
  const violation = (id: string) => containmentViolation(root, path(id), real) ?? (path(id) === id ? undefined : containmentViolation(root, id, real));
  // In the author's pass, a module that is not the author's (a package's, or one of kiln's built-in
  // implementations) is left for the packages' pass: an external import of its resolved file.
  // In the packages' pass, a package's import of one of the author's modules of the first pass (`authored`: a
  // cycle through the package) is left as an external import of it, joined to that module in the last pass: it
  // runs once, as in Node.
  const away = (r: Pick<ResolvedId, 'id' | 'external'> & Partial<ResolvedId>): PartialResolvedId => {
    if (r.external || virtual(r.id)) return r;
    if (!packages) return authored?.has(r.id) ? { id: AUTHOR_MODULE_PREFIX + r.id, external: true } : r;
    if (ownModule(r.id) && !isGranted(r.id)) return r;
    if (!packages.has(r.id)) packages.set(r.id, r.moduleSideEffects ?? null);
    return { id: PACKAGE_PREFIX + r.id, external: true };
  };
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
          return away({ id: file, external: false });
        }
        r = await this.resolve(impl.package, kilnImporter, { ...options, skipSelf: true });
        if (r && !r.external && !virtual(r.id)) granted.add(real(path(r.id)));
        return r && away(r);
      }
      if (fromKiln && r && !r.external && !virtual(r.id)) {
        granted.add(real(path(r.id))); // a built-in implementation's own import: kiln's code, not the extension's
        return r;
      }
      // Nothing resolves it: remember who asked, for the message. A require() inside try/catch stays a
      // require() in the bundle (the package's optional dependency), which throws when it runs. Of several
      // files that import it, the first by path is named, the same every time (rolldown resolves in parallel).
      if (!r && importer && !virtual(importer)) {
        const seen = unresolved.get(source);
        if (seen === undefined || path(importer) < seen) unresolved.set(source, path(importer));
      }
      // rolldown leaves a URL import (`https://…`, `//…`) external; a guest loads no module from anywhere.
      if (r?.external && /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(source)) throw new BundleError(clean(unresolvedMessage(source, importer, base)));
      if (!r || r.external) return r;
      // Which entry of a package this import chose.
      if (!ownModule(fileOf(r.id))) entries.note(source, fileOf(r.id), options.kind === 'require-call');
      if (virtual(r.id)) return r;
      const why = importer ? violation(r.id) : undefined;
      if (why) refuse(source, why, !importer || virtual(importer) || importer === entry ? undefined : importer);
      // The author's module is its own module of the last pass, which a require() cannot name.
      if (!packages && authored?.has(r.id) && options.kind === 'require-call') {
        throw new BundleError(`${importer ? `${relative(base, importer)}: ` : ''}cannot require ${JSON.stringify(source)}: ` +
          `it is the extension's own module ${relative(base, r.id)}, which a package may import, not require()`);
      }
      return away(r);
    },
    load(id) {
      if (virtual(id) || isGranted(id)) return null;
      const why = violation(id);
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

/** The package files the author's pass left for the packages' pass: resolved id → its side effects as the
 *  resolver found them (a package's sideEffects field). */
type Packages = Map<string, ResolvedId['moduleSideEffects'] | null>;

/** The author's pass names a package file by this and its resolved id; the packages' pass has one entry
 *  module per file, by number; the last pass's modules are the author's bundle and the packages' chunks. */
const PACKAGE_PREFIX = 'kiln-package:';
/** The packages' pass names one of the author's modules, imported by a package, by this and its resolved id. */
const AUTHOR_MODULE_PREFIX = 'kiln-author:';
const ENTRY_PREFIX = '\0kiln-entry:';
// Not NUL-prefixed, unlike the other virtual modules: rolldown keeps no source map of a module that is.
const AUTHOR_PREFIX = 'kiln-joined:author/';
const CHUNK_PREFIX = 'kiln-joined:packages/';

/** The name under which a package's chunk exports the package's namespace, where the author uses it. */
const NAMESPACE = '__kiln_namespace';

/** What one of the author's modules takes from each package file, added to `used`: the names it imports or
 *  re-exports, '*' for a namespace (an `import * as`, a dynamic import, a re-export of everything). A
 *  side-effect import names nothing. Returns `code` with each use of a namespace taken from the package chunk's NAMESPACE export instead,
 *  on the same line: a chunk's own namespace holds only what the author uses, and a CommonJS package's
 *  namespace is built by the bundler. */
function importedNames(code: string, used: Map<string, Set<string>>, rank: (source: string) => number): string {
  const of = (source: unknown) => {
    const id = String(source).slice(PACKAGE_PREFIX.length);
    if (!used.has(id)) used.set(id, new Set());
    return used.get(id)!;
  };
  const name = (n: any) => String(n?.type === 'Identifier' ? n.name : n?.value);
  const edits: { start: number; end: number; text: string }[] = [];
  const body = parseAst(code).body as any[];
  // rolldown writes a module's imports of its own modules before its imports of externals: they are put back
  // in the module's own order, which is the order they run in (one per line, so no line moves).
  const imports = body.filter((n) => n.type === 'ImportDeclaration');
  const contiguous = imports.every((n, i) => i === 0 || /^\s*$/.test(code.slice(imports[i - 1].end, n.start)));
  const sorted = [...imports].sort((a, b) => rank(a.source.value) - rank(b.source.value));
  if (contiguous && sorted.some((n, i) => n !== imports[i])) {
    const lines = sorted.map((n) => code.slice(n.start, n.end));
    code = code.slice(0, imports[0].start) + lines.join('\n') + code.slice(imports.at(-1).end);
    return importedNames(code, used, () => 0);
  }
  for (const node of body) {
    const source = node.source?.value;
    if (typeof source !== 'string' || !source.startsWith(PACKAGE_PREFIX)) continue;
    const names = of(source);
    const from = ` from ${JSON.stringify(source)};`;
    if (node.type === 'ImportDeclaration') {
      const bindings: string[] = [];
      let namespace = false;
      for (const sp of node.specifiers ?? []) {
        const imported = sp.type === 'ImportDefaultSpecifier' ? 'default' : sp.type === 'ImportNamespaceSpecifier' ? NAMESPACE : name(sp.imported);
        namespace ||= imported === NAMESPACE;
        names.add(imported === NAMESPACE ? '*' : imported);
        bindings.push(`${JSON.stringify(imported)} as ${sp.local.name}`);
      }
      if (namespace) edits.push({ start: node.start, end: node.end, text: `import { ${bindings.join(', ')} }${from}` });
    } else if (node.type === 'ExportNamedDeclaration') {
      for (const sp of node.specifiers ?? []) names.add(name(sp.local));
    } else if (node.type === 'ExportAllDeclaration') {
      names.add('*');
      // The entry's exports are nobody's to import; a named one keeps its name.
      edits.push({ start: node.start, end: node.end, text: node.exported ? `export { ${NAMESPACE} as ${JSON.stringify(name(node.exported))} }${from}` : `import${from.slice(' from'.length)}` });
    }
  }
  // Each `import()` of a package file, found in the syntax tree (a string or template that reads like one is
  // the author's text, left as it is); a tree as deep as nesting.ts lets through, walked without recursion.
  const nodes: any[] = [...body];
  while (nodes.length) {
    const n = nodes.pop();
    if (n?.type === 'ImportExpression' && typeof n.source?.value === 'string' && n.source.value.startsWith(PACKAGE_PREFIX)) {
      of(n.source.value).add('*');
      edits.push({ start: n.end, end: n.end, text: `.then((m) => m.${NAMESPACE})` });
    }
    for (const v of Object.values(n ?? {})) {
      if (Array.isArray(v)) { for (const x of v) if (x && typeof x === 'object') nodes.push(x); } else if (v && typeof v === 'object' && typeof (v as any).type === 'string') nodes.push(v);
    }
  }
  let out = code;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** The packages' pass's entries: for each package file, a module exporting just the names the author uses
 *  (and its namespace as NAMESPACE, where the author uses that). Each file is the one the author's pass resolved and
 *  judged, with the side effects the resolver found. */
function packageEntries(ids: string[], packages: Packages, used: Map<string, Set<string>>): Plugin {
  const spell = (n: string) => (/^[A-Za-z_$][\w$]*$/.test(n) ? n : JSON.stringify(n));
  return {
    name: 'kiln-package-entries',
    resolveId(source, importer) {
      if (source.startsWith(ENTRY_PREFIX)) return source;
      if ((importer === undefined || importer.startsWith(ENTRY_PREFIX)) && packages.has(source)) {
        return { id: source, moduleSideEffects: packages.get(source) ?? undefined };
      }
      return null;
    },
    load(id) {
      if (!id.startsWith(ENTRY_PREFIX)) return null;
      const file = ids[Number(id.slice(ENTRY_PREFIX.length))];
      const names = [...(used.get(file) ?? [])];
      const from = ` from ${JSON.stringify(file)};\n`;
      const named = names.filter((n) => n !== '*');
      return (names.includes('*') ? `export * as ${NAMESPACE}${from}` : '') +
        (named.length ? `export { ${named.map(spell).join(', ')} }${from}` : '') + (names.length ? '' : `import${from.slice(' from'.length)}`);
    },
  };
}

/** The last pass's modules: the author's modules, whose package imports resolve to the packages' chunks.
 *  It reads no file: an import that is not one of the earlier passes' chunks fails the build. */
function joined(authors: Map<string, Pick<OutputChunk, 'code' | 'map'>>, chunks: Map<string, OutputChunk>, chunkOf: (id: string) => string | undefined,
  authorOf: (id: string) => string | undefined): Plugin {
  const module = (id: string) => id.startsWith(AUTHOR_PREFIX) ? authors.get(id.slice(AUTHOR_PREFIX.length))
    : id.startsWith(CHUNK_PREFIX) ? chunks.get(id.slice(CHUNK_PREFIX.length)) : undefined;
  const within = (prefix: string, importer: string, source: string) =>
    prefix + posix.join(posix.dirname(importer.slice(prefix.length)), source);
  return {
    name: 'kiln-joined',
    resolveId(source, importer) {
      let id: string | undefined;
      if (importer === undefined) id = source;
      else if (source.startsWith(PACKAGE_PREFIX)) id = CHUNK_PREFIX + chunkOf(source.slice(PACKAGE_PREFIX.length));
      else if (source.startsWith(AUTHOR_MODULE_PREFIX) && importer.startsWith(CHUNK_PREFIX)) id = AUTHOR_PREFIX + authorOf(source.slice(AUTHOR_MODULE_PREFIX.length));
      else if (/^\.\.?\//.test(source) && (importer.startsWith(CHUNK_PREFIX) || importer.startsWith(AUTHOR_PREFIX))) {
        id = within(importer.startsWith(CHUNK_PREFIX) ? CHUNK_PREFIX : AUTHOR_PREFIX, importer, source);
      }
      if (id === undefined || !module(id)) throw new BundleError(`cannot import ${JSON.stringify(source)}: it is none of the bundle's own modules`);
      return id;
    },
    load(id) {
      const c = module(id);
      if (!c) throw new BundleError(`cannot load ${JSON.stringify(id)}: it is none of the bundle's own modules`);
      return { code: c.code, map: c.map?.toString(), moduleSideEffects: true };
    },
  };
}

export async function bundle(file: string, options: BundleOptions = {}): Promise<Bundle> {
  const entry = resolve(file);
  const base = dirname(entry);
  const root = options.root ?? extensionRoot(entry);
  const misses = new Map<string, string | undefined>(); // an import nothing resolves -> who imported it
  let failure: string | undefined; // another unresolved import rolldown reported, without its specifier
  const unresolved = new Map<string, string>(); // import -> the real file, first by path, that imports it
  // kiln's built-in implementation files this bundle reads; kilnImporter (no file: only what resolves them)
  // is in it so that what a resolution from it resolves in turn is kiln's too.
  const granted = new Set<string>([real(kilnImporter)]);
  const realpath = realOnce(); // each path resolved once per build, which asks the same ones thousands of times
  const entries = new EntryChoices();
  // An import nothing resolved: rolldown warns (a require() outside try/catch) or fails (an import statement);
  // a require() inside try/catch (a package's optional dependency) is neither, and stays a require() that
  // throws when it runs. Each is remembered here and the build fails with kiln's message.
  const noteUnresolved = (log: { exporter?: string; id?: string; message?: string }) => {
    const source = log.exporter ?? '';
    const importer = unresolved.get(source) ?? (log.id && !log.id.startsWith('\0') ? log.id : undefined);
    if (log.exporter) { if (!misses.has(source)) misses.set(source, importer); } else failure ??= plain(String(log.message));
  };
  const failIfUnresolved = () => {
    if (misses.size) {
      const [first, ...more] = [...misses.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
      throw new BundleError(clean(unresolvedMessage(first, misses.get(first), base) +
        (more.length ? `; also unresolved: ${more.slice(0, 8).map((s) => `"${s}"`).join(', ')}${more.length > 8 ? ', …' : ''}` : '')));
    }
    if (failure) throw new BundleError(clean(failure));
  };
  const passes: { close(): Promise<void> }[] = [];
  const inputs = new Set<string>();
  /** One rolldown pass; its warnings of unresolved imports are kept, and every file it read is an input. */
  const pass = async (input: InputOptions, output: Parameters<Awaited<ReturnType<typeof rolldown>>['generate']>[0]) => {
    const build = await rolldown({
      platform: 'browser',
      logLevel: 'warn',
      // The author's modules run as written (pass 1): no constant is inlined into its uses.
      optimization: { inlineConst: false },
      onLog(level, log) {
        if (level === 'warn' && log.code === 'UNRESOLVED_IMPORT') noteUnresolved(log);
      },
      ...input,
    });
    passes.push(build);
    const { output: chunks } = await build.generate({
      format: 'es',
      sourcemap: 'hidden',
      sourcemapExcludeSources: true,
      minify: false, // nor is dead code removed from the output: what tree-shaking kept is what runs
      // Source maps name files by absolute path between passes; the last pass names them for the artifact.
      sourcemapPathTransform: (rel, mapPath) => resolve(dirname(mapPath), rel),
      ...output,
    });
    failIfUnresolved();
    for (const id of await build.watchFiles) if (!id.startsWith('\0') && isAbsolute(id)) inputs.add(id);
    return chunks.filter((c): c is OutputChunk => c.type === 'chunk');
  };
  const resolution = {
    extensions: [...SOURCE_EXTENSIONS, '.json'], // require('./data') finds data.json, as in Node
    conditionNames: EXPORT_CONDITIONS,
    mainFields: ['browser', 'module', 'main'], // a package's build for browsers, then its ES build
    aliasFields: [['browser']], // the browser field's per-file replacements (a Node-only file -> false)
  };
  const transform = {
    target: 'esnext', // TypeScript and JSX are stripped; the guest runs every newer construct as written
    jsx: { runtime: 'classic' as const }, // React.createElement, as TypeScript's own default
    // A free `Buffer`, as in Node, in any module that names one (and only those: the others pay nothing):
    // an import of the `buffer` built-in's, run before the module's own code, so a top level using it works.
    inject: { Buffer: ['node:buffer', 'Buffer'] as [string, string] },
  };
  try {
    // 1. The author's modules, exactly as written: no statement rolldown believes has no effect (an empty loop,
    //    a busy-wait, a toString side effect) is dropped, no unused export, no variable inlined (tree-shaking
    //    would do all three). Each stays a module of its own, so that it runs when Node would run it, before or
    //    after the packages it imports (a module that lends a global to the next package imported); each import
    //    of a package stays an import of the file it resolved to.
    const packages: Packages = new Map();
    const order = new Map<string, string[]>(); // module -> what it imports, in its own order
    const own = await pass({
      input: entry,
      treeshake: false,
      resolve: resolution,
      transform,
      plugins: [
        ...(options.virtual || options.aliases ? [virtualModules(options)] : []),
        guard(entry, root, base, unresolved, granted, entries, realpath, packages),
        { name: 'kiln-import-order', moduleParsed: (info) => void order.set(info.id, info.importedIds) },
      ],
    }, { preserveModules: true, preserveModulesRoot: root, entryFileNames: '[name].js', virtualDirname: 'kiln-virtual' });
    const used = new Map<string, Set<string>>();
    const idOf = new Map(own.map((c) => [c.fileName, c.facadeModuleId ?? undefined]));
    const authorChunk = new Map(own.flatMap((c) => (c.facadeModuleId ? [[c.facadeModuleId, c.fileName] as const] : [])));
    // Where an import of chunk `c` comes in its module's own order; rolldown's runtime, which no module
    // imports itself, stays first.
    const placeIn = (c: OutputChunk) => (source: string) => {
      const id = source.startsWith(PACKAGE_PREFIX) ? source : idOf.get(posix.normalize(posix.join(posix.dirname(c.fileName), source)));
      return id === undefined ? -1 : (order.get(c.facadeModuleId ?? '') ?? []).indexOf(id);
    };
    const authors = new Map(own.map((c) => [c.fileName, { code: packages.size ? importedNames(c.code, used, placeIn(c)) : c.code, map: c.map }]));
    // 2. The packages, tree-shaken to what the author's modules use of each (and as their sideEffects field
    //    allows): one entry per package file imported, each exporting just that.
    const ids = [...packages.keys()];
    const shaken = ids.length === 0 ? [] : await pass({
      input: Object.fromEntries(ids.map((id, i) => [`p${i}`, `${ENTRY_PREFIX}${i}`])),
      treeshake: true,
      resolve: resolution,
      transform,
      preserveEntrySignatures: 'strict',
      plugins: [packageEntries(ids, packages, used), guard(entry, root, base, unresolved, granted, entries, realpath, undefined, authorChunk)],
    }, { entryFileNames: '[name].js', chunkFileNames: 'shared-[hash].js' });
    // 3. All of it joined into one module, changing nothing: no tree-shaking, so nothing is rewritten. An
    //    `import()` of a bundled file resolves inside it.
    const entryOf = new Map(ids.map((id, i) => [id, `p${i}.js`]));
    const [chunk] = own.length === 1 && ids.length === 0 ? own : await pass({
      input: AUTHOR_PREFIX + own.find((c) => c.isEntry)!.fileName,
      treeshake: false,
      plugins: [joined(authors, new Map(shaken.map((c) => [c.fileName, c])), (id) => entryOf.get(id), (id) => authorChunk.get(id))],
    }, { codeSplitting: false });
    // kiln's built-in implementations by their place in kiln, not on this disk: the artifact does not depend on
    // where kiln is installed.
    const raw = JSON.parse(chunk.map!.toString());
    const map = { ...raw, sources: (raw.sources as string[]).map((f) => kilnSource(f, granted) ?? relative(base, f)) };
    const literal = regexLiteralError(chunk.code, map);
    if (literal) throw new BundleError(`${literal.source !== undefined ? `${literal.source}:${literal.line}:${literal.column! + 1}: ` : ''}${literal.message}`);
    const globals = await freeGlobals(chunk.code, map, (source) => packageOf(resolve(base, source))); // the author's own files: none
    return { code: chunk.code, map, inputs: withManifests([...inputs]), notes: [...entries.lines(), ...globals.map(describeFreeGlobal)] };
  } catch (thrown: any) {
    // Whatever rolldown or a plugin throws, at any stage, fails this file with a message, never the process.
    // rolldown gathers a build's errors in `errors`: an unresolved import among them is said as kiln says it,
    // else the first error is.
    if (thrown instanceof BundleError) throw thrown;
    const errors: any[] = Array.isArray(thrown?.errors) && thrown.errors.length ? thrown.errors : [thrown];
    for (const x of errors) if (x?.code === 'UNRESOLVED_IMPORT') noteUnresolved(x);
    failIfUnresolved();
    const e = errors[0];
    const b = e instanceof BundleError ? e : e?.cause instanceof BundleError ? e.cause : undefined;
    if (b) throw new BundleError(clean(b.message));
    // A file's error that carries no id (a JSON file's) names its file only in the frame rolldown draws,
    // relative to the working directory.
    const framed = /╭─\[ (.+?):\d+:\d+ \]/.exec(uncoloured(String(e?.message ?? '')))?.[1];
    const id: string | undefined = e?.loc?.file ?? e?.id ?? (framed && resolve(framed));
    let message = unaugmented(e) + (e?.cause?.message ? `: ${e.cause.message}` : '');
    if (e?.code === 'JSON_PARSE') message = `not valid JSON: ${message.replace(/ at line \d+ column \d+$/, '')}`;
    const file = relative(base, fileOf(id ?? entry));
    const text = e?.loc ? describe({ message, loc: { ...e.loc, file } } as RolldownLog) : id ? `${file}: ${message}` : message;
    throw new BundleError(clean(text).replaceAll(base + sep, '')); // a plugin may name a file by its absolute path
  } finally {
    for (const p of passes) await p.close();
  }
}
