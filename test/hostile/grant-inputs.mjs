// Attacks on the code a grant was given to: in mode "granted", tools/writer.ts holds only an fs write grant,
// and tries to take over tools/victim.ts's read grant on private/ by changing the code the victim's next build
// reads — rewriting the helper it imports (without and with --watch), rewriting a package it imports from the
// workspace's node_modules while the whole extensions/ directory is protected, and planting a new file that the
// victim's next build would resolve instead of the reviewed one (under --watch, and across a restart). Each
// write to a build input is refused and the file is unchanged; a rebuild that would read a file a guest wrote is
// refused and reported; and in every case the victim serves only the reviewed code, or nothing: the secret
// never reaches the client and the audit log holds no read of it.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, kiln, mcp, tempDir, waitUntil } from '../helpers.mjs';
import { attack, sources } from './harness.mjs';

const SECRET = 'kiln-grant-inputs-secret-5d1e';

const WRITER = `defineTool({ name: 'writer.write', exposeAsTool: true, allow: { fs: { write: ['.'] } },
  handler: async ({ args, fs }) => {
    try { await fs.writeFile(args.path, args.text); return 'written'; } catch (e) { return e.name + ': ' + e.message; }
  } });
`;
const victim = (from) => `import { helper } from ${JSON.stringify(from)};
defineTool({ name: 'victim.run', exposeAsTool: true, allow: { fs: { read: ['private'] } },
  handler: async ({ fs }) => { try { return await helper(fs); } catch (e) { return e.name + ': ' + e.message; } } });
`;
const HONEST = `export const helper = async (fs) => 'helper-ok';\n`;
/** What the writer puts in the victim's way: code that reads private/ under the victim's grant. */
const EVIL = `export const helper = async (fs) => 'evil:' + await fs.readFile('private/secret.txt', 'utf8');\n`;

/** A workspace: tools/ with the two extensions (named one by one in kiln.toml) and the victim's helper,
 *  private/secret.txt, mode "granted" with the victim granted fs read on private/ and the writer fs write on
 *  tools/lib, and an audit log. */
function workspace(t, { from = './lib/helper.ts', helper = 'tools/lib/helper.ts' } = {}) {
  const ws = sources(t, {
    'tools/victim.ts': victim(from),
    'tools/writer.ts': WRITER,
    [helper]: HONEST,
    'private/secret.txt': SECRET,
    'kiln.toml': `extensions = ["tools/victim.ts", "tools/writer.ts"]
[fs]
root = "."
[audit]
path = "audit.jsonl"
[policy]
mode = "granted"
[grants."tools/victim.ts"]
fs = { read = ["private"] }
[grants."tools/writer.ts"]
fs = { write = ["tools/lib"] }
`,
  });
  return ws;
}

/** The victim serves its reviewed helper, and nothing of private/ reached the client or the audit log. */
async function victimHonest(ws, client, texts = []) {
  const r = await call(client, 'victim.run');
  assert.equal(r.text, 'helper-ok', 'the victim ran code its operator never reviewed');
  const audit = existsSync(join(ws, 'audit.jsonl')) ? readFileSync(join(ws, 'audit.jsonl'), 'utf8') : '';
  for (const text of [r.text, ...texts]) assert.ok(!text.includes(SECRET), 'the secret reached the client');
  const reads = audit.split('\n').filter((l) => l.includes('private/secret.txt'));
  assert.deepEqual(reads, [], 'the audit log records a read of private/');
}

/** `kiln mcp --config <ws>/kiln.toml`, with --watch if asked; `reloads()` counts the server's reload notices. */
async function start(t, ws, watch = false, env = {}) {
  const notices = [];
  const server = await mcp(t, [...(watch ? ['--watch'] : []), '--config', join(ws, 'kiln.toml')], {
    env,
    beforeConnect: (c) => c.setNotificationHandler('notifications/message', (n) => { if (n.params.logger === 'kiln') notices.push(String(n.params.data)); }),
  });
  return { ...server, notices, reloads: () => notices.filter((n) => n.startsWith('reloaded: ')).length };
}

/** The operator saves a watched file by hand, and the server reloads: waits for its next reload notice. */
async function operatorSave(s, file, text) {
  const before = s.reloads();
  appendFileSync(file, text);
  assert.ok(await waitUntil(() => s.reloads() > before, 60_000), `no reload after the operator's save; stderr: ${s.stderr()}`);
}

attack('grant-inputs-helper-rewrite', 'in mode "granted", a writer granted fs write on tools/lib rewrites the helper a granted extension imports; the next server builds it', async (t) => {
  const ws = workspace(t);
  const s = await start(t, ws);
  await victimHonest(ws, s.client);
  const w = await call(s.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL });
  assert.match(w.text, /PermissionError: .*tools\/lib\/helper\.ts.*read by the build of .*tools\/victim\.ts/);
  assert.equal(readFileSync(join(ws, 'tools/lib/helper.ts'), 'utf8'), HONEST, 'the helper was rewritten');
  await s.client.close();
  // The next load: a new server on the same workspace builds the victim again.
  const next = await start(t, ws);
  await victimHonest(ws, next.client, [next.stderr()]);
});

attack('grant-inputs-helper-rewrite-watch', 'the same rewrite under --watch, where the next load happens at once', async (t) => {
  const ws = workspace(t);
  const s = await start(t, ws, true);
  await victimHonest(ws, s.client);
  const w = await call(s.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL });
  assert.match(w.text, /PermissionError: .*read by the build of/);
  assert.equal(readFileSync(join(ws, 'tools/lib/helper.ts'), 'utf8'), HONEST, 'the helper was rewritten');
  // A reload certainly happens (the operator saves writer.ts): the victim is still the reviewed code.
  await operatorSave(s, join(ws, 'tools/writer.ts'), '\n// saved by the operator\n');
  await victimHonest(ws, s.client, [s.stderr()]);
  // The operator's own edit of the helper reloads as before.
  const before = s.reloads();
  writeFileSync(join(ws, 'tools/lib/helper.ts'), `export const helper = async (fs) => 'helper-v2';\n`);
  assert.ok(await waitUntil(async () => s.reloads() > before && (await call(s.client, 'victim.run')).text === 'helper-v2', 60_000), s.stderr());
});

attack('grant-inputs-node-modules', 'with extensions/ protected, a writer rewrites a package in the workspace\'s node_modules that a granted extension imports (its code, or its package.json\'s main)', async (t) => {
  const ws = sources(t, {
    'extensions/victim.ts': victim('helperpkg'),
    'extensions/writer.ts': WRITER,
    'node_modules/helperpkg/package.json': JSON.stringify({ name: 'helperpkg', version: '1.0.0', main: 'index.js' }),
    'node_modules/helperpkg/index.js': HONEST,
    'private/secret.txt': SECRET,
    'kiln.toml': `extensions = ["extensions"]
[fs]
root = "."
[audit]
path = "audit.jsonl"
[policy]
mode = "granted"
[grants."extensions/victim.ts"]
fs = { read = ["private"] }
[grants."extensions/writer.ts"]
fs = { write = ["node_modules"] }
`,
  });
  const pkg = readFileSync(join(ws, 'node_modules/helperpkg/package.json'), 'utf8');
  const s = await start(t, ws);
  await victimHonest(ws, s.client);
  // The extension directory itself is the operator's, as before.
  assert.match((await call(s.client, 'writer.write', { path: 'extensions/victim.ts', text: '' })).text, /one of the operator's files/);
  const w = await call(s.client, 'writer.write', { path: 'node_modules/helperpkg/index.js', text: EVIL });
  assert.match(w.text, /PermissionError: .*node_modules\/helperpkg\/index\.js.*read by the build of .*extensions\/victim\.ts/);
  // A new file in the package is the writer's to make; pointing the package at it is not.
  assert.equal((await call(s.client, 'writer.write', { path: 'node_modules/helperpkg/evil.js', text: EVIL })).text, 'written');
  const m = await call(s.client, 'writer.write', { path: 'node_modules/helperpkg/package.json', text: JSON.stringify({ name: 'helperpkg', main: 'evil.js' }) });
  assert.match(m.text, /PermissionError: .*package\.json.*read by the build of/);
  assert.equal(readFileSync(join(ws, 'node_modules/helperpkg/index.js'), 'utf8'), HONEST, 'the package was rewritten');
  assert.equal(readFileSync(join(ws, 'node_modules/helperpkg/package.json'), 'utf8'), pkg, 'the package.json was rewritten');
  await s.client.close();
  const next = await start(t, ws);
  await victimHonest(ws, next.client, [next.stderr()]);
});

attack('grant-inputs-shadow-rebuild', 'under --watch, a writer plants tools/lib/helper.ts, which the victim\'s next build would resolve before the reviewed tools/lib/helper/index.ts', async (t) => {
  const ws = workspace(t, { from: './lib/helper', helper: 'tools/lib/helper/index.ts' });
  const s = await start(t, ws, true);
  await victimHonest(ws, s.client);
  // A new file is no build's input yet: the write goes through, and the server records who wrote it.
  assert.equal((await call(s.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL })).text, 'written');
  // The operator saves the victim: its rebuild would read the writer's file, so it is refused and reported,
  // and the last reviewed build keeps serving. (Waited for by what it shows: the refusal, or another result.)
  const refusal = /tools\/victim\.ts: not rebuilt: its build would read .*tools\/lib\/helper\.ts, which .*tools\/writer\.ts \(tool "writer\.write"\) wrote through allow\.fs/;
  appendFileSync(join(ws, 'tools/victim.ts'), '\n// saved by the operator\n');
  assert.ok(await waitUntil(async () => refusal.test(s.stderr()) || (await call(s.client, 'victim.run')).text !== 'helper-ok', 60_000), s.stderr());
  await victimHonest(ws, s.client);
  assert.match(s.stderr(), refusal);
  assert.ok(await waitUntil(() => s.notices.some((n) => refusal.test(n)), 10_000), 'the client was not told');
  const listed = await call(s.client, 'kiln_extensions');
  assert.ok(JSON.parse(listed.text).failures.some((f) => refusal.test(f.error)), listed.text);
  assert.ok(!/kiln\.toml \[grants\]/.test(listed.text), 'the victim\'s grant is reported as naming nothing');
  const audit = readFileSync(join(ws, 'audit.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.ok(audit.some((l) => l.type === 'build' && l.verdict === 'deny' && l.extension.endsWith('tools/victim.ts') && l.input.endsWith('tools/lib/helper.ts') && l.writtenBy.endsWith('tools/writer.ts')), 'no audit line of the refused build');
  await victimHonest(ws, s.client, [s.stderr(), listed.text]);
  // The operator removes the planted file by hand: the victim builds from its reviewed helper again.
  const before = s.reloads();
  rmSync(join(ws, 'tools/lib/helper.ts'));
  writeFileSync(join(ws, 'tools/lib/helper/index.ts'), `export const helper = async (fs) => 'helper-v2';\n`);
  assert.ok(await waitUntil(async () => s.reloads() > before && (await call(s.client, 'victim.run')).text === 'helper-v2', 60_000), s.stderr());
});

attack('grant-inputs-shadow-restart', 'without --watch, a writer plants tools/lib/helper.ts; the operator later edits the victim and restarts the server', async (t) => {
  const ws = workspace(t, { from: './lib/helper', helper: 'tools/lib/helper/index.ts' });
  const env = { KILN_BUILD_CACHE: join(tempDir(t), 'cache') }; // its own build cache, and record of guest writes
  const s = await start(t, ws, false, env);
  await victimHonest(ws, s.client);
  assert.equal((await call(s.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL })).text, 'written');
  await s.client.close();
  // A restart alone serves the reviewed build (its inputs are unchanged).
  const again = await start(t, ws, false, env);
  await victimHonest(ws, again.client, [again.stderr()]);
  await again.client.close();
  // The operator edits the victim and restarts: the new build would read the writer's file, and is refused.
  appendFileSync(join(ws, 'tools/victim.ts'), '\n// edited by the operator\n');
  const next = await start(t, ws, false, env);
  const refusal = /tools\/victim\.ts: not rebuilt: its build would read .*tools\/lib\/helper\.ts, which .*tools\/writer\.ts \(tool "writer\.write"\) wrote through allow\.fs.*remove its line from .*guest-writes\.jsonl/;
  assert.match(next.stderr(), refusal);
  assert.ok(!(await next.client.listTools()).tools.some((x) => x.name === 'victim.run'), 'the victim is served');
  const r = await call(next.client, 'victim.run');
  assert.ok(r.isError && !r.text.includes(SECRET), r.text);
  assert.ok(JSON.parse((await call(next.client, 'kiln_extensions')).text).failures.some((f) => refusal.test(f.error)));
  assert.ok(readFileSync(join(ws, 'audit.jsonl'), 'utf8').split('\n').some((l) => l.includes('"type":"build"') && l.includes('tools/lib/helper.ts')), 'no audit line of the refused build');
  assert.ok(!next.stderr().includes(SECRET));
  assert.ok(!readFileSync(join(ws, 'audit.jsonl'), 'utf8').includes('private/secret.txt'), 'the audit log records a read of private/');
  await next.client.close();
  // The operator removes the planted file: the reviewed helper builds again.
  rmSync(join(ws, 'tools/lib/helper.ts'));
  const last = await start(t, ws, false, env);
  await victimHonest(ws, last.client, [last.stderr()]);
});

attack('grant-inputs-second-server', 'a second server on the same workspace and build cache plants tools/lib/helper.ts; the --watch server rebuilds the victim after the operator saves it', async (t) => {
  const ws = workspace(t, { from: './lib/helper', helper: 'tools/lib/helper/index.ts' });
  const env = { KILN_BUILD_CACHE: join(tempDir(t), 'cache') }; // one build cache, and record of guest writes, for both
  const a = await start(t, ws, true, env);
  await victimHonest(ws, a.client);
  const b = await start(t, ws, false, env);
  assert.equal((await call(b.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL })).text, 'written');
  // The operator saves the victim: server A's rebuild would read the file server B's guest wrote.
  const refusal = /tools\/victim\.ts: not rebuilt: its build would read .*tools\/lib\/helper\.ts, which .*tools\/writer\.ts \(tool "writer\.write"\) wrote through allow\.fs/;
  appendFileSync(join(ws, 'tools/victim.ts'), '\n// saved by the operator\n');
  assert.ok(await waitUntil(async () => refusal.test(a.stderr()) || (await call(a.client, 'victim.run')).text !== 'helper-ok', 60_000), a.stderr());
  await victimHonest(ws, a.client, [a.stderr()]);
  assert.match(a.stderr(), refusal);
  const audit = readFileSync(join(ws, 'audit.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.ok(audit.some((l) => l.type === 'build' && l.verdict === 'deny' && l.input.endsWith('tools/lib/helper.ts')), 'no audit line of the refused build');
});

attack('grant-inputs-kiln-build', 'a guest plants tools/lib/helper.ts; the operator then runs `kiln build` on the victim with the same build cache', async (t) => {
  const ws = workspace(t, { from: './lib/helper', helper: 'tools/lib/helper/index.ts' });
  const env = { KILN_BUILD_CACHE: join(tempDir(t), 'cache') };
  const s = await start(t, ws, false, env);
  assert.equal((await call(s.client, 'writer.write', { path: 'tools/lib/helper.ts', text: EVIL })).text, 'written');
  await s.client.close();
  const out = join(ws, 'victim.wasm');
  const r = await kiln(['build', join(ws, 'tools/victim.ts'), '-o', out], { env });
  assert.equal(r.code, 1, `kiln build made an artifact from a planted file: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /tools\/victim\.ts: not built: its build would read .*tools\/lib\/helper\.ts, which .*tools\/writer\.ts \(tool "writer\.write"\) wrote through allow\.fs.*remove its line from .*guest-writes\.jsonl/);
  assert.ok(!existsSync(out), 'the artifact was written');
  assert.equal(r.stdout, '', 'a sha256 was printed');
  // The operator removes the planted file: the reviewed code builds.
  rmSync(join(ws, 'tools/lib/helper.ts'));
  const ok = await kiln(['build', join(ws, 'tools/victim.ts'), '-o', out], { env });
  assert.equal(ok.code, 0, ok.stderr);
  assert.ok(existsSync(out));
});

attack('grant-inputs-journal-full', 'the record of guest writes holds its bound: a guest\'s next new file is refused, and builds go on', async (t) => {
  const ws = workspace(t);
  const cache = join(tempDir(t), 'cache');
  const env = { KILN_BUILD_CACHE: cache };
  const s = await start(t, ws, true, env);
  await victimHonest(ws, s.client);
  // The journal, filled to its bound (by guests of this or another server): 100,000 distinct paths.
  const journal = join(cache, 'guest-writes.jsonl');
  const by = { extension: join(ws, 'tools/writer.ts'), tool: 'writer.write' };
  let lines = '';
  for (let i = 0; i < 100_000; i++) lines += `${JSON.stringify({ path: join(ws, 'out', `f${i}`), ...by })}\n`;
  writeFileSync(journal, lines);
  const w = await call(s.client, 'writer.write', { path: 'tools/lib/new.ts', text: '' });
  assert.match(w.text, /PermissionError: fs: .*tools\/lib\/new\.ts is not written: the record of files guests wrote \(.*guest-writes\.jsonl\) holds its bound of 100000 paths.*remove their lines from/);
  assert.ok(!existsSync(join(ws, 'tools/lib/new.ts')), 'the file was written');
  assert.equal(readFileSync(journal, 'utf8'), lines, 'the journal grew past its bound');
  // Builds are not refused because of the bound: the operator's edit reloads, and kiln build builds.
  const before = s.reloads();
  writeFileSync(join(ws, 'tools/lib/helper.ts'), `export const helper = async (fs) => 'helper-v2';\n`);
  assert.ok(await waitUntil(async () => s.reloads() > before && (await call(s.client, 'victim.run')).text === 'helper-v2', 60_000), s.stderr());
  assert.doesNotMatch(s.stderr(), /not rebuilt/);
  const r = await kiln(['build', join(ws, 'tools/victim.ts'), '-o', join(ws, 'victim.wasm')], { env });
  assert.equal(r.code, 0, r.stderr);
});
