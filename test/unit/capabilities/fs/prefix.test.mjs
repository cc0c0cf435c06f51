// Unit tests of allow.fs's text grammar (host/capabilities/fs/prefix.ts, path.ts): a prefix's one spelling, "under"
// component by component, two lists meeting, and a guest's path parsed and matched; all pure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FsPrefixError, intersectPrefixes, normalisePrefix, underPrefix } from '../../../../dist/host/capabilities/fs/prefix.js';
import { fsAllowed, lexicalPath, namesDirectory, notUnder } from '../../../../dist/host/capabilities/fs/path.js';
import { FsError, FsPermissionError } from '../../../../dist/host/capabilities/fs/errors.js';

test('normalisePrefix: one spelling per prefix; "." is the whole workspace', () => {
  for (const [given, spelled] of [['data', 'data'], ['./data/', 'data'], ['data//sub/./x', 'data/sub/x'], ['.', '.'], ['./', '.'], ['%2e%2e', '%2e%2e'], ['a\\..\\b', 'a\\..\\b']]) {
    assert.equal(normalisePrefix(given), spelled, JSON.stringify(given));
  }
});

test('normalisePrefix: absolute, "..", NUL, empty, non-strings and overlong prefixes are refused, each saying why', () => {
  const refused = (p, why) => assert.throws(() => normalisePrefix(p), (e) => e instanceof FsPrefixError && why.test(e.message), JSON.stringify(p));
  refused('/etc', /is absolute; prefixes are relative to the operator's workspace root \(\[fs\] root\)/);
  refused('a/../b', /contains ".."; a prefix may not leave the workspace root/);
  refused('..', /contains "\.\."/);
  refused('a\0b', /contains a NUL character/);
  refused('', /each prefix must be a non-empty path \("\." for the whole workspace\)/);
  refused(7, /each prefix must be a non-empty path/);
  refused('x'.repeat(1025), /is longer than 1024 characters/);
});

test('underPrefix: a path is under a prefix component by component, never by text', () => {
  assert.ok(underPrefix('data', 'data'));
  assert.ok(underPrefix('data/x', 'data'));
  assert.ok(underPrefix('', '.'));
  assert.ok(underPrefix('anything/at/all', '.'));
  for (const rel of ['data2', 'data-evil', 'data.txt', '', 'dat']) assert.equal(underPrefix(rel, 'data'), false, rel);
});

test('intersectPrefixes: what both lists allow, the deeper of each related pair', () => {
  assert.deepEqual(intersectPrefixes(['out'], ['out/sub']), ['out/sub']);
  assert.deepEqual(intersectPrefixes(['out/sub'], ['out']), ['out/sub']);
  assert.deepEqual(intersectPrefixes(['.'], ['a', 'b']).sort(), ['a', 'b']);
  assert.deepEqual(intersectPrefixes(['a', 'b'], ['.']).sort(), ['a', 'b']);
  assert.deepEqual(intersectPrefixes(['data'], ['data2']), []);
  assert.deepEqual(intersectPrefixes([], ['.']), []);
});

test('lexicalPath: resolved as text, relative to the root; climbing above it or an absolute path is a refusal', () => {
  assert.equal(lexicalPath('read', 'data/./x//y'), 'data/x/y');
  assert.equal(lexicalPath('read', 'data/../other'), 'other');
  assert.equal(lexicalPath('read', '.'), '');
  assert.equal(lexicalPath('read', 'a/'), 'a');
  assert.throws(() => lexicalPath('write', '../x', { tool: 't' }),
    (e) => e instanceof FsPermissionError && e.message === 'tool "t" may not write "../x": ".." leaves the workspace root' && e.fields.code === 'EACCES' && e.fields.path === '../x');
  assert.throws(() => lexicalPath('read', '/etc/passwd'),
    (e) => e instanceof FsPermissionError && e.message === `this tool may not read "/etc/passwd": it is absolute; paths are relative to the operator's workspace root and may not leave it`);
});

test('lexicalPath: a non-string, a NUL or an overlong path is a TypeError as Node words it', () => {
  assert.throws(() => lexicalPath('read', undefined), (e) => e instanceof FsError && e.name === 'TypeError' && e.fields.code === 'ERR_INVALID_ARG_TYPE' && /Received undefined/.test(e.message));
  assert.throws(() => lexicalPath('read', null), (e) => e.fields.code === 'ERR_INVALID_ARG_TYPE' && /Received null/.test(e.message));
  assert.throws(() => lexicalPath('read', 'a\0b'), (e) => e.name === 'TypeError' && e.fields.code === 'ERR_INVALID_ARG_VALUE');
  assert.throws(() => lexicalPath('read', 'a'.repeat(4097)), (e) => e.fields.code === 'ERR_INVALID_ARG_VALUE' && /longer than 4096/.test(e.message));
});

test('namesDirectory: a trailing "/" or "/." names a directory', () => {
  for (const p of ['a/', 'a/.', 'a//']) assert.ok(namesDirectory(p), p);
  for (const p of ['a', 'a/b', 'a.', '.']) assert.equal(namesDirectory(p), false, p);
});

test('fsAllowed and notUnder: the refusal names the setting and the exact entry to add', () => {
  assert.equal(fsAllowed('read', 'data/x', ['data'], '/ws'), '/ws/data/x');
  assert.equal(fsAllowed('read', '.', ['.'], '/ws'), '/ws');
  assert.throws(() => fsAllowed('write', 'data2/x', ['data'], '/ws', { tool: 'notes' }), (e) => e instanceof FsPermissionError &&
    e.message === 'tool "notes" may not write "data2/x": it is not under allow.fs.write ("data"); add "data2/x" (or a directory that holds it) to allow.fs.write');
  assert.equal(notUnder('read', './', '', [], { setting: '[grants."a.ts"] fs' }).message,
    'this tool may not read "./": it is not under [grants."a.ts"] fs.read (none); add "." (or a directory that holds it) to [grants."a.ts"] fs.read');
});
