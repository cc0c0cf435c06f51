// The command line's modules, bundled: `kiln` starts from dist/cli/ (rollup's chunks of dist/host/), because
// Node pays per ES module it resolves and links (≈ 0.5 ms each, ≈ 45 modules for `kiln run`), which a
// one-shot command feels. Code loaded with `await import()` stays in its own chunk, so a subcommand still
// loads only what it needs; npm packages and the engine's bindings stay outside (loaded as they are).
//
// The bundle is CommonJS (dist/cli/package.json says so, and bin/package.json for bin/kiln.js): Node 20's
// ES module loader costs a one-shot process ~15 ms more than `require` for the same code (module jobs,
// linking, a facade per builtin), measured interleaved on `kiln --version` and `kiln run`. So no module of
// the command line may use a top-level await. npm packages are `require`d (every one kiln imports statically
// has a CommonJS entry). Interop "auto": a default import is `exports.default` of a package's CommonJS build
// when it marks itself `__esModule` (@cucumber/tag-expressions: a dual package whose ES build exports that
// default), else `module.exports` (the rollup plugins), which is what Node's ES loader gives for each.
// `import()` of a package stays an `import()`.
// The worker threads' entry modules are entries here too, at the same relative path as in dist/host/engine/
// (remote.ts starts `./worker.js` next to itself; build/pool.ts starts its own module).
//
// dist/host/ stays the source of truth (tests import it). bin/kiln.js uses this bundle only when it is newer
// than dist/host/cli.js, so a `tsc` without this step never runs stale code.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rollup } from '@rollup/wasm-node';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const host = join(root, 'dist/host');
const out = join(root, 'dist/cli');
const builtins = new Set(builtinModules);

const bundle = await rollup({
  input: {
    cli: join(host, 'cli.js'),
    worker: join(host, 'engine/worker.js'),
    'build-pool': join(host, 'build/pool.js'),
  },
  // Only kiln's own compiled modules are bundled: everything imported by a bare name (Node's builtins,
  // npm packages) is loaded as it is.
  external: (id) => id.startsWith('node:') || builtins.has(id) || !(id.startsWith('.') || id.startsWith('/')),
  onwarn: (w) => { throw new Error(`bundle-cli: ${w.message}`); },
  plugins: [{
    // `import()` of a package goes through dist/cli/import.js, which Node's own loader compiles: the chunks
    // are compiled by bin/code-cache.js, and a script compiled from V8's code cache has no `import()` of its
    // own on Node 20. import.js sits beside the chunks, so a package resolves from the same directory.
    name: 'kiln-import-through-node',
    renderDynamicImport({ targetModuleId }) {
      if (targetModuleId && this.getModuleInfo(targetModuleId)?.isExternal) return { left: "require('./import.js')(", right: ')' };
      return null;
    },
  }],
});
rmSync(out, { recursive: true, force: true });
await bundle.write({ dir: out, format: 'cjs', interop: 'auto', entryFileNames: '[name].js', chunkFileNames: 'chunk-[name].js', sourcemap: false });
await bundle.close();
writeFileSync(join(out, 'package.json'), '{ "type": "commonjs" }\n');
writeFileSync(join(out, 'import.js'), [
  "// The chunks' `import()` of a package (scripts/bundle-cli.mjs): compiled by Node's loader, never from a code cache.",
  "'use strict';",
  'module.exports = (specifier) => import(specifier);',
  '',
].join('\n'));
// Every other `import()` was rendered as a `require` of a chunk or through import.js.
for (const f of readdirSync(out)) {
  if (f !== 'import.js' && /\bimport\(/.test(readFileSync(join(out, f), 'utf8').replace(/\/\/.*$/gm, ''))) throw new Error(`bundle-cli: ${f} still has an import()`);
}
