// V8's code cache for the bundled command line (dist/cli/): a one-shot `kiln` spends more CPU parsing and
// compiling its own JavaScript (the chunks at load, then each function at its first call) than on anything
// else. Each chunk is compiled here as Node's loader would, with the bytecode V8 produced for it in an
// earlier run; after the command (at exit, so the functions it called are in it) the chunks that had none
// get one.
//
// Invariants:
//  - A cache is used only for the exact source it was made from: its file is named by the sha256 of that
//    source, of Node's version and architecture, and of the V8 flags' state (a flag changed at run time, see
//    beforeV8Flags, makes V8 refuse caches made without it, so each state has its own); each command has its
//    own (a chunk's cache holds the functions the command that made it ran: `kiln build`'s would leave
//    `kiln run`'s to be compiled every time); and a cache is used only when its
//    bytes hash to the sha256 stored at its start (a truncated or damaged file is not handed to V8). V8
//    checks its own version, flags and the source's length as well, and compiles from source when it refuses.
//  - In kiln's own cache directory (paths.ts `cacheDir`: build/cache in a checkout, else the user's cache),
//    never a shared temporary one: bytecode there runs as kiln.
//  - Behaviour is Node's: the same module wrapper, `require` and `this`. A chunk has no `import()` of its own
//    (on Node 20 a script compiled from a code cache loses it): scripts/bundle-cli.mjs routes each through
//    dist/cli/import.js, which Node compiles, and refuses a bundle with any other. A cache that cannot be
//    read or written changes nothing but the time.
'use strict';
const { createHash } = require('node:crypto');
const { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { homedir } = require('node:os');
const { basename, dirname, join } = require('node:path');
const { Script } = require('node:vm');

const sha256 = (b) => createHash('sha256').update(b).digest();

/** paths.ts `cacheDir`, for this file's package. */
function cacheDir(root) {
  if (existsSync(join(root, 'scripts', 'build-engine.mjs'))) return join(root, 'build', 'cache');
  const base = process.env.XDG_CACHE_HOME && process.env.XDG_CACHE_HOME.startsWith('/') ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'kiln-mcp');
}

/** Compile the modules in `bundleDir` with V8's code cache from now on in this process. */
function useCodeCache(bundleDir, root) {
  const dir = join(cacheDir(root), 'cli-v8');
  const prefix = bundleDir + '/';
  /** Scripts compiled without a usable cache: [script, cache file]. */
  let pending = [];
  let flagsChanged = false;
  const command = /^[a-z][a-z-]{0,15}$/.test(process.argv[2] ?? '') ? process.argv[2] : 'other';

  const write = () => {
    const made = pending;
    pending = [];
    if (made.length === 0) return;
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
    } catch {
      return; // a read-only cache directory: no cache is made (making one costs a few ms)
    }
    for (const [script, file] of made) {
      try {
        const data = script.createCachedData();
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, Buffer.concat([sha256(data), data]));
        renameSync(tmp, file);
        // The chunk's caches for other sources in the same state (command, flags) go.
        const [chunk, , state] = basename(file).split('.').slice(-4);
        for (const f of readdirSync(dir)) {
          const [c, , s, ext] = f.split('.').slice(-4);
          if (ext === 'v8' && c === chunk && s === state && join(dir, f) !== file) rmSync(join(dir, f), { force: true });
        }
      } catch {
        // not cached: the next run compiles it again
      }
    }
  };
  // Caches are made under the flags the scripts were compiled with: before they change, and at exit.
  globalThis[Symbol.for('kiln.beforeV8Flags')] = () => {
    write();
    flagsChanged = true;
  };
  process.on('exit', write);

  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    if (!filename.startsWith(prefix) || filename === `${prefix}import.js`) return compile.call(this, content, filename);
    const source = Module.wrap(content);
    const state = `${command}-${flagsChanged ? 'f1' : 'f0'}`;
    const key = sha256(`${process.version}\0${process.arch}\0${state}\0${source}`).toString('hex').slice(0, 32);
    const file = join(dir, `${basename(filename, '.js')}.${key}.${state}.v8`);
    let cachedData;
    try {
      const bytes = readFileSync(file);
      if (bytes.length > 32 && sha256(bytes.subarray(32)).equals(bytes.subarray(0, 32))) cachedData = bytes.subarray(32);
    } catch {
      // none yet
    }
    const script = new Script(source, { filename, cachedData });
    if (!cachedData || script.cachedDataRejected) pending.push([script, file]);
    const fn = script.runInThisContext({ displayErrors: true });
    const mod = this;
    const require = (id) => mod.require(id);
    require.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
    require.resolve.paths = (request) => Module._resolveLookupPaths(request, mod);
    require.main = process.mainModule;
    require.extensions = Module._extensions;
    require.cache = Module._cache;
    return fn.call(mod.exports, mod.exports, require, mod, filename, dirname(filename));
  };
}

module.exports = { useCodeCache };
