// The one list of Node's built-in modules an extension may import, and of those it may not. A built-in that
// carries no authority (bytes, events, paths, formatting) resolves, as `x` and as `node:x`, to a well-kept npm
// implementation that is one of kiln's own dependencies (package.json pins it), or to a small module of kiln's
// in guest/node/: where the engine already has the thing (process, timers, crypto's entropy and hashes) it
// hands that over, and a subpath (assert/strict, stream/promises) is its package's export of that name. A
// built-in that would carry authority (files, processes, the network) is refused with the capability that
// replaces it. docs/extensions.md's "Node builtins" tables are these lists (test/docs.test.mjs compares them).
// Data and lookups only: bundle.ts resolves.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What a built-in resolves to: an npm package (kiln's dependency) or a file of kiln's under guest/node/. */
export type Implementation = { package: string } | { file: string };

/** Built-ins with no authority, name (without `node:`) -> what serves it. */
export const NODE_BUILTINS: Readonly<Record<string, Implementation>> = Object.freeze({
  assert: { package: 'assert' },
  'assert/strict': { file: 'guest/node/assert-strict.js' },
  async_hooks: { file: 'guest/node/async_hooks.js' },
  buffer: { package: 'buffer' },
  crypto: { file: 'guest/node/crypto.js' },
  events: { package: 'events' },
  path: { package: 'path-browserify' },
  'path/posix': { package: 'path-browserify' },
  process: { file: 'guest/node/process.js' },
  punycode: { package: 'punycode' },
  querystring: { package: 'querystring-es3' },
  stream: { package: 'readable-stream' },
  'stream/promises': { file: 'guest/node/stream-promises.js' },
  string_decoder: { package: 'string_decoder' },
  timers: { file: 'guest/node/timers.js' },
  'timers/promises': { file: 'guest/node/timers-promises.js' },
  url: { package: 'url' },
  util: { package: 'util' },
});

/** Built-ins that would carry authority, name -> the capability that replaces it (named in the build error). */
const FILES = "the handler's fs (ctx.fs, shaped like node:fs/promises), with allow.fs";
const NETWORK = "fetch or the handler's request, with allow.net";
export const REFUSED_BUILTINS: Readonly<Record<string, string>> = Object.freeze({
  fs: FILES,
  'fs/promises': FILES,
  child_process: "a command declared in allow.commands, run with the handler's commands.run(name, vars)",
  http: NETWORK,
  https: NETWORK,
  http2: NETWORK,
  net: NETWORK,
  tls: NETWORK,
  dns: NETWORK,
  dgram: NETWORK,
  os: 'process.platform and process.arch (an extension sees no host details)',
  worker_threads: 'promises and timers in the one instance (an extension has no threads)',
  cluster: 'promises and timers in the one instance (an extension has no threads)',
  vm: 'plain functions (an extension is already sealed in its own engine)',
});

/** The replacement for a refused built-in that is not listed: any other Node built-in. */
export const OTHER_BUILTIN = 'a package made for browsers';

/** Where kiln is: the directory of its package.json (a checkout, or the installed package). */
export const kilnRoot = (() => {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'guest', 'node'))) return dir;
    if (dirname(dir) === dir) throw new Error('kiln: cannot find its own package directory (with guest/node/)');
  }
})();

/** The package a built-in resolves to, with the version installed next to kiln (for the docs and messages). */
export function packageVersion(pkg: string): string {
  const require = createRequire(join(kilnRoot, 'package.json'));
  let dir = dirname(require.resolve(`${pkg}/`)); // the trailing slash: the package, never the builtin
  for (; !existsSync(join(dir, 'package.json')) || JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== pkg; dir = dirname(dir)) {
    if (dirname(dir) === dir) throw new Error(`kiln: cannot find ${pkg}'s package.json`);
  }
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
}

/** An importer for resolving a built-in's package from kiln's own directory (Node's lookup walks up from it). */
export const kilnImporter = join(kilnRoot, 'guest', 'node', 'index.js');
