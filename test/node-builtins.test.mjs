// Node's built-ins in an extension (host/build/node-builtins.ts): every one with no authority resolves, as `x`
// and as `node:x`, and behaves as Node's does on the same file; a free `Buffer` works at the top level (which
// runs at build time) and in a handler; `global` is `globalThis`. The built-ins that carry authority fail the
// build naming the capability that replaces them. The files kiln serves the built-ins from are the only files
// of kiln's an extension reaches: importing another, or the same ones by path or through a symlink, is refused.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { kiln, root, tempDir } from './helpers.mjs';

/** A directory holding `files` ({ relative path: text }). */
function tree(t, files) {
  const dir = tempDir(t);
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  return dir;
}

// One module using each built-in, imported both ways: run by Node as it is, and by kiln as an extension's
// import. Its top level uses a free Buffer as csv-parse's does (a byte-order mark to compare with).
const PROBE = `
import assert from 'assert'; import assert2 from 'node:assert';
import { AsyncLocalStorage } from 'async_hooks'; import * as hooks2 from 'node:async_hooks';
import { Buffer as B } from 'buffer'; import { Buffer as B2 } from 'node:buffer';
import crypto from 'crypto'; import * as crypto2 from 'node:crypto';
import { EventEmitter } from 'events'; import events2 from 'node:events';
import path from 'path'; import path2 from 'node:path';
import proc from 'process'; import proc2 from 'node:process';
import punycode from 'punycode'; import punycode2 from 'node:punycode';
import qs from 'querystring'; import qs2 from 'node:querystring';
import { Readable, Transform } from 'stream'; import stream2 from 'node:stream';
import { StringDecoder } from 'string_decoder'; import * as sd2 from 'node:string_decoder';
import timers from 'timers'; import { setImmediate as si2 } from 'node:timers';
import url from 'url'; import url2 from 'node:url';
import util from 'util'; import util2 from 'node:util';
import strict from 'assert/strict'; import { strictEqual } from 'node:assert/strict'; import { deepStrictEqual } from 'node:assert';
import posix from 'path/posix'; import posix2 from 'node:path/posix';
import { pipeline } from 'stream/promises'; import * as sp2 from 'node:stream/promises';
import { setTimeout as sleep } from 'timers/promises'; import tp2 from 'node:timers/promises';

const BOM = Buffer.from([239, 187, 191]);

export async function probe() {
  const out = {};
  out.same = [assert === assert2, AsyncLocalStorage === hooks2.AsyncLocalStorage, B === B2 && B === Buffer,
    crypto.createHash === crypto2.createHash, EventEmitter === events2.EventEmitter, path === path2, proc === proc2 && proc === process,
    punycode === punycode2, qs === qs2, Readable === stream2.Readable, StringDecoder === sd2.StringDecoder,
    timers.setImmediate === si2, url === url2, util === util2, global === globalThis, deepStrictEqual === assert.deepStrictEqual,
    strict.strictEqual === strictEqual, posix === posix2, pipeline === sp2.pipeline, sleep === tp2.setTimeout];
  try { strict.equal(1, '1'); } catch (e) { out.strict = [e.name, e.code]; }
  out.posix = posix.join('a', '..', 'b');
  const got = [];
  await pipeline(Readable.from(['x', 'y']), new Transform({ transform(c, _e, cb) { cb(null, String(c).toUpperCase()); } }), new stream2.Writable({ write(c, _e, cb) { got.push(String(c)); cb(); } }));
  out.pipeline = got;
  const ac = new AbortController(); const slow = tp2.setTimeout(60_000, 'never', { signal: ac.signal }).catch((e) => [e.name, e.code]); ac.abort();
  out.sleep = [await sleep(1, 'v'), await tp2.setImmediate('i'), await slow];
  try { assert.deepStrictEqual({ a: [1] }, { a: [2] }); } catch (e) { out.assert = [e.name, e.code, e instanceof assert.AssertionError]; }
  const als = new AsyncLocalStorage();
  out.als = [als.getStore(), als.run('outer', () => [als.getStore(), als.run('inner', () => als.getStore()), als.exit(() => als.getStore()), als.getStore()]), als.getStore()];
  out.bom = Buffer.from('\\ufeffa,b').subarray(0, 3).equals(BOM);
  const b = Buffer.concat([Buffer.from('héllo €'), Buffer.alloc(2, 7)]);
  out.buffer = [b.toString('base64'), b.toString('hex'), b.readUInt16BE(1), Buffer.isBuffer(b), Buffer.byteLength('€'), b.toJSON().data.length];
  out.crypto = ['sha1', 'sha256', 'SHA384', 'sha512'].map((a) => crypto.createHash(a).update('ab').update(Buffer.from('c')).digest('hex'));
  const secret = crypto.createSecretKey(Buffer.from('key'));
  out.hmac = [crypto.createHmac('sha256', 'key').update('data').digest('base64'), crypto.createHmac('sha256', secret).update('data').digest('hex'),
    secret instanceof crypto.KeyObject, secret.type, secret.symmetricKeySize, secret.export({ format: 'jwk' }), secret.equals(crypto.createSecretKey('key', 'utf8'))];
  out.random = [crypto.randomBytes(70000).length, /^[0-9a-f-]{36}$/.test(crypto.randomUUID()), crypto.timingSafeEqual(Buffer.from('ab'), Buffer.from('ab'))];
  const e = new EventEmitter(); const seen = []; e.once('x', (v) => seen.push(v)); e.on('x', (v) => seen.push(v * 10)); e.emit('x', 1); e.emit('x', 2);
  out.events = [seen, e.listenerCount('x')];
  out.path = [path.join('/a/b', '../c', 'd.txt'), path.basename('/x/y.tar.gz', '.gz'), path.extname('f.md'), path.relative('/a/b', '/a/c/d'), path.parse('/h/u/f.txt'), path.sep];
  out.process = [typeof proc.nextTick, typeof proc.env];
  out.punycode = [punycode.toASCII('mañana.com'), punycode.toUnicode('xn--maana-pta.com')];
  out.qs = [qs.stringify({ a: [1, 2], b: 'x y', c: '' }), qs.parse('a=1&a=2&b=%20x&c')];
  const upper = new Transform({ transform(chunk, _enc, cb) { cb(null, String(chunk).toUpperCase()); } });
  out.stream = await new Promise((res, rej) => { const got = []; Readable.from(['ab', 'cd']).pipe(upper).on('data', (c) => got.push(String(c))).on('end', () => res(got.join(''))).on('error', rej); });
  const dec = new StringDecoder('utf8'); const euro = Buffer.from('€');
  out.string_decoder = [dec.write(euro.subarray(0, 1)), dec.write(euro.subarray(1)), dec.end()];
  // both fire (which first depends on how long a turn takes, in Node too: not compared)
  out.timers = await Promise.all([new Promise((res) => timers.setTimeout(() => res('timeout'), 1)), new Promise((res) => si2(() => res('immediate')))]);
  const u = url.parse('http://u:p@a.com:8080/p/a?x=1&y=2#h', true);
  out.url = [u.host, u.auth, u.pathname, u.query, u.hash, url.format({ protocol: 'https', host: 'b.org', pathname: '/q' }), url.resolve('http://a.com/b/c', '../d')];
  out.util = [util.format('%s=%d %j %%', 'a', 4, { z: 1 }), util.inspect({ a: [1, { b: 'two' }], c: null }), await util.promisify((x, cb) => cb(null, x + 1))(1), util.types.isDate(new Date())];
  return out;
}
`;

const run = promisify(execFile);

test('every built-in with no authority resolves as x and node:x, and behaves as Node\'s on the same file', async (t) => {
  const dir = tree(t, {
    'probe.mjs': PROBE,
    'main.ts': "import { probe } from './probe.mjs';\n" +
      "const atBuild = typeof Buffer === 'function' && Buffer.from('ok').toString('hex');\n" +
      "defineTool({ name: 'nb.probe', handler: async () => ({ atBuild, free: Buffer.from([1, 2]).readUInt16LE(0), ...(await probe()) }) });\n",
    'node.mjs': "import { probe } from './probe.mjs';\nconsole.log(JSON.stringify({ atBuild: '6f6b', free: 513, ...(await probe()) }));\n",
    'call.js': "await plugins['nb.probe']({})",
  });
  const b = await kiln(['build', join(dir, 'main.ts'), '-o', join(dir, 'main.wasm')]);
  assert.equal(b.code, 0, b.stderr);
  const r = await kiln(['run', join(dir, 'call.js'), join(dir, 'main.wasm')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const node = JSON.parse((await run(process.execPath, [join(dir, 'node.mjs')], { cwd: dir })).stdout);
  assert.deepEqual(JSON.parse(r.stdout), node);
  assert.ok(node.same.every(Boolean) && node.bom, 'the probe checks what it means to');
});

test('a built-in that carries authority fails the build naming the allow.* setting that replaces it', async (t) => {
  const dir = tree(t, {
    'fs.ts': "import { readFileSync } from 'node:fs';\ndefineTool({ name: 'r.fs', handler: () => readFileSync('/etc/hostname', 'utf8') });\n",
    'net.ts': "import net from 'net';\ndefineTool({ name: 'r.net', handler: () => typeof net.connect });\n",
    'exec.ts': "import { execSync } from 'child_process';\ndefineTool({ name: 'r.exec', handler: () => String(execSync('id')) });\n",
    'http.ts': "import get from 'legacy';\ndefineTool({ name: 'r.http', handler: () => get() });\n",
    'node_modules/legacy/package.json': JSON.stringify({ name: 'legacy', version: '2.0.0', main: 'index.js' }),
    'node_modules/legacy/index.js': "const http = require('http');\nconst zlib = require('zlib');\nmodule.exports = () => [http, zlib].length;\n",
  });
  const r = await kiln(['build', ...['fs.ts', 'net.ts', 'exec.ts', 'http.ts'].map((f) => join(dir, f)), '--out-dir', tempDir(t)]);
  assert.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n').sort();
  assert.equal(lines.length, 4, r.stderr);
  const refused = (file, name, by, rest) => new RegExp(`^error: .*\\b${file}: cannot import "${name}" \\(imported by ${by}\\): it is a Node builtin that extensions do not get .*; use ${rest} \\(see docs/extensions\\.md, "Node builtins"\\)`);
  assert.match(lines[0], refused('exec\\.ts', 'child_process', 'exec\\.ts', "a command declared in allow\\.commands, run with the handler's commands\\.run\\(name, vars\\)"));
  assert.match(lines[1], refused('fs\\.ts', 'node:fs', 'fs\\.ts', "the handler's fs \\(ctx\\.fs, shaped like node:fs/promises\\), with allow\\.fs"));
  assert.match(lines[2], refused('http\\.ts', 'http', 'node_modules/legacy/index\\.js, in package legacy@2\\.0\\.0', "fetch or the handler's request, with allow\\.net"));
  assert.match(lines[2], /; also unresolved: "zlib"$/);
  assert.match(lines[3], refused('net\\.ts', 'net', 'net\\.ts', "fetch or the handler's request, with allow\\.net"));
});

test('the files kiln serves built-ins from open nothing else of kiln: by path or through a symlink, kiln\'s files are refused', async (t) => {
  const kilnFile = (rel) => relative('/', join(root, rel));
  const dir = tree(t, {
    // the built-in itself resolves (and brings kiln's buffer files into the same bundle)
    'ok.ts': "import { Buffer } from 'node:buffer';\ndefineTool({ name: 'a.ok', handler: () => Buffer.from('x').toString('hex') });\n",
    // a file the built-in just read, and another of kiln's, by path
    'same.ts': `import { Buffer } from 'node:buffer';\nimport * as b from '/${kilnFile('node_modules/buffer/index.js')}';\ndefineTool({ name: 'a.same', handler: () => String(b.Buffer === Buffer) });\n`,
    'host.ts': `import 'node:events';\nimport * as h from '/${kilnFile('dist/host/build/cache.js')}';\ndefineTool({ name: 'a.host', handler: () => Object.keys(h).join() });\n`,
    // a package of the extension's that is a symlink to kiln's events package
    'linked.ts': "import 'node:events';\nimport { EventEmitter } from 'events';\ndefineTool({ name: 'a.linked', handler: () => typeof EventEmitter });\n",
    'call.js': "await plugins['a.ok']({})",
  });
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(root, 'node_modules/events'), join(dir, 'node_modules/events'));
  const out = tempDir(t);
  const r = await kiln(['build', ...['ok.ts', 'same.ts', 'host.ts', 'linked.ts'].map((f) => join(dir, f)), '--out-dir', out]);
  assert.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n').sort();
  assert.equal(lines.length, 3, r.stderr);
  const outside = (file) => new RegExp(`^error: .*\\b${file}: cannot import .*: .* is outside the extension's directory \\(.*\\) and its node_modules; an extension may import only files under its own directory and installed packages$`);
  assert.match(lines[0], outside('host\\.ts'));
  assert.match(lines[1], outside('linked\\.ts'));
  assert.match(lines[2], outside('same\\.ts'));
  // The built-in's files are build inputs: a source build caches them with the rest (a changed kiln file makes
  // the entry stale), and the artifact is the same wherever the extension and kiln are.
  const cache = join(tempDir(t), 'cache');
  const ok = await kiln(['run', join(dir, 'call.js'), join(dir, 'ok.ts')], { cwd: dir, env: { KILN_BUILD_CACHE: cache } });
  assert.equal(ok.stdout.trim(), '"78"', ok.stderr);
  const entries = readdirSync(cache).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(readFileSync(join(cache, f), 'utf8')));
  assert.ok(entries.some((e) => e.inputs.some(([p]) => p === join(root, 'node_modules/buffer/index.js'))), JSON.stringify(entries));
  const elsewhere = join(tempDir(t), 'a', 'b');
  mkdirSync(elsewhere, { recursive: true });
  copyFileSync(join(dir, 'ok.ts'), join(elsewhere, 'ok.ts'));
  assert.equal((await kiln(['build', 'ok.ts', '-o', 'ok.wasm'], { cwd: elsewhere })).code, 0);
  assert.deepEqual(readFileSync(join(elsewhere, 'ok.wasm')), readFileSync(join(out, 'ok.wasm')));
});
