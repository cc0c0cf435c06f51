// Unit tests of allow.fs's one decision (host/capabilities/fs/policy.ts decideFs), called directly: the
// manifest's prefixes, the operator's files and the build inputs it protects, the grant, and the approvals
// outcome; and the checked value it hands the performer. The workspace is a temp directory (the protections are
// judged on real paths); approvals and the listing below a directory are recorded stubs.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decideFs, realRel } from '../../../../dist/host/capabilities/fs/policy.js';
import { FsError, FsPermissionError } from '../../../../dist/host/capabilities/fs/errors.js';
import { NO_GRANTS, NotGrantedError } from '../../../../dist/host/policy/grants.js';

const EXT = { file: '/nowhere/notes.ts', sha256: 'ab'.repeat(32) };

function workspace(t) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'kiln-fs-policy-')));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** A decision context over `root`, recording what approvals were asked and what was listed. */
function context(root, over = {}) {
  const asked = [];
  const listed = [];
  const c = {
    tool: 'notes', extension: EXT, allow: { read: ['data'], write: ['out'] }, grants: NO_GRANTS, root,
    protectedFiles: [], buildInputs: new Map(), judgesPaths: false,
    approve: async (request, forced) => void asked.push(forced ? { request, forced } : { request }),
    listBelow: async (path) => {
      listed.push(path);
      return ['out/tree/a', 'out/tree/b'];
    },
    ...over,
  };
  return { c, asked, listed };
}

const grants = (mode, fs) => ({ mode, extensions: { [`sha256:${EXT.sha256}`]: { fs } }, spelled: { [`sha256:${EXT.sha256}`]: `sha256:${EXT.sha256}` }, file: '/etc/kiln.toml' });

test('the checked value: each path parsed once, with the access, the spelling the guest used and every prefix that holds it, most specific first', async (t) => {
  const root = workspace(t);
  const { c, asked } = context(root, { allow: { read: ['data', 'data/sub'], write: [] } });
  const op = await decideFs('fs.readFile', { path: 'data/./sub//x.txt' }, undefined, c);
  assert.deepEqual(op, {
    kind: 'fs.readFile',
    path: {
      tool: 'notes', access: 'read', shown: 'data/./sub//x.txt', rel: 'data/sub/x.txt', namesDirectory: false, root,
      places: [{ prefix: 'data/sub', rest: 'x.txt' }, { prefix: 'data', rest: 'sub/x.txt' }],
    },
    recursive: false, force: false, withFileTypes: false, writes: [],
  });
  assert.deepEqual(asked, [{ request: { op: 'fs.read', path: 'data/sub/x.txt' } }], 'approvals judged the parsed path, once');
});

test('options and what the operation writes: readdir, mkdir -p (the first directory it makes), writeFile with its size, a trailing slash', async (t) => {
  const root = workspace(t);
  mkdirSync(join(root, 'out'));
  const { c, asked } = context(root);
  const dir = await decideFs('fs.readdir', { path: 'data/', withFileTypes: true }, undefined, c);
  assert.equal(dir.withFileTypes, true);
  assert.equal(dir.path.namesDirectory, true);
  assert.equal(dir.path.rel, 'data');
  const mk = await decideFs('fs.mkdir', { path: 'out/a/b', recursive: true }, undefined, c);
  assert.equal(mk.recursive, true);
  assert.deepEqual(mk.writes, [join(root, 'out/a')]);
  const w = await decideFs('fs.writeFile', { path: 'out/f.txt' }, 12, c);
  assert.deepEqual(w.writes, [join(root, 'out/f.txt')]);
  assert.deepEqual(asked.at(-1), { request: { op: 'fs.write', path: 'out/f.txt', size: 12 } });
  const rm = await decideFs('fs.rm', { path: 'out/f.txt', force: true }, undefined, c);
  assert.equal(rm.force, true);
  assert.deepEqual(rm.writes, []);
  assert.equal(asked.at(-1).request.op, 'fs.delete');
});

test('a tool without allow.fs is refused with the manifest line to add; nobody is asked', async (t) => {
  const root = workspace(t);
  const { c, asked } = context(root, { allow: undefined });
  await assert.rejects(decideFs('fs.writeFile', { path: 'logs/./x' }, 1, c), (e) => e instanceof FsPermissionError &&
    e.message === 'tool "notes" may not write "logs/./x": it declares no allow.fs; add allow: { fs: { write: ["logs/x"] } } to its manifest');
  await assert.rejects(decideFs('fs.readFile', { path: 7 }, undefined, c), (e) => e instanceof FsError && e.fields.code === 'ERR_INVALID_ARG_TYPE');
  assert.deepEqual(asked, []);
});

test('the manifest first: a path outside its prefixes, in the wrong list, or malformed is refused before anything is asked', async (t) => {
  const root = workspace(t);
  const { c, asked } = context(root);
  await assert.rejects(decideFs('fs.writeFile', { path: 'data/x' }, 1, c), (e) => e instanceof FsPermissionError &&
    e.message === 'tool "notes" may not write "data/x": it is not under allow.fs.write ("out"); add "data/x" (or a directory that holds it) to allow.fs.write');
  await assert.rejects(decideFs('fs.readFile', { path: 'out2/x' }, undefined, c), /not under allow\.fs\.read \("data"\)/);
  await assert.rejects(decideFs('fs.readFile', { path: 'data/../../x' }, undefined, c), /"\.\." leaves the workspace root/);
  await assert.rejects(decideFs('fs.rename', { from: 'out/a', to: 'data/a' }, undefined, c), /may not write "data\/a": it is not under allow\.fs\.write/, 'both paths of a rename');
  await assert.rejects(decideFs('fs.rename', { from: 'out/a', to: null }, undefined, c), (e) => e.name === 'TypeError');
  assert.deepEqual(asked, []);
});

test("the operator's files, /proc and the build inputs are protected on real paths, whatever the prefixes", async (t) => {
  const root = workspace(t);
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'kiln.toml'), '');
  writeFileSync(join(root, 'src/lib.js'), '');
  symlinkSync(join(root, 'src'), join(root, 'alias'));
  const { c, asked } = context(root, {
    allow: { read: ['.'], write: ['.'] }, protectedFiles: [join(root, 'kiln.toml')],
    buildInputs: new Map([[join(root, 'src/lib.js'), join(root, 'ext.ts')]]),
  });
  const operators = /it is, holds or lies in one of the operator's files \(the config, the approvals store, the audit log, the extensions kiln loads, the build cache\), which no tool may touch$/;
  await assert.rejects(decideFs('fs.readFile', { path: 'kiln.toml' }, undefined, c), operators);
  await assert.rejects(decideFs('fs.rm', { path: '.', recursive: true }, undefined, c), operators, 'a directory that holds one');
  await assert.rejects(decideFs('fs.writeFile', { path: 'src/lib.js' }, 1, c), (e) => e instanceof FsPermissionError &&
    e.message === 'tool "notes" may not write "src/lib.js": it is read by the build of "ext.ts", a loaded extension; no tool may change the code an extension\'s grant was given to (no setting allows it: the operator edits such files by hand)');
  await assert.rejects(decideFs('fs.rename', { from: 'alias', to: 'gone' }, undefined, c), /may not write "alias": it holds "src\/lib\.js", which is read by the build of "ext\.ts"/, 'through a symlink too');
  assert.deepEqual(asked, [], 'nobody is asked about what is refused');
  const read = await decideFs('fs.readFile', { path: 'alias/lib.js' }, undefined, c);
  assert.equal(read.path.rel, 'alias/lib.js', 'a build input may be read');
  assert.deepEqual(asked, [{ request: { op: 'fs.read', path: 'alias/lib.js', realPath: 'src/lib.js' } }], 'approvals get the real path beside it');

  const system = context('/', { allow: { read: ['proc'], write: [] } }).c;
  await assert.rejects(decideFs('fs.readFile', { path: 'proc/self/environ' }, undefined, system), /may not read "proc\/self\/environ": it is in \/proc, which describes the server itself and is never served/);
});

test('the grant narrows the prefixes: mode "granted" refuses with the grant line; what runs is declared ∩ granted', async (t) => {
  const root = workspace(t);
  const { c, asked } = context(root, { grants: grants('granted', { write: ['out/sub'] }) });
  await assert.rejects(decideFs('fs.writeFile', { path: 'out/x' }, 1, c), (e) => e instanceof NotGrantedError && !e.askable &&
    e.message.includes('declares fs.write "out/x", but the operator has not granted it') && e.message.includes('to allow it, add "out/x" to fs.write in [grants."sha256:'));
  assert.deepEqual(asked, []);
  const op = await decideFs('fs.writeFile', { path: 'out/sub/y' }, 1, c);
  assert.deepEqual(op.path.places, [{ prefix: 'out/sub', rest: 'y' }], 'reached only from the intersection');
  const none = context(root, { grants: grants('granted', {}) }).c;
  await assert.rejects(decideFs('fs.readFile', { path: 'data/x' }, undefined, none), NotGrantedError, 'a grant that lists no fs.read grants none');
});

test('mode "ask": a declared path the grant does not list is one question with the grant line; a yes runs it under what is declared, a no refuses', async (t) => {
  const root = workspace(t);
  const { c, asked } = context(root, { grants: grants('ask', { write: ['out/sub'] }) });
  const op = await decideFs('fs.writeFile', { path: 'out/x' }, 3, c);
  assert.equal(asked.length, 1, 'one question');
  assert.deepEqual(asked[0].request, { op: 'fs.write', path: 'out/x', size: 3 });
  assert.match(asked[0].forced.rule, /^\[policy\] mode = "ask" \(fs\.write "out\/x" is declared, not granted\)$/);
  assert.match(asked[0].forced.hint, /^to allow it, add "out\/x" to fs\.write in \[grants\."sha256:/);
  assert.deepEqual(op.path.places, [{ prefix: 'out', rest: 'x' }]);

  const declined = new FsPermissionError('declined', 'write', 'out/x');
  const no = context(root, { grants: grants('ask', { write: ['out/sub'] }), approve: async () => { throw declined; } }).c;
  await assert.rejects(decideFs('fs.writeFile', { path: 'out/x' }, 3, no), (e) => e === declined, "the approval's refusal is the decision's");
});

test('rm -r and rename: what they take along is listed under what the tool declares, judged, and handed to the performer', async (t) => {
  const root = workspace(t);
  const quiet = context(root, { grants: grants('granted', { write: ['out/tree'] }) });
  const rmQuiet = await decideFs('fs.rm', { path: 'out/tree', recursive: true }, undefined, quiet.c);
  assert.equal(rmQuiet.inside, undefined, 'no [approvals]: nothing listed');
  assert.deepEqual(quiet.listed, []);

  const judged = context(root, { grants: grants('granted', { write: ['out/tree', 'out/new'] }), judgesPaths: true });
  const rm = await decideFs('fs.rm', { path: 'out/tree', recursive: true }, undefined, judged.c);
  assert.deepEqual(rm.inside, ['out/tree/a', 'out/tree/b']);
  assert.deepEqual(judged.listed.map((p) => [p.rel, p.access, p.places]), [['out/tree', 'write', [{ prefix: 'out', rest: 'tree' }]]], 'listed under the declared prefixes');
  assert.deepEqual(judged.asked.at(-1).request, { op: 'fs.delete', path: 'out/tree', inside: ['out/tree/a', 'out/tree/b'] });
  assert.deepEqual(rm.path.places, [{ prefix: 'out/tree', rest: '' }], 'performed under declared ∩ granted');

  const mv = await decideFs('fs.rename', { from: 'out/tree', to: 'out/new/t' }, undefined, judged.c);
  assert.equal(mv.to.rel, 'out/new/t');
  assert.deepEqual(mv.writes, [join(root, 'out/new/t')]);
  assert.deepEqual(judged.asked.at(-1).request, { op: 'fs.rename', path: 'out/tree', to: 'out/new/t', inside: ['out/tree/a', 'out/tree/b'] });
});

test('realRel: the real path approvals also judge, only when a directory symlink inside the workspace leads elsewhere', (t) => {
  const root = workspace(t);
  mkdirSync(join(root, 'config'));
  symlinkSync(join(root, 'config'), join(root, 'current'));
  assert.equal(realRel(root, 'current/x'), 'config/x');
  assert.equal(realRel(root, 'current'), undefined, 'the last name is kept: the link itself');
  assert.equal(realRel(root, 'config/x'), undefined);
  assert.equal(realRel(root, ''), undefined);
});
