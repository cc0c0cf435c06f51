// The commands policy as pure functions (host/capabilities/commands/commands.ts), called directly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commandGrant, grantedCommands, shellQuote, substitute } from '../dist/host/capabilities/commands/commands.js';
import { checkTemplate } from '../dist/host/capabilities/commands/template.js';
import { parseTools } from '../dist/host/extensions/manifest.js';

const spec = (run, extra = {}) => ({ run, env: [], output: 'text', persistent: false, allowDash: [], ...extra });
const allow = (commands) => ({ commands, net: [] });

test('shell quoting survives every quote and metacharacter', () => {
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.deepEqual(substitute(spec('printf %s ${v}'), { v: "a'b $(c) `d`" }), { file: '/bin/sh', args: ['-c', `printf %s 'a'\\''b $(c) \`d\`'`] });
});

test('argv form substitutes inside arguments and never splits a value', () => {
  assert.deepEqual(substitute(spec(['git', '-C', '${repo}', 'log', '--format=${fmt}']), { repo: 'a b; c', fmt: '-%s' }),
    { file: 'git', args: ['-C', 'a b; c', 'log', '--format=-%s'] });
});

test('a dash at the start of an argument is refused; after a prefix, after "--", or with allowDash it passes', () => {
  assert.throws(() => substitute(spec(['ls', '${p}']), { p: '-la' }), /argument injection/);
  assert.throws(() => substitute(spec('ls ${p}'), { p: '-la' }), /argument injection/);
  assert.deepEqual(substitute(spec(['ls', '--', '${p}']), { p: '-la' }).args, ['--', '-la']);
  assert.deepEqual(substitute(spec(['ls', '${p}'], { allowDash: ['p'] }), { p: '-la' }).args, ['-la']);
  assert.deepEqual(substitute(spec(['ls', 'x${p}']), { p: '-la' }).args, ['x-la']);
  assert.equal(substitute(spec('ls --opt=${p}'), { p: '-la' }).args[1], "ls --opt='-la'");
});

test('templates: what is refused and what is fine', () => {
  for (const ok of ['git -C ${repo} rev-parse HEAD', 'cat ${f} | wc -l', 'x=1 printf %s ${v}', 'echo $(cat ${f})', 'echo "$HOME" ${v}']) {
    assert.doesNotThrow(() => checkTemplate('c', spec(ok)), ok);
  }
  for (const bad of ['sh -c "${x}"', 'eval ${x}', '$(${x})', 'a && ${x}', 'FOO=1 ${x}', "printf '%s' '${x}'", 'sh -c ${x}', 'source ${x}']) {
    assert.throws(() => checkTemplate('c', spec(bad)), undefined, bad);
  }
  assert.throws(() => checkTemplate('c', spec(['/bin/bash', '-c', 'run ${x}'])), /is the script of a shell's -c/);
  assert.doesNotThrow(() => checkTemplate('c', spec(['/bin/bash', '-c', 'run "$1"', 'bash', '${x}'])));
});

test('grants: declared AND allowed by the operator; kinds do not mix', () => {
  const a = allow({ one: spec(['true']), dev: spec('sleep 1', { persistent: true }) });
  const x = { file: '/nowhere/x.ts', sha256: 'ab'.repeat(32) };
  const on = { enabled: true };
  const grants = (extensions, mode = 'declared') => ({ mode, extensions, spelled: {} });
  assert.deepEqual(grantedCommands(a, x, on), ['one', 'dev']);
  assert.deepEqual(grantedCommands(a, x, on, grants({ '/nowhere/x.ts': { commands: ['dev', 'other'] } })), ['dev']);
  assert.deepEqual(grantedCommands(a, x, on, grants({ [`sha256:${'ab'.repeat(32)}`]: { commands: ['one'] } })), ['one']);
  // a bare file name is not a key: keys are paths (resolved by config/config.ts) or sha256:<hex>
  assert.deepEqual(grantedCommands(a, x, on, grants({ 'x.ts': { commands: [] } })), ['one', 'dev']);
  // mode "declared": a grant that does not list commands does not narrow them; "granted": it takes them all
  assert.deepEqual(grantedCommands(a, x, on, grants({ '/nowhere/x.ts': { net: ['a.com'] } })), ['one', 'dev']);
  assert.deepEqual(grantedCommands(a, x, on, grants({ '/nowhere/x.ts': { net: ['a.com'] } }, 'granted')), []);
  assert.deepEqual(grantedCommands(a, x, on, grants({}, 'granted')), []);
  assert.deepEqual(grantedCommands(a, x, { enabled: false }), []);
  assert.throws(() => commandGrant('t', a, 'run', 'dev'), /is persistent/);
  assert.throws(() => commandGrant('t', a, 'stop', 'one'), /is one-shot/);
  assert.throws(() => commandGrant('t', a, 'run', '__proto__'), /did not declare a command named "__proto__"/);
  assert.throws(() => commandGrant('t', a, 'run', 'one', x, on, grants({ '/nowhere/x.ts': { commands: [] } })),
    /the operator has not granted it to \/nowhere\/x\.ts .*add "one" to commands in \[grants\."\/nowhere\/x\.ts"\]/);
  assert.throws(() => commandGrant('t', a, 'run', 'one', x, { enabled: false }), /turned commands off/);
});

test('manifests: exec is an alias, unknown fields and capabilities are refused', () => {
  const [t] = parseTools([{ name: 'a', allow: { exec: { ls: 'ls' } } }]);
  assert.deepEqual(Object.keys(t.allow.commands), ['ls']);
  assert.throws(() => parseTools([{ name: 'a', allow: { exec: {}, commands: {} } }]), /alias/);
  assert.throws(() => parseTools([{ name: 'a', allow: { files: ['/'] } }]), /allow\.files is not a capability kiln knows/);
  assert.throws(() => parseTools([{ name: 'a', allow: { fs: ['/'] } }]), /allow\.fs must be an object/); // allow.fs: test/fs.test.mjs
  assert.throws(() => parseTools([{ name: 'a', allow: { commands: { x: { run: 'ls', shell: true } } } }]), /unknown key "shell"/);
  assert.throws(() => parseTools([{ name: 'a', allow: { commands: { x: { run: [] } } } }]), /non-empty array/);
});
