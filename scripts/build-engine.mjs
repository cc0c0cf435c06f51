#!/usr/bin/env node
// Builds the kiln engine: quickjs-ng (fetched from PyPI, pinned by sha256) + guest/ glue + the prelude's
// source, compiled with Debian's clang/lld/wasi-libc into a wasm32-wasi reactor, pre-initialised by Wizer
// (runtime, context and evaluated prelude in the snapshot), wrapped into a component with jco, and
// transpiled once into host bindings. Every artifact is this component, byte for byte, plus custom sections.
// This file is the procedure; what it changes in quickjs-ng (its pin and patches) and in jco's bindings is data
// in scripts/engine/ (quickjs-patches.mjs, bindings.mjs).
//
// Output (build/engine/, never committed): engine.core.wasm, engine.wasm, bindings/, engine.json.
// Usage: node scripts/build-engine.mjs [--out DIR] [--force] [--prelude FILE]
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { COMMONJS_BINDINGS, LEAN_BINDINGS } from './engine/bindings.mjs';
import { PATCHES, QUICKJS } from './engine/quickjs-patches.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outDir = resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : join(root, 'build/engine'));
const force = args.includes('--force');
// --prelude FILE: an engine whose prelude is FILE's script instead of kiln's (the boundary fuzzer's attacker
// prelude, which holds the raw natives). Never used for the engine kiln serves with.
const preludeOverride = args.includes('--prelude') ? resolve(args[args.indexOf('--prelude') + 1]) : undefined;

const QJS_SOURCES = ['quickjs.c', 'libregexp.c', 'libunicode.c', 'dtoa.c'];
const GLUE_SOURCES = ['glue.c'];
// -Os, not -O2: measured here, the -Os interpreter is both 30 % smaller and faster on call-heavy code (fib
// 42 -> 30 ms, sort 132 -> 110 ms; sieve, JSON and no-op calls within noise): V8 compiles and tiers less code.
const CFLAGS = ['--target=wasm32-wasi', '-Os', '-w', '-fno-ident', '-D_GNU_SOURCE'];
// --max-memory: a hard ceiling on any instance's linear memory (QuickJS's own limit is set lower per
// extension at load); past it malloc fails inside the guest, never on the host.
const LDFLAGS = ['--target=wasm32-wasi', '-mexec-model=reactor', '-Wl,--stack-first',
  '-Wl,-z,stack-size=2097152', '-Wl,--max-memory=536870912', '-Wl,--strip-all', '-lm'];

const WASM_OPT_FEATURES = ['--enable-bulk-memory', '--enable-sign-ext', '--enable-nontrapping-float-to-int', '--enable-mutable-globals', '--enable-multivalue', '--enable-reference-types'];

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const log = (msg) => process.stderr.write(`[engine] ${msg}\n`);

async function fetchQuickjs(cacheDir, workDir) {
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, QUICKJS.url.slice(QUICKJS.url.lastIndexOf('/') + 1));
  if (!existsSync(tgz)) {
    log(`fetching ${QUICKJS.name} ${QUICKJS.version} from PyPI`);
    const res = await fetch(QUICKJS.url);
    if (!res.ok) throw new Error(`fetching ${QUICKJS.url} failed: HTTP ${res.status}`);
    writeFileSync(tgz + '.part', Buffer.from(await res.arrayBuffer()));
    renameSync(tgz + '.part', tgz);
  }
  const actual = sha256(readFileSync(tgz));
  if (actual !== QUICKJS.sha256) {
    rmSync(tgz);
    throw new Error(`${tgz} does not match its pinned sha256 (got ${actual}); refusing to build`);
  }
  const src = join(workDir, 'quickjs-src');
  rmSync(src, { recursive: true, force: true });
  mkdirSync(src, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', src, '--strip-components=2', QUICKJS.dir]);
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

/** The build's data: what it changes in what it fetches (quickjs-ng) and generates (jco's bindings). */
const ENGINE_DATA = ['scripts/engine/quickjs-patches.mjs', 'scripts/engine/bindings.mjs'];

// Everything the engine's bytes depend on; the build is skipped when engine.json records the same hash.
function inputsHash() {
  const h = createHash('sha256');
  // guest/node/ is not the engine's: those modules are bundled into the artifacts that import a Node built-in
  // (host/build/node-builtins.ts), where the build cache hashes them.
  const guestFiles = readdirSync(join(root, 'guest'), { recursive: true, withFileTypes: true }).filter((d) => d.isFile())
    .map((d) => relative(root, join(d.parentPath ?? d.path, d.name))).filter((f) => !f.startsWith(`guest${sep}node${sep}`)).sort();
  const files = [...guestFiles, 'wit/kiln.wit', 'scripts/build-engine.mjs', ...ENGINE_DATA, 'host/engine/wasm-binary.ts'];
  for (const f of files) h.update(f).update(readFileSync(join(root, f)));
  if (preludeOverride) h.update('prelude').update(readFileSync(preludeOverride));
  const version = (p) => JSON.parse(readFileSync(join(root, 'node_modules', p, 'package.json'), 'utf8')).version;
  h.update(JSON.stringify({ jco: version('@bytecodealliance/jco'), rollup: version('@rollup/wasm-node'), binaryen: version('binaryen'), wizer: version('@bytecodealliance/wizer-linux-x64'), clang: execFileSync('clang', ['--version']).toString().split('\n')[0] }));
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
  const src = await fetchQuickjs(join(root, 'build/cache'), work);
  const objDir = join(work, 'obj');
  rmSync(objDir, { recursive: true, force: true });
  mkdirSync(objDir, { recursive: true });
  const guestDir = join(root, 'guest');
  writeFileSync(join(work, 'prelude.c'), preludeC(await preludeSource()));
  // Compile with relative paths from each source directory so no absolute path reaches the binary.
  const jobs = [
    ...QJS_SOURCES.map((f) => ({ cwd: src, argv: [...CFLAGS, '-c', f, '-o', join(objDir, f + '.o')] })),
    ...GLUE_SOURCES.map((f) => ({ cwd: guestDir, argv: [...CFLAGS, '-I', src, '-c', f, '-o', join(objDir, f + '.o')] })),
    { cwd: work, argv: [...CFLAGS, '-c', 'prelude.c', '-o', join(objDir, 'prelude.c.o')] },
  ];
  log(`compiling ${jobs.length} C files with clang`);
  await compileAll(jobs);
  mkdirSync(outDir, { recursive: true });
  const raw = join(work, 'engine.raw.wasm');
  const objs = [...QJS_SOURCES, ...GLUE_SOURCES, 'prelude.c'].map((f) => join(objDir, f + '.o'));
  await run('clang', [...LDFLAGS, ...objs, '-o', raw], objDir);
  // The snapshot: runtime, context and the evaluated prelude, taken once here instead of in every instance.
  const snap = join(work, 'engine.snap.wasm');
  await run(wizerBinary(), ['--allow-wasi', '--init-func', 'kiln-init', '-o', snap, raw], work);
  // binaryen's size optimisations over the whole linked module (clang optimises per file): about 100 KB less
  // code for V8 to compile in every process, at equal speed (measured with bench/peers: fib, sort, sieve).
  const optimised = join(work, 'engine.opt.wasm');
  await run(join(root, 'node_modules/binaryen/bin/wasm-opt'), [...WASM_OPT_FEATURES, '-Os', snap, '-o', optimised], work);
  // Then the data segments (wasm-opt's memory packing splits them again around every run of zeros).
  const { mergeDataSegments, withoutCustomSections } = await import(pathToFileURL(join(root, 'dist/host/engine/wasm-binary.js')).href);
  const merged = mergeDataSegments(readFileSync(optimised), SEGMENT_GAP);
  const core = join(outDir, 'engine.core.wasm');
  writeFileSync(core, merged.module);
  log(`snapshot: ${merged.before} data segments merged into ${merged.after}`);
  const { componentEmbed, componentNew, transpile } = await import('@bytecodealliance/jco');
  const witSource = readFileSync(join(root, 'wit/kiln.wit'), 'utf8');
  const embedded = await componentEmbed({ binary: readFileSync(core), witSource, world: 'extension' });
  const adapter = readFileSync(join(root, 'node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm'));
  // Without the names of the adapter's functions and of the component's parts (16 KB that every artifact
  // would carry; traps still name the export that failed).
  const component = withoutCustomSections(await componentNew(embedded, [['wasi_snapshot_preview1', adapter]]));
  writeFileSync(join(outDir, 'engine.wasm'), component);
  log(`component ${component.length} bytes, sha256 ${sha256(component)}`);
  const bindings = join(outDir, 'bindings');
  rmSync(bindings, { recursive: true, force: true });
  const { files } = await transpile(component, { name: 'engine', instantiation: 'async', noTypescript: true, quiet: true });
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(bindings, name)), { recursive: true });
    if (name === 'engine.js') writeFileSync(join(bindings, 'engine.cjs'), editBindings(Buffer.from(bytes).toString('utf8'), [...LEAN_BINDINGS, ...COMMONJS_BINDINGS]));
    else writeFileSync(join(bindings, name), bytes);
  }
  const info = {
    id: sha256(`kiln-engine\n${sha256(component)}\n`),
    componentSha256: sha256(component),
    quickjs: { name: QUICKJS.name, version: QUICKJS.version, url: QUICKJS.url, sha256: QUICKJS.sha256 },
    inputs,
  };
  writeFileSync(join(outDir, 'engine.json'), JSON.stringify(info, null, 2) + '\n');
  log(`engine id ${info.id}`);
  return info;
}

/** `js` with each of `steps` applied in order (scripts/engine/bindings.mjs): a function step is applied as it
 *  is; an edit replaces `from` (a string, or a regexp) by `to` and must match exactly `count` times (at least
 *  once when `count` is undefined): jco is pinned, so a new jco fails the build here, not at run time. */
function editBindings(js, steps) {
  for (const step of steps) {
    if (typeof step === 'function') {
      js = step(js);
      continue;
    }
    const { from, to, count } = step;
    const n = typeof from === 'string' ? js.split(from).length - 1 : (js.match(from) ?? []).length;
    if (count !== undefined ? n !== count : n === 0) throw new Error(`bindings edit matched ${n} times, expected ${count ?? 'some'}: ${from}`);
    js = typeof from === 'string' ? js.split(from).join(to) : js.replace(from, to);
  }
  return js;
}

/** Data segments closer than this are merged (the zeros between them are written out), and runs of zeros at
 *  least this long are not written at all (memory starts zeroed): Wizer emits one segment per changed
 *  region, and wasm-opt splits them at every run of zeros. 8 is the smallest module (each segment's header
 *  costs about as much as 8 zeros): 5,359 segments, 21 KB less than a gap of 32 (751 segments) at the same
 *  instantiation time, measured here. */
const SEGMENT_GAP = 8;

/** guest/web (bundled) and the prelude's factory as one script whose value is the factory. */
async function preludeSource() {
  if (preludeOverride) return readFileSync(preludeOverride, 'utf8');
  // guest/web/ is ES modules, one concept each; rollup joins them into one function scope (deterministic
  // output, no module loader at run time).
  const { rollup } = await import('@rollup/wasm-node');
  const bundle = await rollup({ input: join(root, 'guest/web/index.js'), treeshake: false, onwarn: (w) => { throw new Error(`guest/web: ${w.message}`); } });
  const { output } = await bundle.generate({ format: 'iife', name: 'kilnWeb', strict: true, indent: false });
  await bundle.close();
  return `(function () {\n${output[0].code}\nconst kilnInstallWeb = kilnWeb.installWeb;\nreturn (\n${readFileSync(join(root, 'guest/prelude.js'), 'utf8')}\n);\n})()`;
}

/** The prelude as a C array, linked into the engine: it belongs to the engine, never to an artifact. */
function preludeC(source) {
  const bytes = Buffer.from(source, 'utf8');
  const lines = [];
  for (let i = 0; i < bytes.length; i += 24) lines.push(Array.from(bytes.subarray(i, i + 24), (b) => `${b}`).join(','));
  return `/* generated by scripts/build-engine.mjs from guest/web/ and guest/prelude.js */\n` +
    `#include <stddef.h>\nchar kiln_prelude_source[] = {\n${lines.join(',\n')},0};\n` +
    `const size_t kiln_prelude_length = ${bytes.length};\n`;
}

function wizerBinary() {
  const bin = join(root, 'node_modules/@bytecodealliance/wizer-linux-x64/wizer');
  if (!existsSync(bin)) throw new Error(`no Wizer binary at ${bin}: run npm ci (the optional package @bytecodealliance/wizer-linux-x64 carries it; the engine is built on x86-64 Linux)`);
  return bin;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildEngine().catch((e) => { console.error(`[engine] build failed: ${e.message}`); process.exit(1); });
}
