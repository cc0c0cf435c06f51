// Unit tests of allow.env's one decision (host/capabilities/env/env.ts guestEnv), called directly with a given
// server environment: what a script's guest and an extension's guest see, by [policy] mode and grant, and that a
// [secrets.*] variable never reaches either.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { guestEnv } from '../../../../dist/host/capabilities/env/env.js';
import { NO_GRANTS } from '../../../../dist/host/policy/grants.js';

const SHA = 'cd'.repeat(32);
const KEY = `sha256:${SHA}`;
const ext = (declared) => ({ identity: { file: '/nowhere/tool.ts', sha256: SHA }, declared });
const grants = (mode, grant) => ({ mode, extensions: grant ? { [KEY]: grant } : {}, spelled: {} });
const SERVER = { TZ: 'UTC', LANG: 'C', HOME: '/root', GH: 'tok-1' };
const SECRETS = { github: { env: 'GH', hosts: ['api.github.com'], header: 'authorization', format: 'Bearer {}' } };

test("a script's guest sees the [scripting] allowEnv names that are set on the server, and nothing else", () => {
  assert.deepEqual(guestEnv({ grants: NO_GRANTS, allowEnv: ['TZ', 'UNSET'] }, undefined, SERVER), { TZ: 'UTC' });
  assert.deepEqual(guestEnv({ grants: NO_GRANTS, allowEnv: [] }, undefined, SERVER), {});
});

test("an extension's guest sees only names its tools declare: in mode \"declared\", those [scripting] allowEnv passes through", () => {
  const policy = { grants: grants('declared'), allowEnv: ['TZ', 'LANG'] };
  assert.deepEqual(guestEnv(policy, ext(['TZ', 'HOME']), SERVER), { TZ: 'UTC' }, 'HOME is declared, not passed');
  assert.deepEqual(guestEnv(policy, ext([]), SERVER), {}, 'nothing declared, nothing seen');
  assert.deepEqual(guestEnv(policy, ext(['LANG']), {}), {}, 'a name not set on the server is absent');
});

test('modes "granted" and "ask": only the grant passes anything; [scripting] allowEnv does not', () => {
  for (const mode of ['granted', 'ask']) {
    assert.deepEqual(guestEnv({ grants: grants(mode), allowEnv: ['TZ'] }, ext(['TZ']), SERVER), {}, mode);
    assert.deepEqual(guestEnv({ grants: grants(mode, { allowEnv: ['LANG'] }), allowEnv: ['TZ'] }, ext(['TZ', 'LANG']), SERVER), { LANG: 'C' }, mode);
  }
});

test("a grant's explicit env value wins over the server's, for a declared name only", () => {
  const policy = { grants: grants('granted', { env: { TZ: 'Europe/Paris', EXTRA: 'x' }, allowEnv: ['TZ'] }), allowEnv: [] };
  assert.deepEqual(guestEnv(policy, ext(['TZ']), SERVER), { TZ: 'Europe/Paris' });
  assert.deepEqual(guestEnv(policy, ext(['TZ', 'EXTRA']), {}), { TZ: 'Europe/Paris', EXTRA: 'x' }, 'an explicit value needs nothing on the server');
});

test('a variable a [secrets.*] reads is never passed through, whatever lists it', () => {
  assert.deepEqual(guestEnv({ grants: NO_GRANTS, allowEnv: ['GH', 'TZ'], secrets: SECRETS }, undefined, SERVER), { TZ: 'UTC' }, 'scripts');
  assert.deepEqual(guestEnv({ grants: grants('declared'), allowEnv: ['GH'], secrets: SECRETS }, ext(['GH']), SERVER), {});
  assert.deepEqual(guestEnv({ grants: grants('granted', { allowEnv: ['GH'] }), allowEnv: [], secrets: SECRETS }, ext(['GH']), SERVER), {});
});

test('the result is a fresh object each time: the decision holds no state', () => {
  const policy = { grants: grants('declared'), allowEnv: ['TZ'] };
  const a = guestEnv(policy, ext(['TZ']), SERVER);
  a.TZ = 'changed';
  assert.deepEqual(guestEnv(policy, ext(['TZ']), SERVER), { TZ: 'UTC' });
});
