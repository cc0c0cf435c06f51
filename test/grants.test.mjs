// Operator grants ([policy] mode, [grants."<file>"]): effective authority is declared ∩ granted; a refusal
// names the missing grant and the line to add; grants are keyed on what the operator controls (the file, or
// the artifact's sha256), never on what an artifact says; the config may be TOML, YAML or JSON; a changed
// config applies to the next call without a restart. Each refused use is proven to have had no side effect.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { granted, intersectPatterns, intersectPrefixes, notGranted } from '../dist/host/policy/grants.js';
import { authority } from '../dist/host/policy/authority.js';
import { readConfig } from '../dist/host/config/config.js';
import { call, kiln, mcp, tempDir, waitUntil } from './helpers.mjs';
import { startServer } from './http-server.mjs';

const ext = { file: '/srv/ext/notes.ts', sha256: 'cd'.repeat(32) };
const grants = (extensions, mode = 'declared', spelled = {}) => ({ mode, extensions, spelled, file: '/srv/kiln.toml' });

test('granted(): mode "declared" narrows only the kinds a grant lists; "granted" and "ask" give nothing ungranted', () => {
  assert.equal(granted(grants({}), ext, 'net'), undefined);
  assert.equal(granted(grants({ '/srv/ext/notes.ts': { commands: ['a'] } }), ext, 'net'), undefined);
  assert.deepEqual(granted(grants({ '/srv/ext/notes.ts': { commands: ['a'] } }), ext, 'commands'), ['a']);
  assert.deepEqual(granted(grants({}, 'granted'), ext, 'net'), []);
  assert.deepEqual(granted(grants({ '/srv/ext/notes.ts': { commands: ['a'] } }, 'ask'), ext, 'net'), []);
  assert.deepEqual(granted(grants({ [`sha256:${'cd'.repeat(32)}`]: { net: ['x.com'] } }, 'granted'), ext, 'net'), ['x.com']);
  // a key that is neither the real path nor the artifact's hash decides nothing (a bare name, another hash)
  assert.deepEqual(granted(grants({ 'notes.ts': { net: ['x.com'] }, [`sha256:${'ab'.repeat(32)}`]: { net: ['y.com'] } }, 'granted'), ext, 'net'), []);
});

test('a refusal names the grant and the exact line to add, in the operator\'s spelling of the key', () => {
  const e = notGranted(grants({ '/srv/ext/notes.ts': { net: [] } }, 'granted', { '/srv/ext/notes.ts': 'ext/notes.ts' }), ext, 'notes.add', 'net', 'api.github.com');
  assert.equal(e.name, 'PermissionError');
  assert.equal(e.message, 'tool "notes.add" declares net "api.github.com", but the operator has not granted it to ext/notes.ts ([policy] mode is "granted" and [grants."ext/notes.ts"] does not list it); to allow it, add "api.github.com" to net in [grants."ext/notes.ts"] of /srv/kiln.toml');
  // no grant yet: the key is the file relative to the config file
  assert.match(notGranted(grants({}, 'granted'), ext, 't', 'commands', 'add').message, /add "add" to commands in \[grants\."ext\/notes\.ts"\] of \/srv\/kiln\.toml$/);
  assert.equal(notGranted(grants({}, 'ask'), ext, 't', 'commands', 'add').askable, true);
  assert.equal(notGranted(grants({}, 'granted'), ext, 't', 'commands', 'add').askable, false);
});

test('effective authority: patterns and prefixes intersect exactly', () => {
  assert.deepEqual(intersectPatterns(['*.github.com'], ['api.github.com']), ['api.github.com']);
  assert.deepEqual(intersectPatterns(['api.github.com'], ['*.github.com:443']), ['api.github.com:443']);
  assert.deepEqual(intersectPatterns(['*.a.com', 'b.com:80'], ['*.x.a.com', 'b.com:8080']), ['*.x.a.com']);
  assert.deepEqual(intersectPatterns(['a.com'], ['evil-a.com', '*.com.evil']), []);
  assert.deepEqual(intersectPatterns(['a.com'], undefined), ['a.com']);
  assert.deepEqual(intersectPrefixes(['data'], ['data/in', 'data2', 'out']), ['data/in']);
  assert.deepEqual(intersectPrefixes(['data/in/x'], ['data']), ['data/in/x']);
  const a = authority({ commands: { add: {}, rm: {} }, net: ['*.github.com'], browser: [], tools: ['t.x'], env: ['TZ', 'HOME'] }, ext, {
    grants: grants({ '/srv/ext/notes.ts': { commands: ['add'], net: ['api.github.com'], allowEnv: ['TZ'] } }, 'granted'),
    commands: { enabled: true }, browser: { enabled: true }, allowEnv: ['HOME'],
  });
  assert.deepEqual(a.effective, { commands: ['add'], net: ['api.github.com'], browser: [], tools: [], 'fs.read': [], 'fs.write': [], env: ['TZ'], secrets: [] });
  assert.deepEqual(a.granted.tools, [], 'mode "granted": an unlisted kind is granted nothing');
});

// ---- through a real MCP client ----------------------------------------------------------------------------

const NOTES = (marker, port) => `
defineTool({ name: 'notes.add', exposeAsTool: true,
  allow: { commands: { touch: { run: ['touch', ${JSON.stringify(marker)}] }, other: { run: ['true'] } }, net: ['127.0.0.1:${port}', 'localhost:${port}'], tools: ['peer.echo'], env: ['SESSION_ID', 'KILN_GRANT_PASS'] },
  handler: async ({ args, commands }) => {
    const out = {};
    const attempt = async (k, f) => { try { out[k] = await f(); } catch (e) { out[k] = e.name + ': ' + e.message; } };
    if (args.touch) await attempt('touch', () => commands.run('touch').then(() => 'ran'));
    if (args.url) await attempt('fetch', () => fetch(args.url).then((r) => r.status));
    if (args.peer) await attempt('peer', () => plugins['peer.echo']({ v: 1 }));
    out.env = { ...process.env };
    return out;
  } });
`;
const PEER = `
defineTool({ name: 'peer.echo', exposeAsTool: true, allow: { env: ['SESSION_ID'] }, handler: ({ args }) => ({ args, env: { ...process.env } }) });
`;

async function workspace(t, config, name = 'kiln.toml') {
  const dir = tempDir(t);
  const srv = await startServer(t);
  const marker = join(dir, 'touched');
  writeFileSync(join(dir, 'notes.ts'), NOTES(marker, srv.port));
  writeFileSync(join(dir, 'peer.ts'), PEER);
  const file = join(dir, name);
  writeFileSync(file, config);
  return { dir, srv, marker, file };
}

test('mode "granted": only declared ∩ granted works; each refused use names its line and leaves no trace', { timeout: 90_000 }, async (t) => {
  const { srv, marker, file } = await workspace(t, `extensions = ["notes.ts", "peer.ts"]
[policy]
mode = "granted"
[grants."notes.ts"]
commands = ["other"]
net = ["localhost"]
env = { SESSION_ID = "abc" }
`);
  const { client } = await mcp(t, ['--config', file], { env: { KILN_GRANT_PASS: 'server-value' } });
  const r = (await call(client, 'notes.add', { touch: true, url: `${srv.base}/hello`, peer: true })).json;
  assert.match(r.touch, /^PermissionError: tool "notes.add" declares commands "touch", but the operator has not granted it to notes\.ts .*add "touch" to commands in \[grants\."notes\.ts"\] of .*kiln\.toml$/);
  assert.equal(existsSync(marker), false, 'the refused command ran');
  assert.match(r.fetch, /declares net "127\.0\.0\.1:\d+", but the operator has not granted it .*add "127\.0\.0\.1:\d+" to net in \[grants\."notes\.ts"\]/);
  assert.equal(srv.count('/hello'), 0, 'the refused request reached the server');
  assert.match(r.peer, /declares tools "peer\.echo", but the operator has not granted it .*add "peer\.echo" to tools/);
  assert.deepEqual(r.env, { SESSION_ID: 'abc' }, 'explicit value given; KILN_GRANT_PASS is declared but not passed through');
  // neither declared nor granted: the manifest's line and the operator's, both quoted
  const undeclared = (await call(client, 'notes.add', { url: 'http://example.com/x' })).json.fetch;
  assert.match(undeclared, /may not reach example\.com: .*; to allow it, add allow: \{ net: \["127\.0\.0\.1:\d+", "localhost:\d+", "example\.com"\] \} to the tool's manifest, and the operator must grant it too: add "example\.com" to net in \[grants\."notes\.ts"\] of .*kiln\.toml$/);
  // what is granted works: localhost (declared and granted)
  const ok = (await call(client, 'notes.add', { url: `http://localhost:${srv.port}/hello` })).json;
  assert.equal(ok.fetch, 200);
  // peer.ts has no grant at all: it gets nothing, not even the env name notes.ts was given
  assert.deepEqual((await call(client, 'peer.echo', {})).json.env, {});
});

test('mode "declared" (the default): a grant narrows only the kinds it lists; [commands.extensions] is the same grant', { timeout: 90_000 }, async (t) => {
  const { srv, marker, file } = await workspace(t, `extensions = ["notes.ts", "peer.ts"]
[grants."notes.ts"]
net = ["localhost"]
[commands.extensions]
"notes.ts" = ["touch"]
`);
  const { client } = await mcp(t, ['--config', file]);
  const r = (await call(client, 'notes.add', { touch: true, url: `${srv.base}/hello`, peer: true })).json;
  assert.equal(r.touch, 'ran');
  assert.equal(existsSync(marker), true);
  assert.match(r.fetch, /lists net without it\); to allow it, add "127\.0\.0\.1:\d+" to net/);
  assert.equal(srv.count('/hello'), 0);
  assert.deepEqual(r.peer, { args: { v: 1 }, env: {} }, 'tools: not listed by the grant, so as declared');
  const both = join(tempDir(t), 'kiln.toml');
  writeFileSync(both, '[grants."x.ts"]\ncommands = ["a"]\n[commands.extensions]\n"x.ts" = ["b"]\n');
  assert.throws(() => readConfig(both), /\[commands\.extensions\] and \[grants\."x\.ts"\] both say which commands/);
});

test('a grant by path does not follow the bytes to another path; a sha256 grant does, wherever they are', { timeout: 90_000 }, async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, 'touched');
  writeFileSync(join(dir, 'src.ts'), NOTES(marker, 1));
  const built = join(dir, 'notes.wasm');
  assert.equal((await kiln(['build', join(dir, 'src.ts'), '-o', built])).code, 0);
  const copy = join(dir, 'copy', 'notes.wasm');
  (await import('node:fs')).mkdirSync(join(dir, 'copy'));
  copyFileSync(built, copy);
  const cfg = join(dir, 'kiln.toml');
  writeFileSync(cfg, `extensions = ["copy/notes.wasm"]\n[policy]\nmode = "granted"\n[grants."notes.wasm"]\ncommands = ["touch"]\n`);
  let { client } = await mcp(t, ['--config', cfg]);
  assert.match((await call(client, 'notes.add', { touch: true })).json.touch, /not granted it to copy\/notes\.wasm/);
  assert.equal(existsSync(marker), false);
  await client.close();
  const sha = (await import('node:crypto')).createHash('sha256').update(readFileSync(built)).digest('hex');
  writeFileSync(cfg, `extensions = ["copy/notes.wasm"]\n[policy]\nmode = "granted"\n[grants."sha256:${sha}"]\ncommands = ["touch"]\n`);
  ({ client } = await mcp(t, ['--config', cfg]));
  assert.equal((await call(client, 'notes.add', { touch: true })).json.touch, 'ran');
});

test('kiln.yaml and kiln.json: one schema, the same behaviour and the same messages', { timeout: 90_000 }, async (t) => {
  const yaml = `extensions: [notes.ts]\npolicy: { mode: granted }\ngrants:\n  notes.ts:\n    net: [localhost]\n`;
  const { srv, file } = await workspace(t, yaml, 'kiln.yaml');
  const { client } = await mcp(t, ['--config', file]);
  assert.match((await call(client, 'notes.add', { url: `${srv.base}/hello` })).json.fetch, /add "127\.0\.0\.1:\d+" to net in \[grants\."notes\.ts"\] of .*kiln\.yaml/);
  assert.equal((await call(client, 'notes.add', { url: `http://localhost:${srv.port}/hello` })).json.fetch, 200);
  const dir = tempDir(t);
  const write = (name, text) => (writeFileSync(join(dir, name), text), join(dir, name));
  const message = (f) => { try { readConfig(f); } catch (e) { return e.message.slice(f.length); } return 'no error'; };
  const bad = [
    [write('a.toml', '[policy]\nmode = "open"\n'), write('a.yaml', 'policy:\n  mode: open\n'), write('a.json', '{"policy":{"mode":"open"}}')],
    [write('b.toml', '[grants."x.ts"]\nnet = ["a b"]\n'), write('b.yaml', 'grants: { x.ts: { net: ["a b"] } }\n'), write('b.json', '{"grants":{"x.ts":{"net":["a b"]}}}')],
    [write('c.toml', '[grants."x.ts"]\nfs = { read = ["../up"] }\n'), write('c.yml', 'grants: { x.ts: { fs: { read: [../up] } } }\n'), write('c.json', '{"grants":{"x.ts":{"fs":{"read":["../up"]}}}}')],
  ];
  for (const [toml, ...others] of bad) {
    assert.notEqual(message(toml), 'no error');
    for (const o of others) assert.equal(message(o), message(toml), o);
  }
  assert.match(message(write('d.yaml', 'a: [')), /: not valid YAML: .*line 1/);
  assert.match(message(write('d.toml', '[sessions]\nmaxSessions = 4\nstore = redis://x\n')), /: not valid TOML \(line 3, column 9\): Invalid TOML document: invalid value/);
  assert.match(message(write('d.json', '{')), /: not valid JSON: /);
  assert.match(message(write('e.yaml', '- 1\n- 2\n')), /the settings must be a table \(an object\), not a list/);
  assert.match(message(write('f.yaml', 'grants:\n  x.ts: {}\n  x.ts: {}\n')), /not valid YAML: .*[Mm]ap keys must be unique/);
  // A key given twice is refused in JSON too (JSON.parse alone would keep the last: here, denyPrivate false).
  assert.match(message(write('f.toml', '[net]\ndenyPrivate = true\ndenyPrivate = false\n')), /not valid TOML/);
  assert.equal(message(write('g.json', '{"net": {"denyPrivate": true,\n  "denyPrivate": false}}')), ': not valid JSON: the key "denyPrivate" is given twice in one object (line 2)');
  // JSON's other whitespace (a lone carriage return, tabs) and escaped spellings of the same key.
  assert.match(message(write('g2.json', '{"net":{"denyPrivate":true,\r"denyPrivate":false}}')), /the key "denyPrivate" is given twice/);
  assert.match(message(write('g3.json', '{"net":{"denyPrivate":true,\t"\\u0064enyPrivate"\r\n:false}}')), /the key "denyPrivate" is given twice/);
  assert.match(message(write('g4.json', '{"a":[{"k":1},{"k":2}],"b":{"c":{"k":1,"x":"\\"k\\":"},"k":3},"a":0}')), /the key "a" is given twice in one object \(line 1\)/);
  assert.equal(message(write('h.json', '{"net": {"denyPrivate": true}, "grants": {"a.ts": {"net": ["x"]}, "b.ts": {"net": ["x"]}}}')), 'no error', 'equal keys in different objects are fine');
});

test('two config files in the working directory: kiln says so instead of picking one', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'kiln.toml'), '');
  writeFileSync(join(dir, 'kiln.json'), '{}');
  const r = await kiln(['mcp'], { cwd: dir });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /found kiln\.toml and kiln\.json here: keep one, or name it with --config/);
});

test('a changed grant applies to the next call, without a restart; tools/list_changed goes out when listings change', { timeout: 90_000 }, async (t) => {
  const { marker, file } = await workspace(t, `extensions = ["notes.ts"]\n[policy]\nmode = "granted"\n`);
  let changed = 0;
  const { client } = await mcp(t, ['--config', file], {
    beforeConnect: (c) => c.setNotificationHandler?.('notifications/tools/list_changed', () => { changed++; }),
  });
  const hints = async () => (await client.listTools()).tools.find((x) => x.name === 'notes.add').annotations;
  assert.equal((await hints()).readOnlyHint, true, 'nothing granted: it cannot reach anything');
  assert.match((await call(client, 'notes.add', { touch: true })).json.touch, /not granted/);
  assert.equal(existsSync(marker), false);
  // an editor's save: write a temporary file, rename it over the config
  writeFileSync(`${file}.tmp`, `extensions = ["notes.ts"]\n[policy]\nmode = "granted"\n[grants."notes.ts"]\ncommands = ["touch"]\n`);
  renameSync(`${file}.tmp`, file);
  assert.ok(await waitUntil(async () => (await call(client, 'notes.add', { touch: true })).json.touch === 'ran', 10_000), 'the new grant never applied');
  assert.equal(existsSync(marker), true);
  assert.equal((await hints()).readOnlyHint, false);
  assert.ok(await waitUntil(() => changed > 0, 5000), 'no notifications/tools/list_changed');
  // a broken save keeps the last good settings in force
  writeFileSync(file, '[policy]\nmode = "everything"\n');
  await new Promise((r) => setTimeout(r, 600));
  assert.equal((await call(client, 'notes.add', { touch: true })).json.touch, 'ran');
  // and taking the grant away applies too
  writeFileSync(file, `extensions = ["notes.ts"]\n[policy]\nmode = "granted"\n`);
  assert.ok(await waitUntil(async () => /not granted/.test((await call(client, 'notes.add', { touch: true })).json.touch), 10_000), 'the revoked grant still applied');
});

test('kiln inspect --config and kiln_extensions show declared, granted and effective per tool; the audit log says what decided', { timeout: 90_000 }, async (t) => {
  const { dir, srv, file } = await workspace(t, `extensions = ["notes.ts"]\n[policy]\nmode = "granted"\n[grants."notes.ts"]\ncommands = ["touch"]\nnet = ["localhost"]\n[audit]\npath = "audit.jsonl"\n`);
  const { client } = await mcp(t, ['--config', file]);
  const tool = (await call(client, 'kiln_extensions')).json.extensions[0].tools[0];
  assert.deepEqual(tool.declared.commands, ['touch', 'other']);
  assert.deepEqual(tool.granted.commands, ['touch']);
  assert.deepEqual(tool.effective.commands, ['touch']);
  assert.deepEqual(tool.effective.net, [`localhost:${srv.port}`]);
  assert.deepEqual(tool.granted.tools, []);
  await call(client, 'notes.add', { touch: true, url: `${srv.base}/hello` });
  const lines = readFileSync(join(dir, 'audit.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === 'decision');
  assert.deepEqual(lines.map((l) => [l.op, l.verdict, l.by]), [['commands.run', 'allow', '[grants."notes.ts"] commands'], ['http.fetch', 'deny', '[grants."notes.ts"] net']]);
  const wasm = join(dir, 'notes.wasm');
  assert.equal((await kiln(['build', join(dir, 'notes.ts'), '-o', wasm])).code, 0);
  writeFileSync(join(dir, 'inspect.toml'), `[policy]\nmode = "granted"\n[grants."notes.wasm"]\ncommands = ["touch", "rm"]\n`);
  const out = (await kiln(['inspect', wasm, '--config', join(dir, 'inspect.toml')])).stdout;
  assert.match(out, /mode "granted"/);
  assert.match(out, /commands {2}touch, other → touch, rm → touch\n/);
  assert.match(out, /net {7}127\.0\.0\.1:\d+, localhost:\d+ → \(none\) → \(none\)\n/);
  const json = JSON.parse((await kiln(['inspect', wasm, '--json', '--config', join(dir, 'inspect.toml')])).stdout);
  assert.deepEqual(json.tools[0].authority.effective.commands, ['touch']);
});

test('allow.browser under a grant: a page loads only hosts both declared and granted', { timeout: 90_000 }, async (t) => {
  const dir = tempDir(t);
  const srv = await startServer(t);
  writeFileSync(join(dir, 'shot.ts'), `
defineTool({ name: 'shot.go', exposeAsTool: true, allow: { browser: ['127.0.0.1:${srv.port}', 'localhost:${srv.port}'] },
  handler: async ({ args, page }) => { try { return (await page.goto(args.url)).status; } catch (e) { return e.name + ': ' + e.message; } } });
`);
  const cfg = join(dir, 'kiln.toml');
  writeFileSync(cfg, `extensions = ["shot.ts"]\n[policy]\nmode = "granted"\n[grants."shot.ts"]\nbrowser = ["localhost"]\n`);
  const { client } = await mcp(t, ['--config', cfg]);
  const refused = (await call(client, 'shot.go', { url: `${srv.base}/hello` })).text;
  assert.match(refused, /declares browser "127\.0\.0\.1:\d+", but the operator has not granted it .*add "127\.0\.0\.1:\d+" to browser in \[grants\."shot\.ts"\]/);
  assert.equal(srv.count('/hello'), 0, 'the refused page reached the server');
  assert.equal((await call(client, 'shot.go', { url: `http://localhost:${srv.port}/hello` })).text, '200');
  // a redirect from the granted host to the declared-but-ungranted one is refused on the hop
  const before = srv.hits.length;
  const hop = (await call(client, 'shot.go', { url: `http://localhost:${srv.port}/redirect?to=${encodeURIComponent(`${srv.base}/hello`)}` })).text;
  assert.match(hop, /not granted it/);
  assert.equal(srv.hits.slice(before).filter((h) => h.path === '/hello').length, 0, 'the redirect hop reached the server');
});

test('mode "ask": a declared use the grant does not list is put to a human; decline leaves no trace; nobody to ask refuses with the grant line', { timeout: 90_000 }, async (t) => {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  const { kilnBin } = await import('./helpers.mjs');
  const { srv, marker, file } = await workspace(t, `extensions = ["notes.ts"]\n[policy]\nmode = "ask"\n[grants."notes.ts"]\nnet = ["localhost"]\n`);
  const asked = [];
  const queue = [{ action: 'decline' }, { action: 'accept', content: { allow: 'once' } }, { action: 'accept', content: { allow: 'once' } }];
  const client = new Client({ name: 'ask-test', version: '0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params.message);
    return queue.shift() ?? { action: 'decline' };
  });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', '--config', file], stderr: 'pipe' }));
  t.after(() => client.close());
  const declined = (await call(client, 'notes.add', { touch: true })).json;
  assert.match(declined.touch, /^PermissionError: .*declined/);
  assert.equal(existsSync(marker), false, 'a declined command ran');
  assert.match(asked[0], /touch/);
  assert.match(asked[0], /^Asked because of kiln's \[policy\] mode = "ask" \(commands "touch" is declared, not granted\)\. Decline to refuse it\.$/m, 'the rule reads as kiln.toml writes it');
  assert.equal((await call(client, 'notes.add', { touch: true })).json.touch, 'ran');
  assert.equal(existsSync(marker), true);
  // net: 127.0.0.1 is declared, not granted: asked, then the request goes out
  assert.equal((await call(client, 'notes.add', { url: `${srv.base}/hello` })).json.fetch, 200);
  assert.equal(asked.length, 3);
  // granted: nobody is asked
  assert.equal((await call(client, 'notes.add', { url: `http://localhost:${srv.port}/hello` })).json.fetch, 200);
  assert.equal(asked.length, 3);
  // a client that cannot elicit: refused, with the grant's line
  const { client: plain } = await mcp(t, ['--config', file]);
  const before = srv.count('/hello');
  const r = (await call(plain, 'notes.add', { url: `${srv.base}/hello` })).json.fetch;
  assert.match(r, /\[policy\] mode = "ask".*cannot be asked.*to allow it, add "127\.0\.0\.1:\d+" to net in \[grants\."notes\.ts"\]/);
  assert.equal(srv.count('/hello'), before, 'the refused request reached the server');
});

const FILES = `
defineTool({ name: 'files.do', exposeAsTool: true, allow: { fs: { read: ['.'], write: ['.'] } },
  handler: async ({ args, fs }) => {
    try {
      if (args.op === 'write') { await fs.writeFile(args.path, args.text ?? 'x'); return 'written'; }
      if (args.op === 'read') return await fs.readFile(args.path, 'utf8');
      if (args.op === 'rm') { await fs.rm(args.path); return 'removed'; }
    } catch (e) { return e.name + ': ' + e.message; }
  } });
`;

test('allow.fs under grants, approvals, and the operator\'s own files no tool may touch', { timeout: 90_000 }, async (t) => {
  const dir = tempDir(t);
  for (const d of ['data', 'out']) (await import('node:fs')).mkdirSync(join(dir, d));
  writeFileSync(join(dir, 'files.ts'), FILES);
  const cfg = join(dir, 'kiln.toml');
  const base = `extensions = ["files.ts"]\n[fs]\nroot = "."\n[audit]\npath = "audit.jsonl"\n[approvals]\nstore = "approvals.json"\n`;
  writeFileSync(cfg, base + `[policy]\nmode = "granted"\n[grants."files.ts"]\nfs = { read = ["data", "./out/"], write = ["out"] }\n`);
  const { client } = await mcp(t, ['--config', cfg]);
  const r = async (args) => (await call(client, 'files.do', args)).text;
  assert.match(await r({ op: 'write', path: 'data/x.txt' }), /declares fs\.write "data\/x\.txt", but the operator has not granted it .*add "data\/x\.txt" to fs\.write in \[grants\."files\.ts"\]/);
  assert.equal(existsSync(join(dir, 'data/x.txt')), false, 'the refused write happened');
  assert.equal(await r({ op: 'write', path: 'out/y.txt', text: 'hi' }), 'written');
  assert.equal(await r({ op: 'read', path: 'out/y.txt' }), 'hi');
  assert.match(await r({ op: 'read', path: 'secret.txt' }), /not granted/);
  // the audit log says which grant decided, read and write apart
  const decided = readFileSync(join(dir, 'audit.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === 'decision');
  assert.deepEqual(decided.map((l) => [l.op, l.verdict, l.by]), [
    ['fs.writeFile', 'deny', '[grants."files.ts"] fs.write'], ['fs.writeFile', 'allow', '[grants."files.ts"] fs.write'],
    ['fs.readFile', 'allow', '[grants."files.ts"] fs.read'], ['fs.readFile', 'deny', '[grants."files.ts"] fs.read'],
  ]);
  // the operator's files: the config, the audit log, the approvals store, whatever the prefixes say
  writeFileSync(cfg, base + `[grants."files.ts"]\nfs = { read = ["."], write = ["."] }\n`);
  const { client: c2 } = await mcp(t, ['--config', cfg]);
  const before = readFileSync(cfg, 'utf8');
  for (const path of ['kiln.toml', './kiln.toml', 'out/../kiln.toml', 'audit.jsonl', 'approvals.json']) {
    assert.match((await call(c2, 'files.do', { op: 'write', path, text: 'pwned' })).text, /one of the operator's files/, path);
  }
  assert.match((await call(c2, 'files.do', { op: 'read', path: 'kiln.toml' })).text, /one of the operator's files/);
  assert.equal(readFileSync(cfg, 'utf8'), before, 'the config was changed');
  assert.equal(existsSync(join(dir, 'approvals.json')), false, 'the approvals store was written');
  // [approvals] strict asks before every write; a client that cannot be asked is refused, and nothing is written
  writeFileSync(cfg, base.replace('[approvals]\n', '[approvals]\npreset = "strict"\n') + `[grants."files.ts"]\nfs = { read = ["."], write = ["."] }\n`);
  const { client: c3 } = await mcp(t, ['--config', cfg]);
  assert.match((await call(c3, 'files.do', { op: 'write', path: 'out/z.txt' })).text, /without a human's approval .*strict/);
  assert.equal(existsSync(join(dir, 'out/z.txt')), false);
  assert.match((await call(c3, 'files.do', { op: 'rm', path: 'out/y.txt' })).text, /without a human's approval/);
  assert.equal(existsSync(join(dir, 'out/y.txt')), true, 'the refused rm removed the file');
});

test('the operator\'s files stay out of reach through a symlinked root or prefix, extension sources and /proc included', { timeout: 90_000 }, async (t) => {
  const fsm = await import('node:fs');
  const dir = tempDir(t);
  fsm.mkdirSync(join(dir, 'ext'));
  writeFileSync(join(dir, 'ext/files.ts'), FILES);
  fsm.symlinkSync('.', join(dir, 'ws')); // the workspace root is a symlink to the config's own directory
  const cfg = join(dir, 'kiln.toml');
  writeFileSync(cfg, `extensions = ["ext"]\n[fs]\nroot = "ws"\n`);
  const { client } = await mcp(t, ['--config', cfg]);
  const r = async (args) => (await call(client, 'files.do', args)).text;
  assert.match(await r({ op: 'rm', path: '.' }), /one of the operator's files/);
  assert.match(await r({ op: 'write', path: 'ext/other.ts', text: "defineTool({ name: 'x.y', allow: { commands: { a: 'touch PWNED' } }, handler: () => 1 })" }), /one of the operator's files/);
  assert.match(await r({ op: 'write', path: 'kiln.yaml', text: 'extensions: []' }), /one of the operator's files/, 'a second config name beside the first');
  assert.match(await r({ op: 'write', path: 'ext/files.ts', text: '' }), /one of the operator's files/);
  assert.equal(fsm.existsSync(cfg), true);
  assert.equal(fsm.existsSync(join(dir, 'ext/other.ts')), false);
  assert.equal(readFileSync(join(dir, 'ext/files.ts'), 'utf8'), FILES);
  // a root that reaches /proc: the server's environment is never served
  const root = join(tempDir(t), 'kiln.toml');
  writeFileSync(root, `extensions = ["${join(dir, 'ext')}"]\n[fs]\nroot = "/"\n`);
  const { client: c2 } = await mcp(t, ['--config', root]);
  assert.match((await call(c2, 'files.do', { op: 'read', path: 'proc/self/environ' })).text, /describes the server itself and is never served/);
});

test('[approvals] and [net] changes apply live; an empty save is not applied', { timeout: 90_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = tempDir(t);
  (await import('node:fs')).mkdirSync(join(dir, 'out'));
  writeFileSync(join(dir, 'files.ts'), FILES);
  writeFileSync(join(dir, 'net.ts'), `defineTool({ name: 'net.get', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => { try { return (await fetch('${srv.base}/hello')).status; } catch (e) { return e.message; } } });`);
  const cfg = join(dir, 'kiln.toml');
  const base = `extensions = ["files.ts", "net.ts"]\n[fs]\nroot = "."\n`;
  writeFileSync(cfg, base);
  const { client } = await mcp(t, ['--config', cfg]);
  assert.equal((await call(client, 'files.do', { op: 'write', path: 'out/a.txt' })).text, 'written');
  assert.equal((await call(client, 'net.get')).text, '200');
  writeFileSync(cfg, base + `[approvals]\ndefault = "deny"\n[net]\ndenyPrivate = true\n`);
  let n = 0;
  assert.ok(await waitUntil(async () => /denies it/.test((await call(client, 'files.do', { op: 'write', path: `out/poll${n++}.txt` })).text), 10_000), 'the new [approvals] never applied');
  assert.match((await call(client, 'files.do', { op: 'write', path: 'out/b.txt' })).text, /denies it/);
  assert.equal(existsSync(join(dir, 'out/b.txt')), false);
  const hits = srv.count('/hello');
  assert.match((await call(client, 'net.get')).text, /denyPrivate/, 'the new [net] applies to a session made before the change');
  assert.equal(srv.count('/hello'), hits);
  writeFileSync(cfg, '');
  await new Promise((r) => setTimeout(r, 700));
  assert.match((await call(client, 'files.do', { op: 'write', path: 'out/c.txt' })).text, /denies it/, 'an empty save dropped the settings');
});
