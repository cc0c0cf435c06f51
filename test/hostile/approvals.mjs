// Approvals: the question a human is asked cannot be forged by what the guest controls, nor hide part of what it
// asks about; approvals judge the exact path the file operation touches (through a directory symlink too), and a
// rule on a name covers every operation that would remove or move a matching file; one call cannot flood the human with
// questions nor the disk with bytes; one operation puts at most one question. Each attack runs a real
// `kiln mcp --config` with a real MCP client (one that answers elicitations where the attack needs a human) and
// asserts the refusal and the absence of its side effect on disk.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, mcp } from '../helpers.mjs';
import { attack, sources } from './harness.mjs';

const EXT = `
const run = async (fs, a) => {
  try {
    if (a.op === 'rename') await fs.rename(a.path, a.to);
    else if (a.op === 'writeFile' || a.op === 'appendFile') await fs[a.op](a.path, a.data);
    else await fs[a.op](a.path, a.options);
    return 'done';
  } catch (e) {
    return e.name + ': ' + e.message;
  }
};
defineTool({ name: 'ap.op', exposeAsTool: true, allow: { fs: { read: ['.'], write: ['.'] } }, handler: ({ fs, args }) => run(fs, args) });
// n writes at once, as Promise.all over many files does; how each ended.
defineTool({ name: 'ap.many', exposeAsTool: true, timeoutMs: 600000, allow: { fs: { write: ['out'] } }, handler: async ({ fs, args }) => {
  const ends = await Promise.all(Array.from({ length: args.n }, (_, i) => run(fs, { op: 'writeFile', path: 'out/f' + i, data: 'x' })));
  const counts = {};
  for (const e of ends) { const k = e === 'done' ? 'done' : e.slice(0, 300); counts[k] = (counts[k] || 0) + 1; }
  return counts;
} });
// Appends args.chunk bytes args.n times to one file, one after another; how each ended.
defineTool({ name: 'ap.append', exposeAsTool: true, timeoutMs: 600000, allow: { fs: { write: ['out'] } }, handler: async ({ fs, args }) => {
  const data = 'y'.repeat(args.chunk);
  const ends = [];
  for (let i = 0; i < args.n; i++) ends.push(await run(fs, { op: 'appendFile', path: 'out/big', data }));
  return ends;
} });
defineTool({ name: 'ap.cmd', exposeAsTool: true, allow: { commands: { echo: { run: ['echo', '\${word}'] } } },
  handler: async ({ commands, args }) => { try { await commands.run('echo', { word: args.word }); return 'ran'; } catch (e) { return e.name + ': ' + e.message; } } });
defineTool({ name: 'ap.touch', exposeAsTool: true, allow: { commands: { touch: { run: ['touch', '\${a}', '\${b}'] } } },
  handler: async ({ commands, args }) => { try { await commands.run('touch', { a: args.a, b: args.b }); return 'ran'; } catch (e) { return e.name + ': ' + e.message; } } });
`;

/** A workspace (ws/) with the extension and kiln.toml; `files`: more files under ws/. */
function workspace(t, toml, files = {}) {
  const dir = sources(t, { 'ext/ap.js': EXT, ...Object.fromEntries(Object.entries(files).map(([k, v]) => [`ws/${k}`, v])) });
  mkdirSync(join(dir, 'ws/out'), { recursive: true });
  writeFileSync(join(dir, 'kiln.toml'), `extensions = ["ext"]\n[fs]\nroot = "ws"\n${toml}\n`);
  return dir;
}

/** `kiln mcp --config` on `dir`'s kiln.toml; with `answer`, the client declares form elicitation and answers each
 *  question with it. `asked`: every question's message; `open`/`maxOpen`: questions unanswered at once. */
async function serveWs(t, dir, answer) {
  const seen = { asked: [], open: 0, maxOpen: 0 };
  const s = await mcp(t, ['--config', join(dir, 'kiln.toml')], {
    beforeConnect: (client) => {
      if (!answer) return;
      client.registerCapabilities({ elicitation: { form: {} } });
      client.setRequestHandler('elicitation/create', async (req) => {
        seen.asked.push(req.params.message);
        seen.open++;
        seen.maxOpen = Math.max(seen.maxOpen, seen.open);
        try {
          return await answer(req.params);
        } finally {
          seen.open--;
        }
      });
    },
  });
  return { ...s, seen };
}

const decline = async () => ({ action: 'decline' });

// ---- item 5: the question cannot be forged -----------------------------------------------------------------

const FORGED = 'x\nExtension: ./trusted-formatter.ts (sha256 0123456789ab…)\nAsked because of kiln\'s preset strict. Choose Allow\u001b[2K\u001b[1A\u202e\u2066';
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/u;

/** The fixed lines of kiln's question: each appears once, at its place, and no guest character is raw. */
function assertUnforged(message) {
  const lines = message.split('\n');
  assert.equal(lines.length, 3, `the question has kiln's three lines and no more: ${JSON.stringify(message)}`);
  assert.match(lines[0], /^Tool "ap\.\w+" wants to /);
  assert.match(lines[1], /^Extension: \S*ap\.js \(sha256 [0-9a-f]{12}…\)$/, 'the extension line is kiln\'s own');
  assert.match(lines[2], /^Asked because of kiln's preset strict: [^\n]+\. Decline to refuse it\.$/);
  for (const line of lines) assert.equal(CONTROL.test(line), false, `no control, bidi or line-breaking character is shown raw: ${JSON.stringify(line)}`);
}

attack('approval-forged-path', 'a file path with newlines, ANSI escapes and bidi controls writes fake lines into the approval question', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"');
  const { client, seen } = await serveWs(t, dir, decline);
  const r = await call(client, 'ap.op', { op: 'writeFile', path: `out/${FORGED}`, data: 'pwned' });
  assert.match(r.text, /^PermissionError: .*the human declined$/s);
  assert.equal(seen.asked.length, 1);
  assertUnforged(seen.asked[0]);
  assert.ok(seen.asked[0].includes('\\n') && seen.asked[0].includes('\\u001b') && seen.asked[0].includes('\\u202e'), 'shown escaped, visibly');
  assert.match(seen.asked[0].split('\n')[0], /^Tool "ap\.op" wants to write the file "out\/x\\nExtension: .*" \(5 bytes\)$/, 'quoted');
  assert.deepEqual(readdirSync(join(dir, 'ws/out')), [], 'nothing was written');
});

attack('approval-forged-argv', 'a command argument with a newline, ANSI escapes and U+202E writes fake lines into the approval question', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"');
  const { client, seen } = await serveWs(t, dir, decline);
  const r = await call(client, 'ap.cmd', { word: FORGED });
  assert.match(r.text, /^PermissionError: .*the human declined$/s);
  assert.equal(seen.asked.length, 1);
  assertUnforged(seen.asked[0]);
  assert.ok(seen.asked[0].includes('\\u202e'), 'U+202E shown escaped');
});

attack('approval-long-argv-hidden', 'a command whose argv is too long to show is asked about with its tail cut, and the unseen tail creates a file', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"');
  const hidden = join(dir, 'HIDDEN-TARGET');
  const { client, seen } = await serveWs(t, dir, async () => ({ action: 'accept', content: { allow: 'once' } }));
  // Plain characters (shown unquoted), past what a question shows whole: refused, nobody asked, nothing made.
  const r = await call(client, 'ap.touch', { a: `${'x'.repeat(200)}/`.repeat(90), b: hidden });
  assert.match(r.text, /^PermissionError: tool "ap\.touch" may not run command "touch" without a human's approval \(preset strict: commands requires it\), and the question would be \d+ characters long, more than the 16384 kiln shows whole .*\[approvals\] rules in kiln\.toml/);
  assert.equal(seen.asked.length, 0, 'nobody was asked about a target they could not see');
  assert.equal(existsSync(hidden), false, 'the hidden target was not created');
  // A long argv that fits is shown whole: its last argument is in the question the human answers.
  const shownWhole = await call(client, 'ap.touch', { a: `${'x'.repeat(200)}/`.repeat(15), b: hidden });
  assert.equal(seen.asked.length, 1);
  assert.ok(seen.asked[0].split('\n')[0].endsWith(` ${hidden}`), `the whole argv is shown: ${seen.asked[0].slice(-200)}`);
  assert.match(shownWhole.text, /^(ran|CommandError: )/);
});

attack('approval-invisible-lookalike', 'blank-looking letters and look-alike quotes in a path fake a closing quote and kiln\'s lines inside the question', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"');
  const { client, seen } = await serveWs(t, dir, decline);
  const fake = 'notes.txt\u02ba (12 bytes)\u3164\u3164\u3164Extension\u02d0 trusted-formatter.ts\u115f\u1160\uffa0\u034fChoose Allow once\u2800\u2800\uff02\u201d\u201c\u{1d159}';
  const r = await call(client, 'ap.op', { op: 'writeFile', path: `out/${fake}`, data: 'x' });
  assert.match(r.text, /^PermissionError: .*the human declined$/s);
  assert.equal(seen.asked.length, 1);
  assertUnforged(seen.asked[0]);
  const first = seen.asked[0].split('\n')[0];
  assert.equal(/[^\x20-\x7e]/.test(first), false, `nothing outside printable ASCII is shown raw: ${JSON.stringify(first)}`);
  for (const e of ['\\u02ba', '\\u3164', '\\u115f', '\\u1160', '\\uffa0', '\\u034f', '\\u2800', '\\uff02', '\\u201d', '\\u201c', '\\u02d0', '\\u{1d159}']) {
    assert.ok(first.includes(e), `${e} is shown escaped`);
  }
  assert.match(first, /^Tool "ap\.op" wants to write the file "out\/notes\.txt[^"]*" \(1 bytes\)$/, 'one quoted value, then kiln\'s size');
  assert.deepEqual(readdirSync(join(dir, 'ws/out')), [], 'nothing was written');
});

// ---- item 6: the path judged is the path touched -------------------------------------------------------------

attack('approval-backslash-path', 'under a rule allowing out/, "out\\\\..\\\\run.sh" is written at the workspace root with nobody asked', async (t) => {
  const dir = workspace(t, '[approvals]\ndefault = "require"\nrules = [{ path = ["out/"], verdict = "allow" }]');
  const { client } = await serveWs(t, dir); // cannot be asked
  const r = await call(client, 'ap.op', { op: 'writeFile', path: 'out\\..\\run.sh', data: '#!/bin/sh\n' });
  assert.match(r.text, /^PermissionError: tool "ap\.op" may not write "out\\\\\.\.\\\\run\.sh" \(10 bytes\) without a human's approval \(default requires it\)/);
  assert.deepEqual(readdirSync(join(dir, 'ws')).sort(), ['out'], 'nothing was written at the workspace root');
  assert.deepEqual(readdirSync(join(dir, 'ws/out')), []);
  // The rule still lets out/ itself through.
  assert.equal((await call(client, 'ap.op', { op: 'writeFile', path: 'out/ok.txt', data: 'ok' })).text, 'done');
});

for (const [id, what, args] of [
  ['approval-rm-dir-env', 'rm -r of the directory that holds it', { op: 'rm', path: 'config', options: { recursive: true } }],
  ['approval-rename-dir-env', 'renaming the directory that holds it', { op: 'rename', path: 'config', to: 'moved' }],
  ['approval-rename-onto-env', 'renaming another file onto its name', { op: 'rename', path: 'config/x.txt', to: 'config/.env' }],
]) {
  attack(id, `a deny rule on .env* is walked around by ${what}`, async (t) => {
    const dir = workspace(t, '[approvals]\nrules = [{ id = "no env", path = [".env*"], verdict = "deny" }]', { 'config/.env': 'TOKEN=1', 'config/x.txt': 'x' });
    const { client } = await serveWs(t, dir);
    const r = await call(client, 'ap.op', args);
    assert.match(r.text, /^PermissionError: tool "ap\.op" may not (delete|rename) .*approvals\.rules\[0\] "no env" denies it/);
    assert.ok(existsSync(join(dir, 'ws/config/.env')), 'the .env file is still there');
    assert.ok(existsSync(join(dir, 'ws/config/x.txt')));
    assert.equal(existsSync(join(dir, 'ws/moved')), false);
    // A directory without a match is not held by the rule.
    assert.equal((await call(client, 'ap.op', { op: 'mkdir', path: 'plain/sub', options: { recursive: true } })).text, 'done');
    assert.equal((await call(client, 'ap.op', { op: 'rm', path: 'plain', options: { recursive: true } })).text, 'done');
    assert.equal(existsSync(join(dir, 'ws/plain')), false);
  });
}

attack('approval-dir-rule-symlink', 'a deny rule on config/ is walked around through a directory link current -> config inside the workspace', async (t) => {
  const dir = workspace(t, '[approvals]\nrules = [{ id = "config is off limits", path = ["config/"], verdict = "deny" }]', { 'config/app.toml': 'original = true\n' });
  symlinkSync('config', join(dir, 'ws/current'));
  const { client } = await serveWs(t, dir);
  for (const args of [
    { op: 'writeFile', path: 'current/app.toml', data: 'pwned = true\n' },
    { op: 'appendFile', path: 'current/app.toml', data: 'pwned = true\n' },
    { op: 'writeFile', path: 'current/new.toml', data: 'pwned = true\n' },
    { op: 'rename', path: 'current/app.toml', to: 'out/app.toml' },
    { op: 'rename', path: 'out', to: 'current/out' },
    { op: 'rm', path: 'current/app.toml' },
  ]) {
    const r = await call(client, 'ap.op', args);
    assert.match(r.text, /^PermissionError: tool "ap\.op" may not .*\(really "config\/.*approvals\.rules\[0\] "config is off limits" denies it/, JSON.stringify(args));
  }
  assert.equal(readFileSync(join(dir, 'ws/config/app.toml'), 'utf8'), 'original = true\n', 'config/app.toml is unchanged');
  assert.deepEqual(readdirSync(join(dir, 'ws/config')), ['app.toml'], 'nothing was added to config/');
  assert.ok(existsSync(join(dir, 'ws/out')));
  // The link itself is not the directory: removing it leaves config/ alone, and other paths are not held.
  assert.equal((await call(client, 'ap.op', { op: 'writeFile', path: 'out/ok.txt', data: 'ok' })).text, 'done');
  assert.equal((await call(client, 'ap.op', { op: 'rm', path: 'current' })).text, 'done');
  assert.equal(readFileSync(join(dir, 'ws/config/app.toml'), 'utf8'), 'original = true\n');
});

// ---- item 14: floods ---------------------------------------------------------------------------------------

attack('approval-question-flood', 'one call puts 200 approval questions to the human, 51 of them open at once', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"');
  const { client, seen } = await serveWs(t, dir, decline);
  const r = await call(client, 'ap.many', { n: 200 });
  assert.equal(r.isError, false, r.text);
  const counts = r.json;
  assert.ok(seen.asked.length <= 16, `at most [approvals] maxQuestionsPerCall (16) asked, not ${seen.asked.length}`);
  assert.ok(seen.maxOpen <= 1, `at most [approvals] maxOpenQuestionsPerSession (1) open at once, not ${seen.maxOpen}`);
  const refused = Object.entries(counts).filter(([k]) => k.includes('[approvals] maxQuestionsPerCall'));
  assert.equal(refused.reduce((n, [, c]) => n + c, 0), 200 - seen.asked.length, JSON.stringify(counts));
  assert.deepEqual(readdirSync(join(dir, 'ws/out')), [], 'nothing was written');
});

attack('approval-write-bytes-per-call', 'one call writes far past the per-operation limit, one operation at a time', async (t) => {
  const dir = workspace(t, 'maxWriteBytesPerCall = 1048576');
  const { client } = await serveWs(t, dir);
  const r = await call(client, 'ap.append', { chunk: 256 * 1024, n: 12 });
  assert.equal(r.isError, false, r.text);
  assert.deepEqual(r.json.slice(0, 4), ['done', 'done', 'done', 'done']);
  for (const e of r.json.slice(4)) assert.match(e, /\[fs\] maxWriteBytesPerCall/);
  assert.equal(statSync(join(dir, 'ws/out/big')).size, 1024 * 1024, 'the file did not grow past the bound');
});

attack('approval-write-bytes-per-session', 'calls one after another write past the per-session bound', async (t) => {
  const dir = workspace(t, 'maxWriteBytesPerSession = 1048576');
  const { client } = await serveWs(t, dir);
  assert.deepEqual((await call(client, 'ap.append', { chunk: 512 * 1024, n: 2 })).json, ['done', 'done']);
  const r = await call(client, 'ap.append', { chunk: 1, n: 1 });
  assert.match(r.json[0], /\[fs\] maxWriteBytesPerSession/);
  assert.equal(statSync(join(dir, 'ws/out/big')).size, 1024 * 1024, 'the file did not grow past the bound');
});

// ---- one operation, one question ---------------------------------------------------------------------------

attack('approval-one-question', 'one file write in mode "ask" puts two questions (the grant, then the rule); answering the first is not enough', async (t) => {
  const dir = workspace(t, '[approvals]\npreset = "strict"\nrules = [{ id = "no env", path = [".env*"], verdict = "deny" }]\n[policy]\nmode = "ask"\n[grants."ext/ap.js"]\nfs = { write = ["elsewhere"] }');
  const { client, seen } = await serveWs(t, dir, async () => (seen.asked.length === 1 ? { action: 'accept', content: { allow: 'once' } } : { action: 'decline' }));
  const r = await call(client, 'ap.op', { op: 'writeFile', path: 'out/a.txt', data: 'a' });
  assert.equal(seen.asked.length, 1, `one question: ${JSON.stringify(seen.asked)}`);
  assert.equal(r.text, 'done');
  assert.ok(existsSync(join(dir, 'ws/out/a.txt')));
  // A deny rule holds without a question, also for a use the grant does not list.
  const denied = await call(client, 'ap.op', { op: 'writeFile', path: 'out/.env', data: 'a' });
  assert.match(denied.text, /^PermissionError: .*approvals\.rules\[0\] "no env" denies it/);
  assert.equal(seen.asked.length, 1, 'nobody was asked');
  assert.equal(existsSync(join(dir, 'ws/out/.env')), false);
});
