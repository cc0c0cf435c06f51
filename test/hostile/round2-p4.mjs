// Attacks on the operator's word at its edges: a command's `env` pass-through that reads a server variable the
// grant never gives (p4-env-*) or keeps running once the grant no longer gives it (p4-revoke-env-*), an
// authenticated request that outlives the secret grant the operator removed (p4-revoke-secret-*), and mode
// "ask" annotations that call a tool able to run `rm -rf` read-only (p4-annot-*).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, mcp, tempDir, waitUntil } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, live, sources, token } from './harness.mjs';

// ---- a command's env pass-through ------------------------------------------------------------------------

const ENV_NAME = 'P4_OPERATOR_TOKEN';
/** e.show runs `printenv` with ENV_NAME passed through; it touches `marker` (through the command) only when it
 *  ran, and returns what the command printed. */
const envTool = (marker) => `defineTool({ name: 'e.show', exposeAsTool: true,
  allow: { env: ['${ENV_NAME}'], commands: { show: { run: ['sh', '-c', 'touch "$0"; printenv ${ENV_NAME} || true', ${JSON.stringify(marker)}], env: ['${ENV_NAME}'] } } },
  handler: async ({ commands }: any) => { try { return 'printed:' + (await commands.run('show', {})); } catch (e: any) { return e.name + ': ' + e.message; } } });\n`;

for (const mode of ['granted', 'ask']) {
  attack(`p4-env-grant-via-command-${mode}`, `mode "${mode}": a granted command passes through a server variable the grant's allowEnv never lists`, async (t) => {
    const value = token('ENVSECRET');
    const marker = join(tempDir(t), 'ran');
    const dir = sources(t, {
      'e.ts': envTool(marker),
      'kiln.toml': `extensions = ["e.ts"]\n[policy]\nmode = "${mode}"\n[grants."e.ts"]\ncommands = ["show"]\n`,
    });
    const { client, stderr } = await mcp(t, ['--config', join(dir, 'kiln.toml')], { env: { [ENV_NAME]: value } });
    const r = await call(client, 'e.show');
    assert.ok(!r.text.includes(value) && !stderr().includes(value), 'the command read the ungranted server variable');
    assert.match(r.text, new RegExp(`PermissionError: .*env "${ENV_NAME}".*add the line allowEnv = \\["${ENV_NAME}"\\] to \\[grants\\."e\\.ts"\\]`));
    assert.equal(existsSync(marker), false, 'the command ran');
    // The line the refusal names allows it: the check is the grant, not a blanket refusal.
    const granted = sources(t, {
      'e.ts': envTool(marker),
      'kiln.toml': `extensions = ["e.ts"]\n[policy]\nmode = "${mode}"\n[grants."e.ts"]\ncommands = ["show"]\nallowEnv = ["${ENV_NAME}"]\n`,
    });
    const ok = await mcp(t, ['--config', join(granted, 'kiln.toml')], { env: { [ENV_NAME]: value } });
    assert.equal((await call(ok.client, 'e.show')).text, `printed:${value}`);
  });
}

attack('p4-env-grant-via-command-declared', 'mode "declared": a grant that lists allowEnv narrows a command\'s env pass-through too', async (t) => {
  const value = token('ENVSECRET');
  const marker = join(tempDir(t), 'ran');
  const dir = sources(t, {
    'e.ts': envTool(marker),
    'kiln.toml': `extensions = ["e.ts"]\n[grants."e.ts"]\nallowEnv = ["TZ"]\n`,
  });
  const { client } = await mcp(t, ['--config', join(dir, 'kiln.toml')], { env: { [ENV_NAME]: value } });
  const r = await call(client, 'e.show');
  assert.ok(!r.text.includes(value), 'the command read a server variable the grant\'s allowEnv leaves out');
  assert.match(r.text, new RegExp(`PermissionError: .*add "${ENV_NAME}" to allowEnv in \\[grants\\."e\\.ts"\\]`));
  assert.equal(existsSync(marker), false, 'the command ran');
});

attack('p4-revoke-env-persistent', 'a persistent command keeps running after the operator removes its env pass-through from allowEnv', async (t) => {
  const n = `49${Math.floor(Math.random() * 1e6)}.${Math.floor(Math.random() * 1e6)}`; // marks the process in ps
  const sleeping = () => live(`sleep ${n}`).filter((l) => !l.includes('kiln-reaper'));
  const dir = sources(t, {
    'r.ts': `defineTool({ name: 'r.start', exposeAsTool: true, allow: { env: ['${ENV_NAME}'], commands: { dev: { run: ['sleep', '${n}'], persistent: true, env: ['${ENV_NAME}'] } } },
  handler: ({ commands }: any) => commands.start('dev') });\n`,
  });
  const file = join(dir, 'kiln.toml');
  const toml = (allowEnv) => `extensions = ["r.ts"]\n[policy]\nmode = "granted"\n[grants."r.ts"]\ncommands = ["dev"]\nallowEnv = ${JSON.stringify(allowEnv)}\n`;
  writeFileSync(file, toml([ENV_NAME]));
  const { client } = await mcp(t, ['--config', file], { env: { [ENV_NAME]: token('ENVSECRET') } });
  t.after(() => waitUntil(() => live(`sleep ${n}`).length === 0, 15_000));
  assert.equal((await call(client, 'r.start')).isError, false);
  assert.ok(await waitUntil(() => sleeping().length === 1, 30_000), 'it never started');
  writeFileSync(`${file}.tmp`, toml(['TZ']));
  renameSync(`${file}.tmp`, file);
  assert.ok(await waitUntil(() => live(`sleep ${n}`).length === 0, 30_000), `still running after the revocation: ${live(`sleep ${n}`)}`);
  const again = await call(client, 'r.start');
  assert.equal(again.isError, true);
  assert.match(again.text, new RegExp(`add "${ENV_NAME}" to allowEnv in \\[grants\\."r\\.ts"\\]`));
  assert.equal(live(`sleep ${n}`).length, 0, 'a new one started');
});

// ---- revoking a secret -------------------------------------------------------------------------------------

const SECRET_ENV = 'P4_HOSTILE_SECRET';
const withSecret = (port, secrets) => `extensions = ["s.ts"]
[policy]
mode = "granted"
[secrets.gh]
env = "${SECRET_ENV}"
hosts = ["127.0.0.1:${port}"]
header = "authorization"
format = "Bearer {}"
[grants."s.ts"]
net = ["127.0.0.1:${port}"]
secrets = ${JSON.stringify(secrets)}
`;

attack('p4-revoke-secret-stream', 'an authenticated response keeps streaming after the operator removes the secret from the grant (net unchanged)', async (t) => {
  const srv = await startServer(t);
  const value = token('S3CRET');
  const dir = sources(t, {
    's.ts': `defineTool({ name: 's.hold', exposeAsTool: true, timeoutMs: 120000, allow: { net: ['127.0.0.1:${srv.port}'], secrets: ['gh'] },
  handler: async ({ args }: any) => { const r = await fetch(args.url); return (await r.text()).length; } });\n`,
  });
  const file = join(dir, 'kiln.toml');
  writeFileSync(file, withSecret(srv.port, ['gh']));
  const { client, stderr } = await mcp(t, ['--config', file], { env: { [SECRET_ENV]: value } });
  const pending = call(client, 's.hold', { url: `${srv.base}/endless` });
  assert.ok(await waitUntil(() => srv.count('/endless') === 1, 30_000), 'the request never arrived');
  assert.equal(srv.hits.find((h) => h.path === '/endless').headers.authorization, `Bearer ${value}`);
  writeFileSync(`${file}.tmp`, withSecret(srv.port, []));
  renameSync(`${file}.tmp`, file);
  assert.ok(await waitUntil(() => /kiln\.toml changed: the new settings apply/.test(stderr()), 30_000), 'the server never read the new config');
  assert.ok(await waitUntil(() => srv.closed.includes('/endless'), 30_000), 'the authenticated response kept streaming after the revocation');
  const r = await pending;
  assert.equal(r.isError, true, r.text);
  const again = await call(client, 's.hold', { url: `${srv.base}/hello` });
  assert.match(again.text, /not granted/);
  assert.equal(srv.count('/hello'), 0, 'a request reached the host after the revocation');
}, { timeout: 150_000 });

// ---- annotations in mode "ask" -------------------------------------------------------------------------------

attack('p4-annot-ask-mode', 'mode "ask": a tool declaring `rm -rf ${dir}` (or fs writes, net, the browser) is listed read-only and idempotent', async (t) => {
  const victim = join(tempDir(t), 'victim-dir');
  mkdirSync(victim);
  const dir = sources(t, {
    'a.ts': `defineTool({ name: 'a.wipe', exposeAsTool: true, allow: { commands: { wipe: { run: ['rm', '-rf', '\${dir}'] } } },
  handler: async ({ commands, args }: any) => { await commands.run('wipe', { dir: args.dir }); return 'wiped'; } });
defineTool({ name: 'a.write', exposeAsTool: true, allow: { fs: { write: ['out/'] } }, handler: () => 1 });\n`,
    'n.ts': `defineTool({ name: 'n.get', exposeAsTool: true, allow: { net: ['127.0.0.1'] }, handler: () => 1 });
defineTool({ name: 'n.via', exposeAsTool: true, allow: { tools: ['a.wipe'] }, handler: () => 1 });\n`,
    'p.ts': `defineTool({ name: 'p.pure', exposeAsTool: true, handler: () => 1 });\n`,
    'kiln.toml': `extensions = ["a.ts", "n.ts", "p.ts"]\n[policy]\nmode = "ask"\n`,
  });
  const { client } = await mcp(t, ['--config', join(dir, 'kiln.toml')]);
  const hints = Object.fromEntries((await client.listTools()).tools.map((x) => [x.name, x.annotations]));
  for (const name of ['a.wipe', 'a.write', 'n.get', 'n.via']) {
    assert.equal(hints[name].readOnlyHint, false, `${name} is listed read-only`);
    assert.equal(hints[name].destructiveHint, true, `${name} is listed non-destructive`);
    assert.equal(hints[name].idempotentHint, false, `${name} is listed idempotent`);
  }
  assert.equal(hints['n.get'].openWorldHint, true);
  assert.equal(hints['p.pure'].readOnlyHint, true, 'a tool that declares nothing stays read-only');
  // Nobody answers kiln's question here: the declared command stays refused, the directory stays.
  const r = await call(client, 'a.wipe', { dir: victim });
  assert.equal(r.isError, true, r.text);
  assert.equal(existsSync(victim), true, 'the directory was removed');
});
