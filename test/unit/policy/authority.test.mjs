// Unit tests of host/policy/authority.ts: declared, granted and effective authority per kind (the [commands]
// and [browser] switches, env's sources by mode, secrets all or nothing), what a tool may come to use in mode
// "ask" (withinReach: what its annotations follow), and what a config change takes away (narrowedKinds: the
// kinds whose open pages and requests must close).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authority, declaredAuthority, narrowedKinds, withinReach } from '../../../dist/host/policy/authority.js';

const EXT = { file: '/srv/ext/notes.ts', sha256: 'cd'.repeat(32) };
const KEY = '/srv/ext/notes.ts';
const ALLOW = {
  commands: { add: {}, rm: {} }, net: ['*.github.com'], browser: ['docs.test'], tools: ['peer.x'],
  fs: { read: ['data'], write: ['out'] }, env: ['TZ', 'HOME'], secrets: ['gh'],
};
const policy = (grant, mode = 'granted', over = {}) => ({
  grants: { mode, extensions: grant ? { [KEY]: grant } : {}, spelled: {} },
  commands: { enabled: true }, browser: { enabled: true }, allowEnv: [], ...over,
});
const NONE = { commands: [], net: [], browser: [], tools: [], 'fs.read': [], 'fs.write': [], env: [], secrets: [] };

test('declaredAuthority: every kind, absent ones empty', () => {
  assert.deepEqual(declaredAuthority(ALLOW), { commands: ['add', 'rm'], net: ['*.github.com'], browser: ['docs.test'], tools: ['peer.x'], 'fs.read': ['data'], 'fs.write': ['out'], env: ['TZ', 'HOME'], secrets: ['gh'] });
  assert.deepEqual(declaredAuthority({ commands: {}, net: [], browser: [] }), NONE);
});

test('effective authority: mode "declared" without a grant is what is declared, but secrets; mode "granted" without one is nothing', () => {
  const d = authority(ALLOW, EXT, policy(undefined, 'declared', { allowEnv: ['TZ'] }));
  assert.deepEqual(d.effective, { ...declaredAuthority(ALLOW), env: ['TZ'], secrets: [] });
  assert.equal(d.granted.net, null, 'null: grants do not narrow it');
  assert.deepEqual(d.granted.secrets, [], 'secrets: always a list');
  assert.deepEqual(authority(ALLOW, EXT, policy(undefined, 'granted', { allowEnv: ['TZ'] })).effective, NONE, '[scripting] allowEnv passes env only in mode "declared"');
});

test('effective authority: the [commands] and [browser] switches take those kinds away whatever is granted', () => {
  const all = { commands: ['add'], browser: ['docs.test'] };
  const off = authority(ALLOW, EXT, policy(all, 'granted', { commands: { enabled: false }, browser: { enabled: false } }));
  assert.deepEqual([off.effective.commands, off.effective.browser], [[], []]);
  assert.deepEqual([off.granted.commands, off.granted.browser], [['add'], ['docs.test']], 'what is granted still shows');
});

test('effective authority: env from the grant\'s explicit values and pass-through; tools by name, a qualified entry by its name', () => {
  const a = authority(ALLOW, EXT, policy({ env: { TZ: 'UTC' }, allowEnv: ['HOME', 'PATH'], tools: ['/srv/ext/peer.ts#peer.x'] }));
  assert.deepEqual(a.effective.env, ['TZ', 'HOME'], 'PATH is granted but not declared');
  assert.deepEqual(a.effective.tools, ['peer.x']);
  const s = authority(ALLOW, EXT, policy({ secrets: ['gh', 'other'] }));
  assert.deepEqual(s.effective.secrets, ['gh']);
  const two = authority({ ...ALLOW, secrets: ['gh', 'npm'] }, EXT, policy({ secrets: ['gh'] }));
  assert.deepEqual(two.effective.secrets, [], 'one declared secret not granted: the tool is refused, so none');
});

test('withinReach: in mode "ask", every declared use but env and secrets, within the switches; in other modes, the effective authority', () => {
  const grant = { net: ['api.github.com'], env: { TZ: 'x' } };
  const ask = withinReach(ALLOW, EXT, policy(grant, 'ask'));
  assert.deepEqual(ask, { ...declaredAuthority(ALLOW), env: ['TZ'], secrets: [] }, 'a human may allow any declared use but env and secrets');
  const switchedOff = withinReach(ALLOW, EXT, policy(grant, 'ask', { commands: { enabled: false }, browser: { enabled: false } }));
  assert.deepEqual([switchedOff.commands, switchedOff.browser], [[], []], 'no human can allow what the operator switched off');
  for (const mode of ['declared', 'granted']) {
    assert.deepEqual(withinReach(ALLOW, EXT, policy(grant, mode)), authority(ALLOW, EXT, policy(grant, mode)).effective, mode);
  }
});

test('narrowedKinds: a host pattern or a secret taken away closes net; a browser host closes browser; widening or an unrelated change closes nothing', () => {
  const before = policy({ net: ['*.github.com'], browser: ['docs.test'], secrets: ['gh'], commands: ['add'] });
  const k = (after) => narrowedKinds(ALLOW, EXT, before, after).sort();
  assert.deepEqual(k(before), []);
  assert.deepEqual(k(policy({ net: ['api.github.com'], browser: ['docs.test'], secrets: ['gh'], commands: ['add'] })), ['net'], 'narrowed, not removed');
  assert.deepEqual(k(policy({ net: ['*.github.com'], browser: ['docs.test'], secrets: [], commands: ['add'] })), ['net'], 'a secret: its authenticated requests');
  assert.deepEqual(k(policy({ net: ['*.github.com'], browser: [], secrets: ['gh'], commands: ['add'] })), ['browser']);
  assert.deepEqual(k(policy({ net: ['*.github.com'], browser: ['docs.test'], secrets: ['gh'], commands: [] })), [], 'commands hold nothing open');
  assert.deepEqual(k({ ...before, browser: { enabled: false } }), ['browser'], 'the switch turned off');
  assert.deepEqual(k(policy(undefined, 'granted')), ['browser', 'net'], 'the grant removed');
  assert.deepEqual(k(policy({ net: ['*.github.com', 'x.test'], browser: ['docs.test', 'y.test'], secrets: ['gh'], commands: ['add', 'rm'] })), [], 'widened');
  assert.deepEqual(narrowedKinds(ALLOW, EXT, policy(undefined, 'granted'), before), [], 'from nothing to something');
});
