// Unit tests of host/policy/approvals/ beyond test/approvals.test.mjs: which paths an fs operation is judged
// by (touchedPaths, realRel), what a remembered answer covers (approvalKey), rule conditions an attacker would
// aim at (a path spelt another way, a host rule against a non-http URL, a port), and, as properties, that
// every guest value shown to a human stays inside its quotes on one line and reads back exactly (escaped,
// question), and that the hint is a TOML rule that parses back to the tool it names.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { parse as parseToml } from 'smol-toml';
import { anyString } from '../strings.mjs';
import { escaped, shown } from '../../../dist/host/policy/approvals/escaping.js';
import { approvalKey } from '../../../dist/host/policy/approvals/keys.js';
import { allowHint, describe, question, safeTarget } from '../../../dist/host/policy/approvals/question.js';
import { normalisePath, touchedPaths } from '../../../dist/host/policy/approvals/request.js';
import { decide, pathMatches, presetRules } from '../../../dist/host/policy/approvals/rules.js';
import { DEFAULT_APPROVALS } from '../../../dist/host/policy/approvals/settings.js';
import { realRel } from '../../../dist/host/capabilities/fs/policy.js';

const EXT = { file: '/srv/ext/notes.ts', sha256: 'ab'.repeat(32) };
const RUNS = 300;
const decideWith = (rules, r, s = {}) => decide({ tool: 't', extension: EXT, ...r }, { ...DEFAULT_APPROVALS, default: 'allow', rules, ...s });

/** The inverse of `escaped` (JSON escapes, and \u{...} for code points past U+FFFF). */
function unescape(s) {
  return s.replace(/\\(u\{([0-9a-f]+)\}|u([0-9a-f]{4})|n|r|t|\\|")/g, (_, e, astral, bmp) =>
    astral ? String.fromCodePoint(parseInt(astral, 16)) : bmp ? String.fromCharCode(parseInt(bmp, 16)) : ({ n: '\n', r: '\r', t: '\t', '\\': '\\', '"': '"' })[e]);
}
/** The quoted values of a shown line, in order (a quote preceded by an escaping backslash is inside a value). */
const quoted = (line) => [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => unescape(m[1]));

test('touchedPaths: a path, its real place, a rename\'s both ends, and what a removed or moved directory holds at every place', () => {
  assert.deepEqual(touchedPaths({ op: 'fs.write', path: 'a' }), ['a']);
  assert.deepEqual(touchedPaths({ op: 'command', command: 'x' }), [], 'no path: nothing');
  assert.deepEqual(touchedPaths({ op: 'fs.write', path: 'a', to: 'b' }), ['a'], 'only a rename has a destination');
  assert.deepEqual(touchedPaths({ op: 'fs.rename', path: 'lnk/d', realPath: 'real/d', to: 'o/d', realTo: 'r2/d', inside: ['lnk/d/x', 'elsewhere/y'] }),
    ['lnk/d', 'real/d', 'o/d', 'r2/d', 'lnk/d/x', 'real/d/x', 'o/d/x', 'r2/d/x', 'elsewhere/y']);
  assert.deepEqual(touchedPaths({ op: 'fs.delete', path: 'd', inside: ['dx/y'] }), ['d', 'dx/y'], '"dx/y" is not below "d": not moved along');
});

test('a path rule judges every place an operation reaches: a real path through a link, a rename\'s entries at their new place', () => {
  const deny = [{ path: ['secrets/'], verdict: 'deny' }];
  assert.equal(decideWith(deny, { op: 'fs.rename', path: 'out/d', to: 'secrets/d', inside: ['out/d/k'] }).verdict, 'deny');
  assert.equal(decideWith(deny, { op: 'fs.rename', path: 'lnk/d', realPath: 'secrets/d', to: 'out/d', inside: ['lnk/d/k'] }).verdict, 'deny');
  assert.equal(decideWith(deny, { op: 'fs.delete', path: 'lnk', realPath: 'secrets', inside: ['lnk/k'] }).verdict, 'deny');
  assert.equal(decideWith(deny, { op: 'fs.read', path: 'lnk/k', realPath: '' }).verdict, 'allow', 'the root itself is not under secrets/');
  // A name rule (no slash) matches the name at any depth, also inside what a rename takes along to its new place.
  const env = [{ path: ['.env'], verdict: 'deny' }];
  assert.equal(decideWith(env, { op: 'fs.rename', path: 'a', to: 'b', inside: ['a/cfg/.env'] }).verdict, 'deny');
});

test('a path is judged at its real place too (realRel): a directory link inside the workspace, never the last name, never outside the root', (t) => {
  const base = mkdtempSync(join(tmpdir(), 'kiln-unit-realrel-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const ws = join(base, 'ws');
  mkdirSync(join(ws, 'config'), { recursive: true });
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(ws, 'config', 'app.toml'), '');
  symlinkSync('config', join(ws, 'current')); // a directory link inside the workspace
  symlinkSync('config/app.toml', join(ws, 'file-link')); // a link as the last name
  symlinkSync('../outside', join(ws, 'away')); // a link out of the workspace
  symlinkSync(ws, join(base, 'ws-link')); // the root itself through a link
  assert.equal(realRel(ws, 'current/app.toml'), 'config/app.toml');
  assert.equal(realRel(ws, 'current/new.txt'), 'config/new.txt', 'a file not yet there: its directory resolved');
  assert.equal(realRel(ws, 'current'), undefined, 'the last name is kept: rm and rename act on the link itself');
  assert.equal(realRel(ws, 'file-link'), undefined);
  assert.equal(realRel(ws, 'config/app.toml'), undefined, 'no link on the way: nothing to add');
  assert.equal(realRel(ws, ''), undefined, 'the root');
  assert.equal(realRel(ws, 'away/x'), undefined, 'outside the root: no path rule can name it');
  assert.equal(realRel(join(base, 'ws-link'), 'current/app.toml'), 'config/app.toml', 'relative to the real root');
  assert.equal(realRel(join(base, 'ws-link'), 'config/app.toml'), undefined);
  // What the rules then see: a rule on config/ catches the write through the link, and a "session" answer for
  // one place does not cover the other.
  const deny = [{ path: ['config/'], verdict: 'deny' }];
  const write = (path) => ({ op: 'fs.write', path, ...(realRel(ws, path) !== undefined ? { realPath: realRel(ws, path) } : {}), size: 1 });
  assert.equal(decideWith(deny, write('current/app.toml')).verdict, 'deny');
  assert.equal(decideWith(deny, write('current')).verdict, 'allow', 'the link itself is not under config/');
  assert.notEqual(approvalKey(write('current/app.toml'), 't', 'x'), approvalKey({ op: 'fs.write', path: 'current/app.toml' }, 't', 'x'));
});

test('a path is matched as rules see it: "./", "//" and a trailing slash spell the same path; "\\\\" and case do not', () => {
  assert.equal(normalisePath('./out//a/./b/'), 'out/a/b');
  assert.equal(normalisePath('a\\b'), 'a\\b');
  const rule = [{ path: ['out/'], verdict: 'deny' }];
  for (const p of ['out', './out', 'out/', 'out//x', './/out/./x', 'out/x/']) assert.equal(decideWith(rule, { op: 'fs.write', path: p }).verdict, 'deny', p);
  for (const p of ['outx', 'x/out', 'out\\x', 'OUT/x', '.out/x']) assert.equal(decideWith(rule, { op: 'fs.write', path: p }).verdict, 'allow', p);
  // Patterns: `?` is one character, `*` stays within a name, `**` crosses names; an empty pattern is the root.
  assert.ok(pathMatches('a?c', 'x/abc') && !pathMatches('a?c', 'x/abbc'));
  assert.ok(pathMatches('src/**', 'src/a/b/c') && !pathMatches('src/*', 'lib/src/a'));
  assert.ok(pathMatches('*.pem', 'keys/deep/id.pem') && !pathMatches('*.pem', 'keys/id.pem.txt'));
  assert.ok(pathMatches('./', 'anything/at/all'), 'a pattern naming the root covers the workspace');
  // Regular-expression characters in a pattern are literal.
  assert.ok(pathMatches('a+b(c)', 'a+b(c)') && !pathMatches('a+b(c)', 'aab(c)') && !pathMatches('a.b', 'axb'));
});

test('the presets\' sensitive paths: every dotfile and dot-directory at any depth, CI configs by name, for every fs op', () => {
  for (const preset of ['balanced', 'strict']) {
    for (const op of ['fs.read', 'fs.write', 'fs.delete', 'fs.rename']) {
      for (const path of ['.npmrc', 'a/b/.ssh/id_rsa', 'pkg/.git/config', 'ci/netlify.toml', 'x/.hidden/y']) {
        assert.equal(decideWith([], { op, path, to: 'z', size: 1 }, { preset }).verdict, 'require', `${preset} ${op} ${path}`);
      }
    }
    assert.match(presetRules(preset)[0].id, /dotfiles and CI configs/);
  }
  assert.deepEqual(presetRules('permissive'), []);
  // Not dotfiles: a dot inside a name, "." and ".." segments (which never reach a request: lexicalPath resolves them).
  assert.equal(decideWith([], { op: 'fs.read', path: 'a/b.env' }, { preset: 'strict' }).verdict, 'allow');
});

test('a host rule: only http(s) URLs of net and browser.navigate, with the default port when none is written', () => {
  const deny = (host) => [{ host: [host], verdict: 'deny' }];
  assert.equal(decideWith(deny('x.test:443'), { op: 'net', url: 'https://x.test/' }).verdict, 'deny', 'https without a port is 443');
  assert.equal(decideWith(deny('x.test:443'), { op: 'net', url: 'https://x.test:443/' }).verdict, 'deny');
  assert.equal(decideWith(deny('x.test:80'), { op: 'net', url: 'https://x.test/' }).verdict, 'allow');
  assert.equal(decideWith(deny('x.test:80'), { op: 'net', url: 'http://x.test/' }).verdict, 'deny');
  assert.equal(decideWith(deny('*.x.test'), { op: 'net', url: 'https://a.b.X.TEST./' }).verdict, 'deny', 'case and a trailing dot');
  assert.equal(decideWith(deny('x.test'), { op: 'net', url: 'https://x.test@evil.test/' }).verdict, 'allow', 'userinfo is not the host');
  assert.equal(decideWith(deny('x.test'), { op: 'net', url: 'ws://x.test/' }).verdict, 'allow', 'not http(s): the rule does not apply');
  assert.equal(decideWith(deny('x.test'), { op: 'net', url: 'not a url' }).verdict, 'allow', 'an invalid URL matches no host rule');
  assert.equal(decideWith(deny('x.test'), { op: 'command', command: 'x.test', url: 'https://x.test/' }).verdict, 'allow', 'a command carries no URL');
  assert.equal(safeTarget({ op: 'net', url: 'not a url' }), 'GET an invalid URL');
});

test('a rule names a tool by glob and an extension by the operator\'s key, never by a look-alike', () => {
  const tool = (t) => decideWith([{ tool: [t], verdict: 'deny' }], { op: 'command', command: 'c' }).verdict;
  assert.equal(tool('t'), 'deny');
  assert.equal(tool('?'), 'deny');
  assert.equal(tool('t*'), 'deny');
  assert.equal(tool('T'), 'allow');
  assert.equal(decideWith([{ tool: ['notes.*'], verdict: 'deny' }], { op: 'command', command: 'c', tool: 'notesXedit' }).verdict, 'allow', 'a "." in a glob is a dot');
  const ext = (k) => decideWith([{ extension: [k], verdict: 'deny' }], { op: 'command', command: 'c' }).verdict;
  assert.equal(ext(`sha256:${'AB'.repeat(32)}`), 'allow', 'a sha256 key is compared as written (config/config.ts lower-cases it)');
  assert.equal(ext('notes.ts'), 'allow', 'a bare name is no key');
  assert.equal(ext(`sha256:${'ab'.repeat(31)}`), 'allow');
});

test('approvalKey: what a remembered answer covers — the exact command line, a request\'s method and origin, a file\'s path and places', () => {
  const key = (r, tool = 't', sha = EXT.sha256) => approvalKey(r, tool, sha);
  const cmd = { op: 'command', command: 'c', argv: ['c', 'a'] };
  assert.match(key(cmd), /^[0-9a-f]{64}$/);
  assert.notEqual(key(cmd), key({ ...cmd, argv: ['c', 'a', 'b'] }));
  assert.notEqual(key(cmd), key({ ...cmd, argv: ['c a'] }), 'argv is not joined into one string');
  assert.notEqual(key(cmd), key(cmd, 't2'));
  assert.notEqual(key(cmd), key(cmd, 't', 'cd'.repeat(32)));
  const net = { op: 'net', url: 'https://x.test/a?q=1', method: 'post' };
  assert.equal(key(net), key({ ...net, url: 'https://X.test:443/other#f', method: 'POST' }), 'one origin, one method');
  assert.notEqual(key(net), key({ ...net, method: 'GET' }));
  assert.notEqual(key(net), key({ ...net, url: 'https://x.test:8443/a' }));
  assert.notEqual(key(net), key({ ...net, url: 'http://x.test/a' }));
  assert.notEqual(key({ op: 'net', url: 'https://x.test/' }), key({ op: 'browser.navigate', url: 'https://x.test/' }), 'the op is part of it');
  const w = { op: 'fs.write', path: 'a/b', size: 1 };
  assert.equal(key(w), key({ ...w, path: './a//b', size: 10_000 }), 'a file\'s path, any size');
  assert.notEqual(key(w), key({ ...w, realPath: 'c/b' }), 'a place reached through a link is another place');
  assert.notEqual(key({ op: 'fs.delete', path: 'd' }), key({ op: 'fs.delete', path: 'd', inside: ['d/new'] }), 'new entries below a directory are asked again');
  assert.notEqual(key({ op: 'fs.rename', path: 'a', to: 'b' }), key({ op: 'fs.rename', path: 'a', to: 'c' }));
  assert.notEqual(key({ op: 'fs.rename', path: 'a', to: 'b' }), key({ op: 'fs.rename', path: 'a', to: 'b', realTo: 'x/b' }));
});

test('describe (error messages) cuts long values and lists a directory\'s first five entries; the method stays short and escaped', () => {
  const inside = Array.from({ length: 7 }, (_, i) => `d/${i}`);
  assert.equal(describe({ op: 'fs.delete', path: 'd', inside }), 'delete "d" and the 7 entries below it ("d/0", "d/1", "d/2", "d/3", "d/4", and 2 more)');
  assert.equal(describe({ op: 'fs.delete', path: 'd', inside: ['x'.repeat(300)] }), `delete "d" and the 1 entry below it ("${'x'.repeat(200)}\\u2026")`, 'cut, then escaped: the mark of the cut is escaped too');
  assert.equal(describe({ op: 'command', command: 'c'.repeat(300) }), `run command "${'c'.repeat(200)}\\u2026"`);
  assert.equal(describe({ op: 'net', url: 'https://x.test/p?secret=1', method: `g\n${'e'.repeat(100)}` }), `send G\\n${'E'.repeat(29)} "https://x.test/p"`, 'escaped, then cut');
  assert.equal(describe({ op: 'fs.write', path: '', size: 3 }), 'write "." (3 bytes)', 'the root is shown as "."');
  assert.equal(describe({ op: 'fs.read', path: 'a', realPath: '', size: 3 }), 'read "a" (really ".")', 'a read does not show a size');
  assert.equal(shown('x'.repeat(10), 4), '"xxxx\\u2026"');
  // The question shows every value whole, but of a directory's entries only the first five and how many more.
  assert.equal(question('t', { op: 'fs.delete', path: 'd', inside }).text, 'Tool "t" wants to delete "d" and the 7 entries below it ("d/0", "d/1", "d/2", "d/3", "d/4", and 2 more)');
});

test(`escaped: only printable ASCII comes out, and it reads back to exactly what went in (${RUNS} cases)`, () => {
  fc.assert(fc.property(anyString({ maxLength: 40 }), (s) => {
    const e = escaped(s);
    assert.match(e, /^[\x20-\x7e]*$/);
    assert.equal(unescape(e), s);
    assert.deepEqual(quoted(`"${e}"`), [s], 'no quote inside ends the value early');
  }), { numRuns: RUNS });
});

test(`a question is one line whose quoted values read back as the guest's exact values (${RUNS} cases)`, () => {
  const value = anyString();
  fc.assert(fc.property(value, value, fc.array(value, { maxLength: 4 }), (tool, command, argv) => {
    const q = question(tool, { op: 'command', command, argv });
    assert.ok('text' in q);
    assert.match(q.text, /^[\x20-\x7e]*$/, 'printable ASCII: no line break, no look-alike');
    const values = quoted(q.text);
    assert.equal(values[0], tool);
    assert.equal(values[1], command);
    // argv entries made only of shell-safe characters are shown bare; the rest quoted, in order.
    assert.deepEqual(values.slice(2), argv.filter((a) => !/^[\w@%+=:,./-]+$/.test(a)));
  }), { numRuns: RUNS });
});

test(`the hint is one line of valid TOML: a rule that names the same tool, op and path (${RUNS} cases)`, () => {
  // Tool names are ASCII (manifest TOOL_NAME) and paths well-formed (untrusted/guest-json.ts): a lone surrogate
  // never reaches a hint, and TOML could not spell one.
  const wellFormed = anyString({ minLength: 1, maxLength: 20, wellFormed: true });
  fc.assert(fc.property(wellFormed, wellFormed, (tool, path) => {
    const input = { tool, extension: EXT, op: 'fs.write', path, size: 1 };
    const s = { ...DEFAULT_APPROVALS, default: 'require' };
    const hint = allowHint(input, s, decide(input, s));
    assert.ok(!/[\n\r\u2028\u2029]/.test(hint));
    const table = /make (\{.*\}) the first of the \[approvals\] rules/.exec(hint)[1];
    const rule = JSON.parse(JSON.stringify(parseToml(`r = ${table}`).r));
    assert.deepEqual(rule, { op: ['fs.write'], tool, path: [normalisePath(path)], verdict: 'allow' });
  }), { numRuns: RUNS });
});
