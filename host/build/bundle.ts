// Bundling an extension: rollup resolves its whole import graph (relative files, JSON files and node_modules
// packages, preferring a package's browser build), strips TypeScript, tree-shakes, and emits one ES module
// with a source map. No Node builtin may remain: QuickJS has none, and an unresolved import fails the build
// with the importing file named.
import commonjsPlugin from '@rollup/plugin-commonjs';
import jsonPlugin from '@rollup/plugin-json';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import sucrasePlugin from '@rollup/plugin-sucrase';
import { basename, dirname, relative, resolve } from 'node:path';
import { rollup, type Plugin, type RollupLog } from '@rollup/wasm-node';
import { SOURCE_EXTENSIONS } from '../discovery.js';
import { containmentViolation, extensionRoot } from './containment.js';
import { checkNesting, NestingError } from './nesting.js';

// The plugins' type declarations describe their CommonJS shape; at run time the ESM default is the function.
const commonjs = commonjsPlugin as unknown as typeof commonjsPlugin.default;
const sucrase = sucrasePlugin as unknown as typeof sucrasePlugin.default;
const json = jsonPlugin as unknown as typeof jsonPlugin.default;

/** Export conditions besides rollup's ('default', 'module', 'import'/'require'): a package's build for
 *  browsers or web workers is the one that runs without Node builtins. 'production' is named so that the
 *  builder's NODE_ENV never changes an artifact. 'node' is not a condition: its builds need Node. */
const EXPORT_CONDITIONS = ['browser', 'worker', 'production'];


export interface Bundle {
  code: string;
  /** Source map (v3) whose sources are relative to the extension's directory. */
  map: { version: number; sources: string[]; mappings: string; names: string[] };
}

export class BundleError extends Error {
  override name = 'BundleError';
}

function describe(log: RollupLog): string {
  const loc = log.loc ? `${log.loc.file ?? log.id ?? ''}:${log.loc.line}:${log.loc.column + 1}: ` : '';
  return `${loc}${log.message}`;
}

/** Every module the bundle reads must be inside the extension's directory or its node_modules
 *  (containment.ts), and no module may nest deeper than the parsers survive (nesting.ts). This plugin comes
 *  first, so it sees each import before anything reads it and each module's code before anything parses it. */
function guard(entry: string, root: string, base: string): Plugin {
  const refuse = (id: string, why: string, importer?: string) => {
    throw new BundleError(`${importer ? `${relative(base, importer)}: ` : ''}cannot import ${JSON.stringify(id)}: ${why}; ` +
      'an extension may import only files under its own directory and installed packages');
  };
  const virtual = (id: string) => id.startsWith('\0');
  const path = (id: string) => id.replace(/\?.*$/, '');
  const ownModule = (id: string) => !/[\\/]node_modules[\\/]/.test(path(id));
  return {
    name: 'kiln-guard',
    async resolveId(source, importer, options) {
      if (virtual(source)) return null;
      const r = await this.resolve(source, importer, { ...options, skipSelf: true });
      if (!r || r.external || virtual(r.id)) return r;
      const why = importer ? containmentViolation(root, path(r.id)) : undefined;
      if (why) refuse(source, why, !importer || virtual(importer) || importer === entry ? undefined : importer);
      // The author's own modules run exactly as written: rollup drops no statement it believes has no effect
      // (an empty loop, a busy-wait, a toString side effect), nor unused exports. Packages under node_modules
      // are tree-shaken as their sideEffects field allows.
      return ownModule(r.id) ? { ...r, moduleSideEffects: 'no-treeshake' } : r;
    },
    load(id) {
      if (virtual(id)) return null;
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

export async function bundle(file: string): Promise<Bundle> {
  const entry = resolve(file);
  const base = dirname(entry);
  const root = extensionRoot(entry);
  let failure: string | undefined;
  let build;
  try {
    build = await rollup({
      input: entry,
      treeshake: true,
      plugins: [
        guard(entry, root, base),
        nodeResolve({
          extensions: [...SOURCE_EXTENSIONS, '.json'], // require('./data') finds data.json, as in Node
          preferBuiltins: false, // an installed package named like a builtin (events, buffer, punycode) is used
          browser: true, // the browser field: main entry and per-file replacements (a Node-only file -> false)
          exportConditions: EXPORT_CONDITIONS,
        }),
        json({ preferConst: true }),
        commonjs(),
        sucrase({ include: /\.(tsx?|mts|cts|jsx)$/, transforms: ['typescript', 'jsx'], disableESTransforms: true }),
      ],
      onLog(level, log) {
        if (level === 'warn' && log.code === 'UNRESOLVED_IMPORT') {
          failure ??= `${log.exporter ? `cannot import "${log.exporter}"` : log.message}${log.id ? ` (from ${relative(base, log.id)})` : ''}: ` +
            'it is not a file or an installed package, and extensions run in QuickJS with no Node builtins';
        }
      },
    });
  } catch (e: any) {
    if (e instanceof BundleError) throw e;
    if (e?.cause instanceof BundleError) throw e.cause;
    throw new BundleError(e?.loc ? describe({ message: e.message, loc: { ...e.loc, file: relative(base, e.loc.file ?? e.id ?? entry) } } as RollupLog) : String(e?.message ?? e));
  }
  if (failure) throw new BundleError(failure);
  const { output } = await build.generate({
    format: 'es',
    inlineDynamicImports: true, // an artifact is one module: `import()` of a bundled file resolves inside it
    sourcemap: true,
    sourcemapExcludeSources: true,
    sourcemapPathTransform: (rel, mapPath) => relative(base, resolve(dirname(mapPath), rel)),
    file: resolve(base, basename(entry) + '.bundle.js'),
  });
  await build.close();
  const chunk = output[0];
  return { code: chunk.code, map: JSON.parse(chunk.map!.toString()) };
}
