// allow.fs through a real MCP client: each rule tried by an attacker, with the attack's side effect proven absent
// (no file written, created, truncated or removed outside a granted prefix; nothing outside ever read), and the
// pure checker called directly. The workspace root is `ws`; `outside` is its sibling and holds what no tool may
// reach. No assertion depends on timing: the races assert only that nothing ever escaped.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { call, kiln, mcp, root, tempDir } from './helpers.mjs';

const { fsAllowed } = await import(join(root, 'dist/host/capabilities/fs/path.js'));
const { intersectPrefixes, normalisePrefix, underPrefix } = await import(join(root, 'dist/host/capabilities/fs/prefix.js'));

const SECRET = 'OUTSIDE-SECRET-7f3a';
const TARGET = 'OUTSIDE-TARGET-ORIGINAL';

// One scenario, run by ctx.fs in the guest and by node:fs/promises in Node, in the same directory layout.
const SCENARIO = `async (fs) => {
  const out = [];
  const t = async (f) => {
    try {
      const v = await f();
      out.push(['ok', v instanceof Uint8Array ? Array.from(v) : v === undefined ? null : v]);
    } catch (e) {
      out.push(['err', e.name, e.code, e.message, e.syscall ?? null, e.path ?? null, e.dest ?? null, typeof e.errno]);
    }
  };
  await t(() => fs.writeFile('out/scn/n.txt', 'h\\u00e9llo'));
  await t(() => fs.appendFile('out/scn/n.txt', new Uint8Array([33])));
  await t(() => fs.readFile('out/scn/n.txt', 'utf8'));
  await t(() => fs.readFile('out/scn/n.txt', { encoding: 'utf-8' }));
  await t(() => fs.readFile('out/scn/n.txt'));
  await t(async () => { await fs.mkdir('out/scn/d/e', { recursive: true }); });
  await t(() => fs.mkdir('out/scn/d/e', { recursive: true }));
  await t(() => fs.mkdir('out/scn/d'));
  await t(() => fs.mkdir('out/scn/x/y'));
  await t(async () => (await fs.readdir('out/scn')).sort());
  await t(async () => (await fs.readdir('out/scn', { withFileTypes: true })).map((d) => [d.name, d.isFile(), d.isDirectory(), d.isSymbolicLink()]).sort());
  await t(async () => { const s = await fs.stat('out/scn/n.txt'); return [s.size, s.isFile(), s.isDirectory(), s.isSymbolicLink(), typeof s.mtimeMs, s.mtime instanceof Date]; });
  await t(async () => { const s = await fs.stat('out/scn/d'); return [s.isFile(), s.isDirectory()]; });
  await t(() => fs.stat('out/scn/nope'));
  await t(() => fs.rename('out/scn/n.txt', 'out/scn/d/m.txt'));
  await t(() => fs.rename('out/scn/nope', 'out/scn/d/z.txt'));
  await t(() => fs.readFile('out/scn/n.txt'));
  await t(() => fs.readFile('out/scn/d'));
  await t(() => fs.readFile('out/scn/d/m.txt/'));
  await t(() => fs.writeFile('out/scn/d', 'x'));
  await t(() => fs.writeFile('out/scn/new/', 'x'));
  await t(() => fs.readdir('out/scn/d/m.txt'));
  await t(() => fs.rm('out/scn/d'));
  await t(() => fs.rm('out/scn/nope'));
  await t(() => fs.rm('out/scn/nope', { force: true }));
  await t(() => fs.rm('out/scn/d', { recursive: true }));
  await t(async () => (await fs.readdir('out/scn')).sort());
  await t(() => fs.writeFile('out/scn/e.txt', ''));
  await t(() => fs.readFile('out/scn/e.txt', 'utf8'));
  await t(() => fs.readFile(null));
  await t(() => fs.writeFile('out/scn/z.txt', 42));
  return out;
}`;

const EXTENSION = `
const run = async (fs, a) => {
  try {
    let v;
    if (a.op === 'rename') v = await fs.rename(a.path, a.to);
    else if (a.op === 'writeFile' || a.op === 'appendFile') v = await fs[a.op](a.path, a.bytes ? new Uint8Array(a.bytes) : a.data, a.options);
    else v = await fs[a.op](a.path, a.options);
    if (v instanceof Uint8Array) return { ok: new TextDecoder().decode(v), bytes: v.length };
    if (a.op === 'stat') return { ok: { size: v.size, file: v.isFile(), dir: v.isDirectory() } };
    if (a.op === 'readdir' && a.options && a.options.withFileTypes) return { ok: v.map((d) => [d.name, d.isFile(), d.isDirectory(), d.isSymbolicLink()]) };
    return { ok: v === undefined ? null : v };
  } catch (e) {
    return { error: { name: e.name, code: e.code === undefined ? null : e.code, message: e.message } };
  }
};
defineTool({ name: 'fs.op', exposeAsTool: true, allow: { fs: { read: ['data', 'out', 'ro', 'lnk'], write: ['out', 'lnk'] } }, handler: ({ fs, args }) => run(fs, args) });
defineTool({ name: 'fs.reader', exposeAsTool: true, allow: { fs: { read: ['data'] } }, handler: ({ fs, args }) => run(fs, args) });
defineTool({ name: 'fs.none', exposeAsTool: true, handler: ({ fs, args }) => run(fs, args) });
defineTool({ name: 'fs.scenario', exposeAsTool: true, allow: { fs: { read: ['out'], write: ['out'] } }, handler: ({ fs }) => (${SCENARIO})(fs) });
// Reads n files at once, as Promise.all over a directory's files does.
defineTool({ name: 'fs.parallel', exposeAsTool: true, allow: { fs: { read: ['data'] } }, handler: async ({ fs, args }) =>
  (await Promise.all(Array.from({ length: args.n }, () => fs.readFile('data/a.txt', 'utf8')))).filter((x) => x === 'hello').length });
// Runs the steps n times; tells how each ended and every distinct text a read returned.
defineTool({ name: 'fs.loop', exposeAsTool: true, timeoutMs: 120000, allow: { fs: { read: ['out'], write: ['out'] } }, handler: async ({ fs, args }) => {
  const counts = {};
  const reads = new Set();
  for (let i = 0; i < args.n; i++) {
    for (const step of args.steps) {
      const r = await run(fs, { ...step, path: step.path.replace('{i}', String(i)) });
      const k = r.error ? r.error.name + (r.error.code ? ':' + r.error.code : '') : 'ok';
      counts[k] = (counts[k] || 0) + 1;
      if (!r.error && step.op === 'readFile') reads.add(r.ok);
    }
  }
  return { counts, reads: [...reads] };
} });
`;

let dir, ws, outside, client, stderr, audit;

before(async () => {
  dir = tempDir();
  ws = join(dir, 'ws');
  outside = join(dir, 'outside');
  for (const d of ['ext', 'ws/data/sub', 'ws/data2', 'ws/data-evil', 'ws/out', 'ws/ro', 'ws/lnk', 'outside/dir']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'ext/fsx.ts'), EXTENSION);
  writeFileSync(join(dir, 'ext/ro.ts'), "defineTool({ name: 'fs.ro', exposeAsTool: true, allow: { fs: { read: ['data'] } }, handler: () => 1 });\n");
  writeFileSync(join(dir, 'kiln.toml'), [
    'extensions = ["ext"]',
    '[fs]', 'root = "ws"', 'maxReadBytes = 1024', 'maxWriteBytes = 1024', 'maxReaddirEntries = 50',
    '[audit]', 'path = "audit.jsonl"', '',
  ].join('\n'));
  writeFileSync(join(ws, 'data/a.txt'), 'hello');
  writeFileSync(join(ws, 'data/sub/b.txt'), 'inner');
  writeFileSync(join(ws, 'data2/secret.txt'), SECRET);
  writeFileSync(join(ws, 'data-evil/secret.txt'), SECRET);
  writeFileSync(join(ws, 'data.txt'), SECRET);
  writeFileSync(join(ws, 'ro/existing.txt'), 'read-only');
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(outside, 'target.txt'), TARGET);
  writeFileSync(join(outside, 'dir/secret.txt'), SECRET);
  writeFileSync(join(dir, 'a.txt'), SECRET); // what `data/sub-link/../a.txt` would reach if ".." were the kernel's
  ({ client, stderr } = await mcp(undefined, ['--config', join(dir, 'kiln.toml')]));
  audit = join(dir, 'audit.jsonl');
});

after(async () => {
  await client?.close();
  rmSync(dir, { recursive: true, force: true });
});

const op = async (args, tool = 'fs.op') => {
  const r = await call(client, tool, args);
  assert.equal(r.isError, false, r.text);
  return r.json;
};
/** A refusal: a PermissionError (code EACCES) whose message matches `why`. */
const refused = async (args, why, tool) => {
  const r = await op(args, tool);
  assert.ok(r.error, `${tool ?? 'fs.op'} ${JSON.stringify(args)} was not refused: ${JSON.stringify(r)}`);
  assert.equal(r.error.name, 'PermissionError', JSON.stringify(r));
  assert.equal(r.error.code, 'EACCES');
  if (why) assert.match(r.error.message, why);
  return r.error;
};
/** Every file under `d`, as paths relative to it. */
const files = (d) => readdirSync(d, { recursive: true }).map(String).sort();
const outsideIntact = () => {
  assert.deepEqual(files(outside).filter((f) => !f.startsWith('race')), ['dir', 'dir/secret.txt', 'secret.txt', 'target.txt'], 'something appeared outside');
  assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), SECRET);
  assert.equal(readFileSync(join(outside, 'target.txt'), 'utf8'), TARGET, 'the outside file was written or truncated');
  assert.equal(readFileSync(join(outside, 'dir/secret.txt'), 'utf8'), SECRET);
};

// ---- the pure checker --------------------------------------------------------------------------

test('fsAllowed: the lexical check, called directly', () => {
  const rootDir = '/ws';
  const ok = (access, p, prefixes, expected) => assert.equal(fsAllowed(access, p, prefixes, rootDir), expected, p);
  const no = (access, p, prefixes, why) => assert.throws(() => fsAllowed(access, p, prefixes, rootDir), (e) => e.name === 'PermissionError' && why.test(e.message), p);
  ok('read', 'data/a.txt', ['data'], '/ws/data/a.txt');
  ok('read', 'data', ['data'], '/ws/data');
  ok('read', './data//sub/./x', ['data'], '/ws/data/sub/x');
  ok('read', 'data/sub/../a.txt', ['data'], '/ws/data/a.txt');
  ok('read', 'data/', ['data'], '/ws/data');
  ok('write', 'anything/at/all', ['.'], '/ws/anything/at/all');
  ok('write', '.', ['.'], '/ws');
  ok('read', 'data/%2e%2e/x', ['data'], '/ws/data/%2e%2e/x'); // percent signs are characters, not an encoding
  for (const p of ['/etc/passwd', '//etc/passwd', '/ws/data/a.txt']) no('read', p, ['data'], /is absolute/);
  for (const p of ['..', './..', '../ws/data/a.txt', 'data/../..', 'data/../../outside', 'a/../../x', 'data/sub/../../../x', '.././data']) no('read', p, ['data', '.'], /"\.\." leaves the workspace root/);
  for (const p of ['data2', 'data2/x', 'data-evil/x', 'data.txt', 'dat', 'Data/a.txt', 'data/../data2/x', 'datax']) no('read', p, ['data'], /is not under allow\.fs\.read \("data"\)/);
  no('write', 'data/a.txt', [], /allow\.fs\.write \(none\); add "data\/a\.txt" \(or a directory that holds it\) to allow\.fs\.write/);
  no('read', '', ['data'], /not under/); // the root itself is not under "data"
  // read and write are separate lists: the caller passes the one the operation needs
  assert.equal(fsAllowed('write', 'out/x', ['out'], rootDir), '/ws/out/x');
  // a second list (an operator's grants) is applied by calling it again, worded by its own setting
  assert.throws(() => fsAllowed('write', 'out/x', ['logs'], rootDir, { tool: 't', setting: '[grants."a.ts"] fs' }),
    /tool "t" may not write "out\/x": it is not under \[grants\."a\.ts"\] fs\.write \("logs"\); add "out\/x"/);
  for (const bad of [42, null, undefined, {}, 'a\0b']) assert.throws(() => fsAllowed('read', bad, ['.'], rootDir), (e) => e.name === 'TypeError' && /^ERR_INVALID_ARG/.test(e.fields.code));
});

test('fsAllowed: generated paths never resolve outside their prefix, and agree with POSIX resolution', () => {
  const parts = ['data', 'data2', 'data-evil', 'sub', '..', '.', '', 'x', '%2e%2e', '...', 'data..'];
  let seed = 7;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  let allowed = 0;
  for (let i = 0; i < 5000; i++) {
    const start = ['', '/', 'data/', 'sub/x/', './data/'][rnd(5)];
    const p = start + Array.from({ length: 1 + rnd(6) }, () => parts[rnd(parts.length)]).join('/');
    let got;
    try {
      got = fsAllowed('read', p, ['data', 'sub/x'], '/ws');
    } catch (e) {
      assert.ok(e.name === 'PermissionError', `${p}: ${e}`);
      // refused: it is absolute, climbs above the root, or lies under neither prefix once resolved
      const climbs = p.split('/').reduce((d, s) => (d < 0 ? d : s === '..' ? d - 1 : s && s !== '.' ? d + 1 : d), 0) < 0;
      const r = posix.resolve('/ws', p);
      assert.ok(p.startsWith('/') || climbs || !(r === '/ws/data' || r.startsWith('/ws/data/') || r === '/ws/sub/x' || r.startsWith('/ws/sub/x/')), `wrongly refused ${p}`);
      continue;
    }
    allowed++;
    assert.equal(got, posix.resolve('/ws', p), p);
    assert.ok(got === '/ws/data' || got.startsWith('/ws/data/') || got === '/ws/sub/x' || got.startsWith('/ws/sub/x/'), `${p} -> ${got}`);
  }
  assert.ok(allowed > 100, `only ${allowed} generated paths were allowed: the generator tests nothing`);
});

test('prefixes: normalised, and those that could leave the root refused; intersection of two lists', () => {
  assert.equal(normalisePrefix('./data//'), 'data');
  assert.equal(normalisePrefix('.'), '.');
  assert.equal(normalisePrefix('./'), '.');
  assert.equal(normalisePrefix('a/./b'), 'a/b');
  for (const bad of ['', '/etc', '..', 'a/../b', 'data/..', '../x', 'a\0b', 42]) assert.throws(() => normalisePrefix(bad), /./, String(bad));
  assert.equal(underPrefix('data2', 'data'), false);
  assert.equal(underPrefix('data/x', 'data'), true);
  assert.equal(underPrefix('', '.'), true);
  assert.deepEqual(intersectPrefixes(['data', 'out'], ['data/sub', 'out', 'logs']).sort(), ['data/sub', 'out']);
  assert.deepEqual(intersectPrefixes(['.'], ['logs']), ['logs']);
  assert.deepEqual(intersectPrefixes(['data'], ['data2']), []);
});

// ---- through MCP -------------------------------------------------------------------------------

test('ctx.fs behaves as node:fs/promises does on the same code', { timeout: 60_000 }, async () => {
  rmSync(join(ws, 'out/scn'), { recursive: true, force: true });
  mkdirSync(join(ws, 'out/scn'));
  const guest = (await call(client, 'fs.scenario')).json;
  rmSync(join(ws, 'out/scn'), { recursive: true, force: true });
  mkdirSync(join(ws, 'out/scn'));
  const script = `const fs = require('node:fs/promises'); (${SCENARIO})(fs).then((r) => process.stdout.write(JSON.stringify(r)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { cwd: ws });
  const node = JSON.parse(stdout);
  // Node's recursive mkdir returns an absolute path; kiln's the path under the root (and its Buffer is a Uint8Array).
  assert.equal(guest[6][0], 'ok');
  assert.equal(guest[6][1], null); // nothing was made the second time
  assert.ok(Array.isArray(guest), JSON.stringify(guest));
  // Argument type errors: the same name and code; Node's wording names Buffer and URL, which kiln does not take.
  for (const i of [guest.length - 2, guest.length - 1]) {
    assert.deepEqual(guest[i].slice(0, 3), node[i].slice(0, 3), `step ${i}`);
    guest[i] = node[i] = null;
  }
  assert.deepEqual(guest, node);
  rmSync(join(ws, 'out/scn'), { recursive: true, force: true });
});

test('read and write inside the prefixes work; bytes and utf8; mkdir -p returns the first directory made', async () => {
  assert.deepEqual(await op({ op: 'readFile', path: 'data/a.txt', options: 'utf8' }), { ok: 'hello' });
  assert.deepEqual(await op({ op: 'readFile', path: 'data/a.txt' }), { ok: 'hello', bytes: 5 });
  assert.deepEqual(await op({ op: 'writeFile', path: 'out/w.txt', bytes: [0, 255, 10] }), { ok: null });
  assert.deepEqual([...readFileSync(join(ws, 'out/w.txt'))], [0, 255, 10]);
  assert.deepEqual(await op({ op: 'mkdir', path: 'out/m/n/o', options: { recursive: true } }), { ok: 'out/m' });
  assert.ok(existsSync(join(ws, 'out/m/n/o')));
  assert.deepEqual(await op({ op: 'readdir', path: 'data', options: { withFileTypes: true } }), { ok: [['a.txt', true, false, false], ['sub', false, true, false]] });
  // ".." that stays inside resolves as text: data/sub/../a.txt is data/a.txt
  assert.deepEqual(await op({ op: 'readFile', path: 'data/sub/../a.txt', options: 'utf8' }), { ok: 'hello' });
  rmSync(join(ws, 'out/m'), { recursive: true });
  rmSync(join(ws, 'out/w.txt'));
});

test('Promise.all over more files than run at once: the rest wait their turn, none fails', async () => {
  assert.equal((await call(client, 'fs.parallel', { n: 100 })).json, 100);
});

test('a read-only prefix refuses every write, and nothing is created, changed, moved or removed', async () => {
  const before = files(join(ws, 'ro'));
  await refused({ op: 'writeFile', path: 'ro/new.txt', data: 'x' }, /may not write "ro\/new\.txt": it is not under allow\.fs\.write \("out", "lnk"\); add "ro\/new\.txt" \(or a directory that holds it\) to allow\.fs\.write/);
  await refused({ op: 'appendFile', path: 'ro/existing.txt', data: 'x' }, /not under allow\.fs\.write/);
  await refused({ op: 'writeFile', path: 'ro/existing.txt', data: '' }, /not under allow\.fs\.write/);
  await refused({ op: 'mkdir', path: 'ro/d', options: { recursive: true } });
  await refused({ op: 'rm', path: 'ro/existing.txt', options: { force: true } });
  await refused({ op: 'rm', path: 'ro', options: { recursive: true, force: true } });
  await refused({ op: 'rename', path: 'ro/existing.txt', to: 'out/stolen.txt' });
  writeFileSync(join(ws, 'out/planted.txt'), 'planted');
  await refused({ op: 'rename', path: 'out/planted.txt', to: 'ro/existing.txt' });
  assert.deepEqual(files(join(ws, 'ro')), before);
  assert.equal(readFileSync(join(ws, 'ro/existing.txt'), 'utf8'), 'read-only');
  assert.equal(existsSync(join(ws, 'out/stolen.txt')), false);
  assert.equal(readFileSync(join(ws, 'out/planted.txt'), 'utf8'), 'planted');
  // and a write prefix is not a read prefix: fs.reader reads data only
  await refused({ op: 'readFile', path: 'out/planted.txt' }, /not under allow\.fs\.read \("data"\)/, 'fs.reader');
  rmSync(join(ws, 'out/planted.txt'));
});

test('".." in every spelling, absolute paths and prefix look-alikes reach nothing outside', async () => {
  const reads = [
    'data/../../outside/secret.txt', '../outside/secret.txt', './../outside/secret.txt', 'data/./../../outside/secret.txt',
    'data//..//..//outside//secret.txt', 'data/sub/../../../outside/secret.txt', 'data/../../outside/secret.txt/', '..', './..',
    'data/%2e%2e/%2e%2e/outside/secret.txt', 'data/..%2f..%2foutside/secret.txt', 'data/..\\..\\outside\\secret.txt',
    `/${join(outside, 'secret.txt')}`, join(outside, 'secret.txt'), '/etc/passwd', join(ws, 'data/a.txt'),
    'data2/secret.txt', 'data-evil/secret.txt', 'data.txt', 'data/../data2/secret.txt', 'data/../data-evil/secret.txt',
  ];
  for (const path of reads) {
    const r = await op({ op: 'readFile', path, options: 'utf8' });
    assert.ok(r.error, `${path} was read: ${JSON.stringify(r)}`);
    assert.ok(!JSON.stringify(r).includes(SECRET), path);
    if (!path.includes(dir)) assert.ok(!r.error.message.includes(dir), `${path}: the host's path leaked into the message: ${r.error.message}`);
  }
  for (const path of ['data2', 'data-evil', '..', '.', '/']) assert.ok((await op({ op: 'readdir', path })).error, path);
  // "data/sub/../a.txt" through a symlinked sub is still data/a.txt: ".." is resolved as text, never by the kernel
  symlinkSync(outside, join(ws, 'data/sub-link'));
  assert.deepEqual(await op({ op: 'readFile', path: 'data/sub-link/../a.txt', options: 'utf8' }), { ok: 'hello' });
  rmSync(join(ws, 'data/sub-link'));
  const writes = ['out/../../outside/pwned.txt', '../outside/pwned.txt', 'out/../data/pwned.txt', `${outside}/pwned.txt`, 'out2/pwned.txt', 'out-evil/pwned.txt'];
  for (const path of writes) {
    for (const o of ['writeFile', 'appendFile']) assert.ok((await op({ op: o, path, data: 'PWNED' })).error, `${o} ${path}`);
    assert.ok((await op({ op: 'mkdir', path, options: { recursive: true } })).error, `mkdir ${path}`);
  }
  // percent-encoding is not decoded: these are names made of "%", "2" and "e", inside out/
  assert.deepEqual(await op({ op: 'mkdir', path: 'out/%2e%2e/%2e%2e/outside', options: { recursive: true } }), { ok: 'out/%2e%2e' });
  assert.deepEqual(await op({ op: 'writeFile', path: 'out/%2e%2e/%2e%2e/outside/pwned.txt', data: 'x' }), { ok: null });
  assert.ok(existsSync(join(ws, 'out/%2e%2e/%2e%2e/outside/pwned.txt')));
  rmSync(join(ws, 'out/%2e%2e'), { recursive: true });
  // and a backslash is a character of a name on Linux, not a separator
  assert.deepEqual(await op({ op: 'writeFile', path: 'out/..\\..\\outside\\pwned.txt', data: 'x' }), { ok: null });
  assert.deepEqual(readdirSync(join(ws, 'out')), ['..\\..\\outside\\pwned.txt']);
  rmSync(join(ws, 'out/..\\..\\outside\\pwned.txt'));
  outsideIntact();
  assert.deepEqual(files(join(ws, 'data')), ['a.txt', 'sub', 'sub/b.txt']);
  assert.deepEqual(readdirSync(ws).sort(), ['data', 'data-evil', 'data.txt', 'data2', 'lnk', 'out', 'ro']);
  assert.deepEqual(files(join(ws, 'out')), []);
});

test('a symlink to outside is never followed: file or directory, as the last component or a parent', async () => {
  symlinkSync(join(outside, 'secret.txt'), join(ws, 'data/link-file'));
  symlinkSync(outside, join(ws, 'data/link-dir'));
  symlinkSync(join(outside, 'target.txt'), join(ws, 'out/link-file'));
  symlinkSync(outside, join(ws, 'out/link-dir'));
  symlinkSync(join(ws, 'data'), join(ws, 'out/link-to-data')); // inside the workspace, outside the write prefix
  symlinkSync(join(ws, 'data/sub'), join(ws, 'data/inner')); // inside the read prefix: followed as a parent
  try {
    await refused({ op: 'readFile', path: 'data/link-file' }, /it is a symbolic link, and kiln's fs follows none at the end of a path/);
    await refused({ op: 'stat', path: 'data/link-file' }, /symbolic link/);
    await refused({ op: 'readdir', path: 'data/link-dir' }, /symbolic link/);
    await refused({ op: 'readFile', path: 'data/link-dir/secret.txt' }, /a symbolic link on its way leads outside "data"/);
    await refused({ op: 'readdir', path: 'data/link-dir/dir' }, /leads outside "data"/);
    await refused({ op: 'writeFile', path: 'out/link-file', data: 'PWNED' }, /symbolic link/);
    await refused({ op: 'appendFile', path: 'out/link-file', data: 'PWNED' }, /symbolic link/);
    await refused({ op: 'writeFile', path: 'out/link-dir/pwned.txt', data: 'PWNED' }, /leads outside "out"/);
    await refused({ op: 'writeFile', path: 'out/link-dir/dir/secret.txt', data: 'PWNED' }, /leads outside "out"/);
    await refused({ op: 'mkdir', path: 'out/link-dir/newdir' }, /leads outside/);
    await refused({ op: 'mkdir', path: 'out/link-dir/a/b', options: { recursive: true } }, /leads outside/);
    await refused({ op: 'rm', path: 'out/link-dir/secret.txt' }, /leads outside/);
    await refused({ op: 'rm', path: 'out/link-dir/dir', options: { recursive: true, force: true } }, /leads outside/);
    await refused({ op: 'rename', path: 'out/link-dir/secret.txt', to: 'out/got.txt' }, /leads outside/);
    await refused({ op: 'writeFile', path: 'out/link-to-data/pwned.txt', data: 'PWNED' }, /leads outside "out"/);
    assert.deepEqual((await op({ op: 'readdir', path: 'data', options: { withFileTypes: true } })).ok.filter(([n]) => n.startsWith('link')), [['link-dir', false, false, true], ['link-file', false, false, true]]);
    // a symlink that stays inside the prefix is followed as a parent
    assert.deepEqual(await op({ op: 'readFile', path: 'data/inner/b.txt', options: 'utf8' }), { ok: 'inner' });
    // rm and rename act on the link itself, never on what it points to
    assert.deepEqual(await op({ op: 'rename', path: 'out/link-file', to: 'out/link-file2' }), { ok: null });
    assert.deepEqual(await op({ op: 'rm', path: 'out/link-file2' }), { ok: null });
    assert.deepEqual(await op({ op: 'rm', path: 'out/link-dir', options: { recursive: true } }), { ok: null });
    assert.equal(existsSync(join(ws, 'out/link-dir')), false);
    outsideIntact();
    assert.deepEqual(files(join(ws, 'data')).filter((f) => !f.startsWith('link') && !f.startsWith('inner')), ['a.txt', 'sub', 'sub/b.txt']);
  } finally {
    for (const l of ['data/link-file', 'data/link-dir', 'data/inner', 'out/link-to-data', 'out/link-file', 'out/link-dir', 'out/link-file2']) rmSync(join(ws, l), { force: true });
  }
});

test('a prefix that is itself a symlink (the operator\'s) is followed; a link inside it is judged against its target', async () => {
  // ws/lnk is granted read and write; make it point to a directory outside the workspace the operator chose.
  const chosen = join(dir, 'chosen');
  mkdirSync(join(chosen, 'deep'), { recursive: true });
  rmSync(join(ws, 'lnk'), { recursive: true });
  symlinkSync(chosen, join(ws, 'lnk'));
  symlinkSync(outside, join(chosen, 'deep/escape'));
  try {
    assert.deepEqual(await op({ op: 'writeFile', path: 'lnk/deep/ok.txt', data: 'fine' }), { ok: null });
    assert.equal(readFileSync(join(chosen, 'deep/ok.txt'), 'utf8'), 'fine');
    await refused({ op: 'writeFile', path: 'lnk/deep/escape/pwned.txt', data: 'PWNED' }, /leads outside "lnk"/);
    await refused({ op: 'readFile', path: 'lnk/deep/escape/secret.txt' }, /leads outside "lnk"/);
    outsideIntact();
  } finally {
    rmSync(join(ws, 'lnk'));
    rmSync(chosen, { recursive: true });
    mkdirSync(join(ws, 'lnk'));
  }
});

test('a hard link to an outside file is neither read nor written, and never truncated', async () => {
  linkSync(join(outside, 'secret.txt'), join(ws, 'data/hard.txt'));
  linkSync(join(outside, 'target.txt'), join(ws, 'out/hard.txt'));
  try {
    await refused({ op: 'readFile', path: 'data/hard.txt' }, /it has 2 hard links, and another name of it may lie outside allow\.fs/);
    await refused({ op: 'readFile', path: 'out/hard.txt' }, /hard links/);
    await refused({ op: 'writeFile', path: 'out/hard.txt', data: 'PWNED' }, /hard links/);
    await refused({ op: 'writeFile', path: 'out/hard.txt', data: '' }, /hard links/);
    await refused({ op: 'appendFile', path: 'out/hard.txt', data: 'PWNED' }, /hard links/);
    outsideIntact();
    // removing the name inside is fine: the outside file keeps its content
    assert.deepEqual(await op({ op: 'rm', path: 'out/hard.txt' }), { ok: null });
    assert.equal(existsSync(join(ws, 'out/hard.txt')), false);
    outsideIntact();
  } finally {
    rmSync(join(ws, 'data/hard.txt'), { force: true });
    rmSync(join(ws, 'out/hard.txt'), { force: true });
  }
});

test('rename cannot move anything out of a write prefix, or in from outside one', async () => {
  writeFileSync(join(ws, 'out/x.txt'), 'mine');
  symlinkSync(outside, join(ws, 'out/away'));
  try {
    for (const to of ['data/x.txt', '../outside/x.txt', join(outside, 'x.txt'), 'out/../data/x.txt', 'out/away/x.txt', 'out2/x.txt', 'ro/x.txt']) {
      await refused({ op: 'rename', path: 'out/x.txt', to });
    }
    await refused({ op: 'rename', path: 'data/a.txt', to: 'out/a.txt' }, /may not write "data\/a\.txt"/);
    await refused({ op: 'rename', path: 'out/away/secret.txt', to: 'out/secret.txt' }, /leads outside/);
    assert.equal(readFileSync(join(ws, 'out/x.txt'), 'utf8'), 'mine');
    assert.equal(readFileSync(join(ws, 'data/a.txt'), 'utf8'), 'hello');
    assert.equal(existsSync(join(ws, 'out/a.txt')), false);
    outsideIntact();
    assert.deepEqual(await op({ op: 'rename', path: 'out/x.txt', to: 'out/y.txt' }), { ok: null });
  } finally {
    rmSync(join(ws, 'out/away'), { force: true });
    rmSync(join(ws, 'out/y.txt'), { force: true });
    rmSync(join(ws, 'out/x.txt'), { force: true });
  }
});

test('rm -r of a tree holding symlinks to outside removes the links, never what they point to', async () => {
  mkdirSync(join(ws, 'out/tree/sub/deeper'), { recursive: true });
  writeFileSync(join(ws, 'out/tree/f.txt'), 'f');
  writeFileSync(join(ws, 'out/tree/sub/deeper/g.txt'), 'g');
  symlinkSync(outside, join(ws, 'out/tree/link-dir'));
  symlinkSync(join(outside, 'secret.txt'), join(ws, 'out/tree/sub/link-file'));
  symlinkSync(join(outside, 'dir'), join(ws, 'out/tree/sub/deeper/link-dir2'));
  linkSync(join(outside, 'target.txt'), join(ws, 'out/tree/sub/hard.txt'));
  assert.deepEqual(await op({ op: 'rm', path: 'out/tree', options: { recursive: true } }), { ok: null });
  assert.equal(existsSync(join(ws, 'out/tree')), false);
  outsideIntact();
  assert.deepEqual(await op({ op: 'rm', path: 'out/tree', options: { recursive: true } }).then((r) => r.error?.code), 'ENOENT');
});

test('sizes are capped: reads, writes, appends and directory listings', async () => {
  writeFileSync(join(ws, 'data/1024.bin'), Buffer.alloc(1024, 97));
  writeFileSync(join(ws, 'data/1025.bin'), Buffer.alloc(1025, 97));
  mkdirSync(join(ws, 'data/many'));
  for (let i = 0; i < 51; i++) writeFileSync(join(ws, `data/many/${i}`), '');
  try {
    assert.equal((await op({ op: 'readFile', path: 'data/1024.bin' })).bytes, 1024);
    const big = (await op({ op: 'readFile', path: 'data/1025.bin' })).error;
    assert.deepEqual([big.name, big.code], ['RangeError', 'ERR_FS_FILE_TOO_LARGE']);
    assert.match(big.message, /\[fs\] maxReadBytes \(1024\)/);
    const w = (await op({ op: 'writeFile', path: 'out/big.bin', data: 'a'.repeat(1025) })).error;
    assert.deepEqual([w.name, w.code], ['RangeError', 'ERR_FS_FILE_TOO_LARGE']);
    assert.equal(existsSync(join(ws, 'out/big.bin')), false, 'the refused write created its file');
    writeFileSync(join(ws, 'out/log.txt'), 'start');
    assert.ok((await op({ op: 'appendFile', path: 'out/log.txt', data: 'a'.repeat(1025) })).error);
    assert.ok((await op({ op: 'writeFile', path: 'out/log.txt', data: 'a'.repeat(1025) })).error);
    assert.equal(readFileSync(join(ws, 'out/log.txt'), 'utf8'), 'start', 'the refused write changed the file');
    assert.deepEqual(await op({ op: 'writeFile', path: 'out/log.txt', data: 'b'.repeat(1024) }), { ok: null });
    const many = (await op({ op: 'readdir', path: 'data/many' })).error;
    assert.deepEqual([many.name, many.code], ['RangeError', 'ERR_FS_TOO_MANY_ENTRIES']);
    rmSync(join(ws, 'data/many/50'));
    assert.equal((await op({ op: 'readdir', path: 'data/many' })).ok.length, 50);
  } finally {
    for (const f of ['data/1024.bin', 'data/1025.bin', 'data/many', 'out/log.txt']) rmSync(join(ws, f), { recursive: true, force: true });
  }
});

test('a tool without allow.fs is refused with the setting to add; a sibling\'s grant never leaks to another tool of its file', async () => {
  const e = await refused({ op: 'readFile', path: 'data/a.txt' }, /tool "fs\.none" may not read "data\/a\.txt": it declares no allow\.fs; add allow: \{ fs: \{ read: \["data\/a\.txt"\] \} \} to its manifest/, 'fs.none');
  assert.ok(!e.message.includes('hello'));
  await refused({ op: 'writeFile', path: 'out/none.txt', data: 'x' }, /declares no allow\.fs/, 'fs.none');
  await refused({ op: 'mkdir', path: 'out/none' }, /declares no allow\.fs/, 'fs.none');
  // fs.reader shares its file (its guest, its globals) with fs.op, which may write out/; fs.reader may not
  await refused({ op: 'writeFile', path: 'out/leak.txt', data: 'x' }, /tool "fs\.reader" may not write "out\/leak\.txt": it is not under allow\.fs\.write \(none\)/, 'fs.reader');
  await refused({ op: 'rm', path: 'data/a.txt' }, /tool "fs\.reader" may not write/, 'fs.reader');
  await refused({ op: 'readFile', path: 'ro/existing.txt' }, /tool "fs\.reader" may not read/, 'fs.reader');
  assert.equal(existsSync(join(ws, 'out/none.txt')), false);
  assert.equal(existsSync(join(ws, 'out/none')), false);
  assert.equal(existsSync(join(ws, 'out/leak.txt')), false);
  assert.equal(readFileSync(join(ws, 'data/a.txt'), 'utf8'), 'hello');
  assert.deepEqual(await op({ op: 'readFile', path: 'data/a.txt', options: 'utf8' }, 'fs.reader'), { ok: 'hello' });
});

/** A child process that keeps swapping each `[name, real, target]`: the real entry moved aside (to a name
 *  inside the prefix) and a symlink to `target` put in its place, then back, until the stop file appears. */
function swapper(t, pairs) {
  const stop = join(dir, `stop-${Math.random().toString(36).slice(2)}`);
  const code = `
const { renameSync, rmSync, symlinkSync, unlinkSync, existsSync } = require('node:fs');
const [stop, pairs] = [process.argv[1], JSON.parse(process.argv[2])];
// The guest may make the name anew in a gap (writeFile creates a missing file, mkdir -p a missing directory):
// what it made is inside the prefix and is removed to put the link or the real entry back.
const retry = (f, name) => { for (;;) { try { return f(); } catch (e) { if (!['EEXIST', 'ENOTEMPTY', 'EISDIR', 'ENOTDIR'].includes(e.code)) throw e; try { rmSync(name, { recursive: true, force: true }); } catch {} } } };
let n = 0;
for (;;) {
  for (const [name, hidden, target] of pairs) { renameSync(name, hidden); retry(() => symlinkSync(target, name), name); }
  for (const [name, hidden] of pairs) { unlinkSync(name); retry(() => renameSync(hidden, name), name); }
  if (++n % 50 === 0 && existsSync(stop)) break;
}
process.stdout.write(String(n));`;
  const child = spawn(process.execPath, ['-e', code, stop, JSON.stringify(pairs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise((r) => child.on('exit', r));
  t.after(() => child.kill('SIGKILL'));
  return async () => {
    writeFileSync(stop, '');
    await done;
    return Number(out);
  };
}

test('a symlink swapped in and out while the guest writes and reads in a loop never lets anything through', { timeout: 180_000 }, async (t) => {
  const race = join(outside, 'race');
  mkdirSync(join(race, 'victim'), { recursive: true });
  writeFileSync(join(race, 'secret.txt'), SECRET);
  writeFileSync(join(race, 'victim/keep.txt'), 'keep');
  writeFileSync(join(outside, 'race-target.txt'), TARGET);
  mkdirSync(join(ws, 'out/sw'));
  writeFileSync(join(ws, 'out/sw/inside.txt'), 'inside');
  writeFileSync(join(ws, 'out/swf'), 'inside-file');
  const stop = swapper(t, [
    [join(ws, 'out/sw'), join(ws, 'out/.sw-real'), race], // a directory, as a parent
    [join(ws, 'out/swf'), join(ws, 'out/.swf-real'), join(outside, 'race-target.txt')], // a file, as the last component
  ]);
  const steps = [
    { op: 'writeFile', path: 'out/sw/w{i}.txt', data: 'PWNED' },
    { op: 'readFile', path: 'out/sw/secret.txt', options: 'utf8' },
    { op: 'mkdir', path: 'out/sw/d{i}/e', options: { recursive: true } },
    { op: 'rm', path: 'out/sw/victim', options: { recursive: true, force: true } },
    { op: 'appendFile', path: 'out/swf', data: 'PWNED' },
    { op: 'writeFile', path: 'out/swf', data: 'inside-file' },
    { op: 'readFile', path: 'out/swf', options: 'utf8' },
  ];
  const r = await call(client, 'fs.loop', { n: 300, steps });
  const swaps = await stop();
  assert.equal(r.isError, false, r.text);
  assert.ok(swaps > 0, 'the swapper failed');
  t.diagnostic(`${swaps} swaps; outcomes ${JSON.stringify(r.json.counts)}`);
  assert.deepEqual(r.json.reads.filter((x) => x.includes(SECRET) || x.includes(TARGET)), [], 'an outside file was read');
  assert.deepEqual(files(race), ['secret.txt', 'victim', 'victim/keep.txt'], 'something was written into or removed from the outside directory');
  assert.equal(readFileSync(join(race, 'secret.txt'), 'utf8'), SECRET);
  assert.equal(readFileSync(join(outside, 'race-target.txt'), 'utf8'), TARGET, 'the outside file was written through the swapped link');
  const total = Object.values(r.json.counts).reduce((a, b) => a + b, 0);
  assert.equal(total, 300 * steps.length);
  outsideIntact();
  rmSync(race, { recursive: true });
  rmSync(join(outside, 'race-target.txt'));
  for (const f of ['out/sw', 'out/.sw-real', 'out/swf', 'out/.swf-real']) rmSync(join(ws, f), { recursive: true, force: true });
});

test('fs decisions reach the audit log, with the path and never the content', async () => {
  await op({ op: 'writeFile', path: 'out/audited.txt', data: 'AUDIT-CONTENT-MARK' });
  await op({ op: 'readFile', path: 'out/audited.txt' });
  await op({ op: 'rename', path: 'out/audited.txt', to: 'out/audited2.txt' });
  await op({ op: 'readFile', path: 'data2/secret.txt' });
  await op({ op: 'rm', path: 'out/audited2.txt' });
  const text = readFileSync(audit, 'utf8');
  const decisions = text.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.type === 'decision' && /audited|data2/.test(r.target));
  assert.deepEqual(decisions.map((r) => [r.tool, r.op, r.target, r.verdict]).slice(-5), [
    ['fs.op', 'fs.writeFile', 'out/audited.txt', 'allow'],
    ['fs.op', 'fs.readFile', 'out/audited.txt', 'allow'],
    ['fs.op', 'fs.rename', 'out/audited.txt -> out/audited2.txt', 'allow'],
    ['fs.op', 'fs.readFile', 'data2/secret.txt', 'deny'],
    ['fs.op', 'fs.rm', 'out/audited2.txt', 'allow'],
  ]);
  assert.match(decisions.at(-2).reason, /not under allow\.fs\.read/);
  assert.equal(text.includes('AUDIT-CONTENT-MARK'), false, 'file content reached the audit log');
  assert.equal(text.includes(SECRET), false);
});

test('annotations and kiln_extensions show allow.fs: a write prefix makes a tool destructive, reads alone do not', async () => {
  const { tools } = await client.listTools();
  const hints = (name) => tools.find((x) => x.name === name).annotations;
  assert.equal(hints('fs.op').readOnlyHint, false);
  assert.equal(hints('fs.op').destructiveHint, true);
  assert.equal(hints('fs.none').readOnlyHint, false, 'its file holds a tool that writes');
  assert.equal(hints('fs.ro').readOnlyHint, true);
  assert.equal(hints('fs.ro').openWorldHint, false);
  const report = (await call(client, 'kiln_extensions')).json;
  assert.deepEqual(report.operator.fs, {
    root: ws, maxReadBytes: 1024, maxWriteBytes: 1024, maxWriteBytesPerCall: 64 * 1024 * 1024, maxWriteBytesPerSession: 1024 ** 3, maxReaddirEntries: 50,
  });
  const op = report.extensions.flatMap((e) => e.tools).find((x) => x.name === 'fs.op');
  assert.deepEqual(op.allow.fs, { read: ['data', 'out', 'ro', 'lnk'], write: ['out', 'lnk'] });
  assert.deepEqual([op.declared['fs.read'], op.declared['fs.write']], [op.allow.fs.read, op.allow.fs.write]);
  assert.deepEqual([op.granted['fs.read'], op.granted['fs.write']], [null, null], 'no grant: not narrowed');
  assert.deepEqual([op.effective['fs.read'], op.effective['fs.write']], [op.allow.fs.read, op.allow.fs.write]);
  assert.equal(stderr().includes('not loaded'), false, stderr());
});

test('allow.fs and [fs] are validated: unknown keys, absolute prefixes, ".." and bad settings are refused', { timeout: 60_000 }, async (t) => {
  const d = tempDir(t);
  const bad = {
    'typo.ts': "{ wirte: ['out'] }",
    'abs.ts': "{ read: ['/etc'] }",
    'dots.ts': "{ write: ['out/../..'] }",
    'list.ts': "{ read: 'data' }",
    'shape.ts': "['data']",
    'fskey.ts': null,
  };
  for (const [f, fs] of Object.entries(bad)) {
    const allow = fs === null ? "{ fss: { read: ['x'] } }" : `{ fs: ${fs} }`;
    writeFileSync(join(d, f), `defineTool({ name: 'v.${f.slice(0, -3)}', exposeAsTool: true, allow: ${allow}, handler: () => 1 });`);
  }
  writeFileSync(join(d, 'good.ts'), "defineTool({ name: 'v.good', exposeAsTool: true, allow: { fs: { read: ['./data/', 'data'], write: ['.'] } }, handler: () => 1 });");
  const { client: c, stderr: err } = await mcp(t, [d]);
  const names = (await c.listTools()).tools.map((x) => x.name).filter((n) => n.startsWith('v.'));
  assert.deepEqual(names, ['v.good']);
  const e = err();
  assert.match(e, /allow\.fs has an unknown key "wirte" \(did you mean "write"\?\)/);
  assert.match(e, /allow\.fs\.read: "\/etc" is absolute; prefixes are relative to the operator's workspace root/);
  assert.match(e, /allow\.fs\.write: "out\/\.\.\/\.\." contains "\.\."/);
  assert.match(e, /allow\.fs\.read must be an array/);
  assert.match(e, /allow\.fs must be an object/);
  assert.match(e, /allow\.fss is not a capability kiln knows \(did you mean "fs"\?\)/);
  const good = (await call(c, 'kiln_extensions')).json.extensions.flatMap((x) => x.tools).find((x) => x.name === 'v.good');
  assert.deepEqual(good.allow.fs, { read: ['data'], write: ['.'] });
  // kiln inspect shows the prefixes of an artifact
  const wasm = join(d, 'good.wasm');
  assert.equal((await kiln(['build', join(d, 'good.ts'), '-o', wasm])).code, 0);
  assert.match((await kiln(['inspect', wasm])).stdout, /\n {4}fs {11}read: data; write: \.\n/);
  for (const [section, message] of [
    ['[fs]\nbogus = 1', /\[fs\] has an unknown key "bogus"/],
    ['[fs]\nmaxReadBytes = 0', /\[fs\] maxReadBytes must be a positive integer/],
    ['[fs]\nmaxWriteBytesPerCall = 0', /\[fs\] maxWriteBytesPerCall must be a positive integer up to 1 GiB/],
    ['[fs]\nmaxWriteBytesPerSession = 1.5', /\[fs\] maxWriteBytesPerSession must be a positive integer up to 1 TiB/],
    ['[fs]\nroot = 5', /\[fs\] root must be a directory path/],
    ['fs = 1', /\[fs\] must be a table/],
  ]) {
    writeFileSync(join(d, 'kiln.toml'), `${section}\n`);
    const r = await kiln(['mcp', '--config', join(d, 'kiln.toml')]);
    assert.notEqual(r.code, 0, section);
    assert.match(r.stderr, message);
  }
});
