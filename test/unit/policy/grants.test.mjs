// Unit tests of host/policy/grants.ts beyond test/grants.test.mjs: which grant an extension gets when the
// operator names it twice (by path and by sha256), through a link, or by a key it does not control; how the
// kinds narrow in each mode (env and secrets included); every wording of a refusal (the kiln.toml line quoted
// as the operator must write it); askFor, grantCheck, toolGranted, grantKindOf and decidedBy; and, as a
// property, that intersectPatterns matches exactly what both lists match.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  askFor, decidedBy, GRANT_KINDS, grantCheck, granted, grantedSecrets, grantedToolName, grantKindOf, grantOf, intersectNames, intersectPatterns, keyFor,
  NO_GRANTS, notGranted, NotGrantedError, toolGranted,
} from '../../../dist/host/policy/grants.js';
import { hostAllowed } from '../../../dist/host/capabilities/net/net.js';

const EXT = { file: '/srv/ext/notes.ts', sha256: 'cd'.repeat(32) };
const SHA = `sha256:${EXT.sha256}`;
const grants = (extensions, mode = 'declared', spelled = {}, file = '/srv/kiln.toml') => ({ mode, extensions, spelled, file });

test('grantOf: by the file\'s path or the artifact\'s sha256; with both, the path\'s grant, and never a merge of the two', () => {
  assert.deepEqual(grantOf(NO_GRANTS, EXT), {});
  assert.deepEqual(grantOf(grants({ [SHA]: { net: ['a.test'] } }), EXT), { grant: { net: ['a.test'] }, key: SHA });
  const both = grants({ [SHA]: { net: ['sha.test'], commands: ['rm'] }, '/srv/ext/notes.ts': { net: ['path.test'] } }, 'granted');
  assert.deepEqual(grantOf(both, EXT), { grant: { net: ['path.test'] }, key: '/srv/ext/notes.ts' });
  assert.deepEqual(granted(both, EXT, 'commands'), [], 'the sha256 grant\'s commands do not leak into the path\'s grant');
  // Other bytes at the same path keep the path's grant; the same bytes elsewhere keep the sha256 grant.
  assert.equal(grantOf(both, { ...EXT, sha256: 'ee'.repeat(32) }).key, '/srv/ext/notes.ts');
  assert.equal(grantOf(both, { ...EXT, file: '/tmp/copy.ts' }).key, SHA);
  // Keys the operator does not control, or that JavaScript objects carry anyway, find nothing.
  for (const file of ['notes.ts', 'constructor', '__proto__', 'toString']) {
    assert.deepEqual(grantOf(grants({ x: {} }), { file, sha256: '00' }), {}, file);
  }
  assert.deepEqual(grantOf(grants({ [`sha256:${'CD'.repeat(32)}`]: {} }), EXT), {}, 'a sha256 key is compared as config/config.ts stores it (lower case)');
  assert.deepEqual(grantOf(grants({ 'sha256:': {} }), { file: '/x', sha256: '' }), { grant: {}, key: 'sha256:' }, '(an empty hash is never an artifact\'s)');
});

test('grantOf: a path grant names the real file; a link to it is the same file, the link\'s own path is no key', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-unit-grants-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const real = join(dir, 'real.ts');
  const link = join(dir, 'link.ts');
  writeFileSync(real, '');
  symlinkSync(real, link);
  assert.equal(grantOf(grants({ [real]: { net: ['x'] } }), { file: link, sha256: '00' }).key, real);
  assert.deepEqual(grantOf(grants({ [link]: { net: ['x'] } }), { file: link, sha256: '00' }), {});
});

test('granted: env is the grant\'s explicit values and pass-through names; secrets are narrowed in every mode; fs by read and write', () => {
  const g = (grant, mode) => grants({ '/srv/ext/notes.ts': grant }, mode);
  assert.deepEqual(granted(g({ env: { TZ: 'UTC' }, allowEnv: ['HOME'] }), EXT, 'env'), ['TZ', 'HOME']);
  assert.equal(granted(g({ net: ['x'] }), EXT, 'env'), undefined, 'declared: a grant without env does not narrow env');
  assert.deepEqual(granted(g({ net: ['x'] }, 'granted'), EXT, 'env'), []);
  assert.deepEqual(granted(g({ fs: { read: ['data'] } }), EXT, 'fs.read'), ['data']);
  assert.equal(granted(g({ fs: { read: ['data'] } }), EXT, 'fs.write'), undefined, 'fs.write is its own kind');
  for (const mode of ['declared', 'granted', 'ask']) {
    assert.deepEqual(granted(grants({}, mode), EXT, 'secrets'), [], `${mode}: no secret without a grant`);
  }
  assert.deepEqual(GRANT_KINDS, ['commands', 'net', 'browser', 'tools', 'fs.read', 'fs.write', 'env', 'secrets']);
});

test('keyFor: the operator\'s own spelling; else the file relative to kiln.toml; a file outside its directory, absolute', () => {
  assert.equal(keyFor(grants({ '/srv/ext/notes.ts': {} }, 'granted', { '/srv/ext/notes.ts': './ext/notes.ts' }), EXT), './ext/notes.ts');
  assert.equal(keyFor(grants({ [SHA]: {} }), EXT), SHA, 'no spelling kept: the key itself');
  assert.equal(keyFor(grants({}), EXT), 'ext/notes.ts');
  assert.equal(keyFor(grants({}, 'granted', {}, '/etc/kiln/kiln.toml'), EXT), '/srv/ext/notes.ts', 'not "../../srv/ext/notes.ts"');
  assert.equal(keyFor({ mode: 'granted', extensions: {}, spelled: {} }, EXT), '/srv/ext/notes.ts', 'no config file');
  assert.equal(keyFor(grants({}, 'granted', {}, '/srv/ext/notes.ts.d/kiln.toml'), EXT), '/srv/ext/notes.ts');
});

test('notGranted: each kind\'s line to add, in kiln.toml\'s spelling; env and secrets (never asked) add the whole line when it is missing', () => {
  const msg = (g, kind, item) => notGranted(g, EXT, 't', kind, item).message;
  // mode "declared": the grant lists the kind without the item.
  assert.match(msg(grants({ '/srv/ext/notes.ts': { net: ['a'] } }, 'declared', { '/srv/ext/notes.ts': 'ext/notes.ts' }), 'net', 'b'), /\(its \[grants\."ext\/notes\.ts"\] lists net without it\); to allow it, add "b" to net in \[grants\."ext\/notes\.ts"\] of \/srv\/kiln\.toml$/);
  assert.match(msg(grants({}, 'granted'), 'fs.write', 'out'), /declares fs\.write "out".*add "out" to fs\.write in \[grants\."ext\/notes\.ts"\]/);
  // env is written allowEnv; with no grant, the table; with a grant that has no allowEnv (explicit env values only), the line.
  assert.match(msg(grants({}, 'granted'), 'env', 'HOME'), /to allow it, add the table \[grants\."ext\/notes\.ts"\] with the line allowEnv = \["HOME"\] of \/srv\/kiln\.toml$/);
  const spelled = { '/srv/ext/notes.ts': 'ext/notes.ts' };
  assert.match(msg(grants({ '/srv/ext/notes.ts': { env: { TZ: 'UTC' } } }, 'granted', spelled), 'env', 'HOME'), /to allow it, add the line allowEnv = \["HOME"\] to \[grants\."ext\/notes\.ts"\]/);
  assert.match(msg(grants({ '/srv/ext/notes.ts': { allowEnv: ['TZ'] } }, 'granted', spelled), 'env', 'HOME'), /to allow it, add "HOME" to allowEnv in \[grants\."ext\/notes\.ts"\]/);
  // The key is quoted as the operator wrote it (a path key without a kept spelling: the resolved path).
  assert.match(msg(grants({ '/srv/ext/notes.ts': { net: [] } }, 'granted'), 'net', 'b'), /add "b" to net in \[grants\."\/srv\/ext\/notes\.ts"\]/);
  assert.match(msg(grants({}, 'declared'), 'secrets', 'gh'), /\(a secret is used only by the extensions whose grant lists it, in every \[policy\] mode, and \[grants\."ext\/notes\.ts"\] does not list it\)/);
  // Askable only in mode "ask", and never for env or secrets.
  const ask = grants({}, 'ask');
  assert.deepEqual(GRANT_KINDS.map((k) => notGranted(ask, EXT, 't', k, 'x').askable), [true, true, true, true, true, true, false, false]);
  assert.ok(GRANT_KINDS.every((k) => !notGranted(grants({}, 'granted'), EXT, 't', k, 'x').askable));
  const e = notGranted(ask, EXT, 't', 'net', 'x');
  assert.ok(e instanceof NotGrantedError && e.name === 'PermissionError' && e.kind === 'net' && e.item === 'x');
});

test('askFor: the rule a forced question gives, and the refusal\'s own "to allow it" as the hint', () => {
  const e = notGranted(grants({}, 'ask'), EXT, 't', 'commands', 'deploy');
  assert.deepEqual(askFor(e), {
    rule: '[policy] mode = "ask" (commands "deploy" is declared, not granted)',
    hint: 'to allow it, add "deploy" to commands in [grants."ext/notes.ts"] of /srv/kiln.toml',
  });
  const odd = new NotGrantedError('no hint here', 'net', 'x', true);
  assert.equal(askFor(odd).hint, 'no hint here', 'a message without the phrase is the hint whole');
});

test('grantCheck: none when grants do not narrow the kind; ask only in mode "ask" and only with an asker, which gets the refusal', async () => {
  assert.equal(grantCheck(grants({}), EXT, 't', 'net'), undefined);
  const g = grantCheck(grants({ '/srv/ext/notes.ts': { net: ['a'] } }, 'granted'), EXT, 't', 'net', async () => assert.fail('never asked'));
  assert.deepEqual(g.list, ['a']);
  assert.equal(g.ask, undefined, 'mode "granted" never asks');
  assert.match(g.refuse('b').message, /add "b" to net/);
  assert.equal(grantCheck(grants({}, 'ask'), EXT, 't', 'net').ask, undefined, 'no asker: refused like "granted"');
  const seen = [];
  const asked = grantCheck(grants({}, 'ask'), EXT, 't', 'net', async (refusal, request) => { seen.push([refusal.item, refusal.askable, request.url]); });
  await asked.ask('b.test', { op: 'net', url: 'https://b.test/' });
  assert.deepEqual(seen, [['b.test', true, 'https://b.test/']]);
});

test('grantedSecrets: all the declared secrets or a refusal; an undeclared granted secret is never handed out', () => {
  const g = grants({ '/srv/ext/notes.ts': { secrets: ['a', 'b', 'c'] } }, 'declared');
  assert.deepEqual(grantedSecrets(g, EXT, { name: 't', allow: { secrets: ['b'] } }), ['b']);
  assert.deepEqual(grantedSecrets(g, EXT, { name: 't', allow: {} }), []);
  assert.throws(() => grantedSecrets(g, EXT, { name: 't', allow: { secrets: ['b', 'z'] } }), /declares secrets "z"/, 'one missing refuses the tool');
  assert.throws(() => grantedSecrets(grants({ [SHA]: { secrets: ['z'] }, '/srv/ext/notes.ts': { secrets: ['a'] } }), EXT, { name: 't', allow: { secrets: ['z'] } }),
    /declares secrets "z"/, 'the path\'s grant decides, not the sha256 one beside it');
});

test('toolGranted: a bare name covers the tool wherever it is served; "<key>#name" only in that file or artifact', () => {
  assert.ok(toolGranted(['x.t'], 'x.t', EXT));
  assert.ok(toolGranted(['/srv/ext/notes.ts#x.t'], 'x.t', EXT));
  assert.ok(toolGranted([`${SHA}#x.t`], 'x.t', EXT));
  assert.ok(!toolGranted(['/srv/ext/other.ts#x.t'], 'x.t', EXT));
  assert.ok(!toolGranted([`sha256:${'ee'.repeat(32)}#x.t`], 'x.t', EXT));
  assert.ok(!toolGranted(['notes.ts#x.t'], 'x.t', EXT), 'a key is a resolved path, not a bare file name');
  assert.ok(!toolGranted(['/srv/ext/notes.ts#x.t'], 'x.u', EXT));
  assert.ok(!toolGranted(['x.t#'], 'x.t', EXT) && !toolGranted(['#x.t'], 'x.t', EXT), 'an empty key or name matches nothing');
  assert.equal(grantedToolName('/a#b#x.t'), 'x.t', 'the name follows the last "#"');
  assert.deepEqual(intersectNames(['a', 'b'], ['b', 'c']), ['b']);
  assert.deepEqual(intersectNames(['a'], undefined), ['a']);
});

test('grantKindOf and decidedBy: each guest op is judged by one kind, and the audit says which grant or mode decided', () => {
  const kinds = Object.fromEntries(['commands.run', 'commands.start', 'http.fetch', 'browser.call', 'plugins.call', 'fs.readFile', 'fs.readdir', 'fs.stat',
    'fs.writeFile', 'fs.rm', 'fs.rename', 'fs.mkdir', 'vars.get', 'log'].map((op) => [op, grantKindOf(op) ?? null]));
  assert.deepEqual(kinds, {
    'commands.run': 'commands', 'commands.start': 'commands', 'http.fetch': 'net', 'browser.call': 'browser', 'plugins.call': 'tools',
    'fs.readFile': 'fs.read', 'fs.readdir': 'fs.read', 'fs.stat': 'fs.read', 'fs.writeFile': 'fs.write', 'fs.rm': 'fs.write', 'fs.rename': 'fs.write', 'fs.mkdir': 'fs.write',
    'vars.get': null, log: null,
  });
  const g = grants({ '/srv/ext/notes.ts': { net: ['a'] } }, 'declared', { '/srv/ext/notes.ts': 'ext/notes.ts' });
  assert.equal(decidedBy(g, EXT, 'http.fetch'), '[grants."ext/notes.ts"] net');
  assert.equal(decidedBy(g, EXT, 'commands.run'), 'declared', 'declared: a kind the grant does not list is not narrowed');
  assert.equal(decidedBy(g, EXT, 'commands.run', true), '[grants."ext/notes.ts"] commands');
  assert.equal(decidedBy(grants({}, 'granted'), EXT, 'fs.writeFile'), '[policy] mode = "granted" (no grant)');
  assert.equal(decidedBy(g, EXT, 'vars.get'), 'declared');
});

// ---- intersectPatterns, as a property ---------------------------------------------------------------------

const LABELS = ['a', 'b', 'x'];
const hostArb = fc.array(fc.constantFrom(...LABELS), { minLength: 1, maxLength: 3 }).map((ls) => `${ls.join('.')}.test`);
const portArb = fc.constantFrom(undefined, 80, 443, 8080);
const patternArb = fc.tuple(fc.boolean(), hostArb, portArb).map(([w, h, p]) => `${w ? '*.' : ''}${h}${p ? `:${p}` : ''}`);
const HOSTS = [];
for (const a of LABELS) {
  HOSTS.push(`${a}.test`);
  for (const b of LABELS) {
    HOSTS.push(`${a}.${b}.test`);
    for (const c of LABELS) HOSTS.push(`${a}.${b}.${c}.test`, `z.${a}.${b}.${c}.test`);
  }
}

test('intersectPatterns matches exactly what both lists match: every host, every port (property over wildcards, apexes and ports)', () => {
  fc.assert(fc.property(fc.array(patternArb, { maxLength: 3 }), fc.array(patternArb, { minLength: 0, maxLength: 3 }), (declared, grant) => {
    const both = intersectPatterns(declared, grant);
    for (const host of HOSTS) {
      for (const port of [80, 443, 8080, 9]) {
        assert.equal(hostAllowed(both, host, port), hostAllowed(declared, host, port) && hostAllowed(grant, host, port), `${host}:${port} ${JSON.stringify({ declared, grant, both })}`);
      }
    }
  }), { numRuns: 300 });
  // IPv6 entries come out bracketed, so they parse again.
  assert.deepEqual(intersectPatterns(['[::1]'], ['[0:0::1]:8080']), ['[::1]:8080']);
});
