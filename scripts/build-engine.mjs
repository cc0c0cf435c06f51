#!/usr/bin/env node
// Builds the kiln engine: QuickJS (fetched from a registry package, pinned by integrity) + guest/ glue,
// compiled with Debian's clang/lld/wasi-libc into a wasm32-wasi reactor, wrapped into a component with
// jco, transpiled once into host bindings, and the prelude compiled to bytecode by that engine itself.
//
// Output (build/engine/, never committed): engine.core.wasm, engine.wasm, bindings/, prelude.bc,
// engine.json. Usage: node scripts/build-engine.mjs [--out DIR] [--force]
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outDir = resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : join(root, 'build/engine'));
const force = args.includes('--force');

// The QuickJS source we build from. The npm package `qjsc` carries the 2021-03-27 release verbatim.
export const QUICKJS = {
  package: 'qjsc@0.3.0',
  integrity: 'sha512-a7+cU6/IVcZbIejffdt/wZVMX6LL2MDL3HQ9Zb5Gm23G9DvBMS/z9GHFxz39bAvp2PvMOM+ypSOAyokt2DdZ2w==',
  dir: 'package/deps/quickjs_2021_03_27',
  version: '2021-03-27',
};

// Edits applied to the fetched copy (never to anything in git). Each must match exactly `count` times.
const PATCHES = [
  { // Atomics need pthreads, which wasm32-wasi does not have.
    file: 'quickjs.c', count: 1,
    from: '#if !defined(EMSCRIPTEN)\n#define CONFIG_ATOMICS',
    to: '#if !defined(EMSCRIPTEN) && !defined(__wasi__)\n#define CONFIG_ATOMICS' },
  { // wasi-libc's dlmalloc has malloc_usable_size (in <malloc.h>): QuickJS's heap accounting, and so the
    // memory limit, needs the real size of every allocation. (Reporting 0, as the Emscripten build does,
    // counted ~8 bytes per allocation: a guest under a 16 MiB limit kept 400 MiB.)
    file: 'quickjs.c', count: 1,
    from: '#elif defined(__linux__)\n#include <malloc.h>',
    to: '#elif defined(__linux__) || defined(__wasi__)\n#include <malloc.h>' },
  { // The regexp engine never polls for interrupts, so a catastrophic pattern could run for hours: poll the
    // host's deadline every 10000 steps of the backtracking loop (lre_check_timeout is in guest/glue.c).
    file: 'libregexp.c', count: 1,
    from: 'static intptr_t lre_exec_backtrack(REExecContext *s, uint8_t **capture,',
    to: 'int lre_check_timeout(void);\nstatic int lre_poll_counter = 10000;\nstatic intptr_t lre_exec_backtrack(REExecContext *s, uint8_t **capture,' },
  {
    file: 'libregexp.c', count: 1,
    from: '    cbuf_type = s->cbuf_type;\n    cbuf_end = s->cbuf_end;\n\n    for(;;) {\n',
    to: '    cbuf_type = s->cbuf_type;\n    cbuf_end = s->cbuf_end;\n\n    for(;;) {\n        if (--lre_poll_counter <= 0) { lre_poll_counter = 10000; if (lre_check_timeout()) return -1; }\n' },
  { // When memory is so short that even the error cannot be allocated, QuickJS throws null and the host could
    // not tell a guest out of memory from any other failure. Record it (kiln_out_of_memory in guest/glue.c),
    // so a handler that fails after running out of memory is reported as such and its guest discarded.
    file: 'quickjs.c', count: 1,
    from: 'JSValue JS_ThrowOutOfMemory(JSContext *ctx)\n{\n    JSRuntime *rt = ctx->rt;\n',
    to: 'extern int kiln_out_of_memory;\nJSValue JS_ThrowOutOfMemory(JSContext *ctx)\n{\n    JSRuntime *rt = ctx->rt;\n    kiln_out_of_memory = 1;\n' },
  { // Stack overflow is a RangeError in the language everyone else implements (V8's wording).
    file: 'quickjs.c', count: 1,
    from: 'return JS_ThrowInternalError(ctx, "stack overflow");',
    to: 'return JS_ThrowRangeError(ctx, "Maximum call stack size exceeded");' },
];

const QJS_SOURCES = ['quickjs.c', 'libregexp.c', 'libunicode.c', 'cutils.c', 'libbf.c'];
const GLUE_SOURCES = ['glue.c', 'rounding.c'];
const CFLAGS = ['--target=wasm32-wasi', '-O2', '-w', '-fno-ident', '-D_GNU_SOURCE',
  `-DCONFIG_VERSION="${QUICKJS.version}"`, '-DCONFIG_BIGNUM'];
// --max-memory: a hard ceiling on any instance's linear memory (QuickJS's own limit is set lower per
// extension at load); past it malloc fails inside the guest, never on the host.
const LDFLAGS = ['--target=wasm32-wasi', '-mexec-model=reactor', '-Wl,--stack-first',
  '-Wl,-z,stack-size=1048576', '-Wl,--max-memory=536870912', '-Wl,--strip-all', '-lm'];

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const log = (msg) => process.stderr.write(`[engine] ${msg}\n`);

function fetchQuickjs(cacheDir, workDir) {
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, 'qjsc-0.3.0.tgz');
  if (!existsSync(tgz)) {
    log(`fetching ${QUICKJS.package} from the npm registry`);
    execFileSync('npm', ['pack', QUICKJS.package, '--silent', '--pack-destination', cacheDir], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const [algo, expected] = QUICKJS.integrity.split('-');
  const actual = createHash(algo).update(readFileSync(tgz)).digest('base64');
  if (actual !== expected) {
    rmSync(tgz);
    throw new Error(`${QUICKJS.package} does not match its pinned integrity (got ${algo}-${actual}); refusing to build`);
  }
  const src = join(workDir, 'quickjs-src');
  rmSync(src, { recursive: true, force: true });
  mkdirSync(src, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', src, '--strip-components=3', QUICKJS.dir]);
  for (const p of PATCHES) {
    const file = join(src, p.file);
    const text = readFileSync(file, 'utf8');
    const n = text.split(p.from).length - 1;
    if (n !== p.count) throw new Error(`patch for ${p.file} matched ${n} times, expected ${p.count}: ${JSON.stringify(p.from)}`);
    writeFileSync(file, text.split(p.from).join(p.to));
  }
  return src;
}

function run(cmd, argv, cwd) {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, argv, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${cmd} ${argv.join(' ')} exited ${code}`))));
  });
}

async function compileAll(jobs) {
  const queue = [...jobs];
  const workers = Array.from({ length: Math.max(1, cpus().length) }, async () => {
    while (queue.length) { const j = queue.shift(); await run('clang', j.argv, j.cwd); }
  });
  await Promise.all(workers);
}

// Everything the engine's bytes depend on; the build is skipped when engine.json records the same hash.
function inputsHash() {
  const h = createHash('sha256');
  const files = [...readdirSync(join(root, 'guest')).sort().map((f) => join('guest', f)), 'wit/kiln.wit', 'scripts/build-engine.mjs'];
  for (const f of files) h.update(f).update(readFileSync(join(root, f)));
  const jco = JSON.parse(readFileSync(join(root, 'node_modules/@bytecodealliance/jco/package.json'), 'utf8')).version;
  h.update(JSON.stringify({ jco, clang: execFileSync('clang', ['--version']).toString().split('\n')[0] }));
  return h.digest('hex');
}

export async function buildEngine() {
  const inputs = inputsHash();
  const infoFile = join(outDir, 'engine.json');
  if (!force && existsSync(infoFile) && JSON.parse(readFileSync(infoFile, 'utf8')).inputs === inputs) {
    log(`up to date (${outDir})`);
    return JSON.parse(readFileSync(infoFile, 'utf8'));
  }
  // The registry tarball is shared; sources and objects are per output directory, so builds never collide.
  const work = join(outDir, '.work');
  const src = fetchQuickjs(join(root, 'build/cache'), work);
  const objDir = join(work, 'obj');
  rmSync(objDir, { recursive: true, force: true });
  mkdirSync(objDir, { recursive: true });
  const guestDir = join(root, 'guest');
  // Compile with relative paths from each source directory so no absolute path reaches the binary.
  const jobs = [
    ...QJS_SOURCES.map((f) => ({ cwd: src, argv: [...CFLAGS, '-include', join(guestDir, 'wasi-compat.h'), '-c', f, '-o', join(objDir, f + '.o')] })),
    ...GLUE_SOURCES.map((f) => ({ cwd: guestDir, argv: [...CFLAGS, '-I', src, '-c', f, '-o', join(objDir, f + '.o')] })),
  ];
  log(`compiling ${jobs.length} C files with clang`);
  await compileAll(jobs);
  mkdirSync(outDir, { recursive: true });
  const core = join(outDir, 'engine.core.wasm');
  const objs = [...QJS_SOURCES, ...GLUE_SOURCES].map((f) => join(objDir, f + '.o'));
  await run('clang', [...LDFLAGS, ...objs, '-o', core], objDir);
  const { componentEmbed, componentNew, transpile } = await import('@bytecodealliance/jco');
  const witSource = readFileSync(join(root, 'wit/kiln.wit'), 'utf8');
  const embedded = await componentEmbed({ binary: readFileSync(core), witSource, world: 'extension' });
  const adapter = readFileSync(join(root, 'node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm'));
  const component = await componentNew(embedded, [['wasi_snapshot_preview1', adapter]]);
  writeFileSync(join(outDir, 'engine.wasm'), component);
  log(`component ${component.length} bytes, sha256 ${sha256(component)}`);
  const bindings = join(outDir, 'bindings');
  rmSync(bindings, { recursive: true, force: true });
  const { files } = await transpile(component, { name: 'engine', instantiation: 'async', noTypescript: true, quiet: true });
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(bindings, name)), { recursive: true });
    writeFileSync(join(bindings, name), bytes);
  }
  // The prelude is compiled by this very engine, inside the sandbox, so its bytecode matches the build.
  const { Engine, engineId, sha256: hash } = await import(pathToFileURL(join(root, 'dist/host/engine/engine.js')).href);
  const { GuestInstance } = await import(pathToFileURL(join(root, 'dist/host/engine/instance.js')).href);
  const bare = await Engine.load(outDir, { withoutPrelude: true });
  const compiler = await GuestInstance.create(bare, bare.bareMain(), {
    op: async () => { throw new Error('no capabilities while building'); },
    vars: { get: () => undefined, set: () => {}, delete: () => false, keys: () => [] },
    log: (level, message) => log(`prelude ${level}: ${message}`),
  });
  // web.js's installer and the prelude's factory become one script whose value is the factory.
  const preludeSource = `(function () {\n${readFileSync(join(root, 'guest/web.js'), 'utf8')}\nreturn (\n${readFileSync(join(root, 'guest/prelude.js'), 'utf8')}\n);\n})()`;
  const prelude = compiler.compile(preludeSource, 'kiln:prelude', false);
  writeFileSync(join(outDir, 'prelude.bc'), prelude);
  const info = {
    id: engineId(component, prelude),
    componentSha256: hash(component),
    preludeSha256: hash(prelude),
    quickjs: { package: QUICKJS.package, integrity: QUICKJS.integrity, version: QUICKJS.version },
    inputs,
  };
  writeFileSync(join(outDir, 'engine.json'), JSON.stringify(info, null, 2) + '\n');
  log(`engine id ${info.id}`);
  return info;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildEngine().catch((e) => { console.error(`[engine] build failed: ${e.message}`); process.exit(1); });
}
