// [approvals]: human approvals asked through MCP elicitation. Pure tests of `decide` (presets,
// custom rules in order, every condition), then a real `kiln mcp` with a real SDK client that declares
// elicitation and answers: accept once / for the session / always (kept in the store, surviving a restart),
// decline, dismissal, no answer in time, and the call cancelled while asking. Every refusal is proven by an
// absent side effect: the marker file a command would create, the request the local server would log. A
// client that cannot elicit gets the rule that would allow the call; `deny` never asks; the audit file holds
// the decisions, questions and answers and no argument value; over Streamable HTTP the question goes to the
// MCP session that made the call.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { call, kiln, kilnBin, tempDir, waitUntil } from './helpers.mjs';
import { startServer } from './http-server.mjs';
import { escaped, shown } from '../dist/host/policy/approvals/escaping.js';
import { allowHint, question, QUESTION_MAX_CHARS, safeTarget } from '../dist/host/policy/approvals/question.js';
import { decide, pathMatches } from '../dist/host/policy/approvals/rules.js';
import { DEFAULT_APPROVALS, parseApprovals } from '../dist/host/policy/approvals/settings.js';

// ---- decide(), pure ----------------------------------------------------------------------------------------

const EXT = { file: '/srv/ext/notes.ts', sha256: 'ab'.repeat(32) };
const settings = (s = {}) => ({ ...DEFAULT_APPROVALS, ...s });
const verdict = (req, s) => decide({ tool: 'notes.edit', extension: EXT, ...req }, settings(s));

test('presets: permissive allows everything; balanced and strict as docs/configuration.md describes them', () => {
  const ops = [
    { op: 'fs.read', path: 'src/a.ts' }, { op: 'fs.write', path: 'src/a.ts', size: 10 }, { op: 'fs.write', path: 'big.bin', size: 10_000 },
    { op: 'fs.delete', path: 'src/a.ts' }, { op: 'fs.rename', path: 'a', to: 'b' }, { op: 'fs.write', path: '.env', size: 1 },
    { op: 'command', command: 'ls', argv: ['ls'] }, { op: 'net', url: 'https://x.test/', method: 'POST' }, { op: 'browser.navigate', url: 'https://x.test/' },
  ];
  for (const r of ops) assert.deepEqual(verdict(r, { preset: 'permissive' }), { verdict: 'allow', rule: 'default' }, JSON.stringify(r));

  const balanced = (r) => verdict(r, { preset: 'balanced' }).verdict;
  assert.equal(balanced({ op: 'fs.write', path: 'src/a.ts', size: 5000 }), 'allow', 'a small write is free');
  assert.equal(balanced({ op: 'fs.write', path: 'src/a.ts', size: 5001 }), 'require', 'over 5000 bytes');
  assert.equal(balanced({ op: 'fs.write', path: 'src/a.ts' }), 'allow', 'no size: the size rule does not match');
  assert.equal(balanced({ op: 'fs.delete', path: 'src/a.ts' }), 'require');
  assert.equal(balanced({ op: 'fs.rename', path: 'src/a.ts', to: 'src/b.ts' }), 'require');
  for (const path of ['.env', '.env.production', 'app/.env.local', '.github/workflows/ci.yml', 'wrangler.toml', 'deploy/wrangler.toml', '.git/hooks/pre-commit', 'Jenkinsfile']) {
    assert.equal(balanced({ op: 'fs.write', path, size: 1 }), 'require', path);
    assert.equal(balanced({ op: 'fs.read', path }), 'require', `reading ${path}`);
  }
  assert.equal(balanced({ op: 'fs.rename', path: 'notes.txt', to: '.github/x' }), 'require', 'either end of a rename');
  assert.equal(balanced({ op: 'fs.read', path: 'src/env.ts' }), 'allow');
  assert.equal(balanced({ op: 'command', command: 'ls' }), 'allow', 'commands are free in balanced');
  assert.equal(balanced({ op: 'net', url: 'https://x.test/' }), 'allow');

  const strict = (r) => verdict(r, { preset: 'strict' });
  assert.deepEqual(strict({ op: 'fs.write', path: 'src/a.ts', size: 1 }), { verdict: 'require', rule: 'preset strict: writes, deletes and renames' });
  assert.equal(strict({ op: 'fs.delete', path: 'a' }).verdict, 'require');
  assert.equal(strict({ op: 'fs.rename', path: 'a', to: 'b' }).verdict, 'require');
  assert.deepEqual(strict({ op: 'command', command: 'ls' }), { verdict: 'require', rule: 'preset strict: commands' }, 'a command can write anything');
  assert.equal(strict({ op: 'fs.read', path: 'src/a.ts' }).verdict, 'allow');
  assert.equal(strict({ op: 'fs.read', path: '.env' }).verdict, 'require');
  assert.equal(strict({ op: 'net', url: 'https://x.test/' }).verdict, 'allow');
  assert.equal(strict({ op: 'browser.navigate', url: 'https://x.test/' }).verdict, 'allow');
});

test('custom rules: first match wins, before the preset; then the default', () => {
  // The documented example: require unless a rule allows it.
  const rules = [
    { id: 'allow-small-test-writes', op: ['fs.write'], path: ['test/'], maxSize: 4096, verdict: 'allow' },
    { id: 'always-approve-deletions', op: ['fs.delete', 'fs.rename'], verdict: 'require' },
    { op: ['command'], command: ['rm'], verdict: 'deny' },
  ];
  const s = { rules, default: 'require' };
  assert.deepEqual(verdict({ op: 'fs.write', path: 'test/a.test.ts', size: 100 }, s), { verdict: 'allow', rule: 'approvals.rules[0] "allow-small-test-writes"' });
  assert.deepEqual(verdict({ op: 'fs.write', path: 'test/a.test.ts', size: 5000 }, s), { verdict: 'require', rule: 'default' }, 'maxSize');
  assert.deepEqual(verdict({ op: 'fs.write', path: 'src/a.ts', size: 1 }, s), { verdict: 'require', rule: 'default' });
  assert.deepEqual(verdict({ op: 'fs.delete', path: 'test/a' }, s), { verdict: 'require', rule: 'approvals.rules[1] "always-approve-deletions"' });
  assert.deepEqual(verdict({ op: 'command', command: 'rm', argv: ['rm', '-rf', 'x'] }, s), { verdict: 'deny', rule: 'approvals.rules[2]' });
  assert.deepEqual(verdict({ op: 'command', command: 'ls' }, s), { verdict: 'require', rule: 'default' });

  // Order decides between overlapping rules.
  const a = { op: ['command'], verdict: 'allow' }, d = { op: ['command'], command: ['deploy'], verdict: 'deny' };
  assert.equal(verdict({ op: 'command', command: 'deploy' }, { rules: [a, d] }).verdict, 'allow');
  assert.equal(verdict({ op: 'command', command: 'deploy' }, { rules: [d, a] }).verdict, 'deny');
  // Custom rules come before the preset's.
  assert.deepEqual(verdict({ op: 'command', command: 'git-status' }, { preset: 'strict', rules: [{ command: ['git-status'], verdict: 'allow' }] }), { verdict: 'allow', rule: 'approvals.rules[0]' });
  assert.equal(verdict({ op: 'command', command: 'other' }, { preset: 'strict', rules: [{ command: ['git-status'], verdict: 'allow' }] }).verdict, 'require');
  // A deny in the default denies what nothing else decides.
  assert.deepEqual(verdict({ op: 'net', url: 'https://x.test/' }, { default: 'deny' }), { verdict: 'deny', rule: 'default' });
});

test('every condition of a rule: tool, extension, path, host, command, size', () => {
  const is = (rule, req) => verdict(req, { rules: [{ ...rule, verdict: 'deny' }] }).verdict === 'deny';
  assert.ok(is({ tool: ['notes.*'] }, { op: 'command', command: 'x' }));
  assert.ok(!is({ tool: ['other.*'] }, { op: 'command', command: 'x' }));
  assert.ok(is({ extension: [`sha256:${EXT.sha256}`] }, { op: 'command', command: 'x' }));
  assert.ok(is({ extension: ['/srv/ext/notes.ts'] }, { op: 'command', command: 'x' }));
  assert.ok(!is({ extension: ['/srv/ext/other.ts'] }, { op: 'command', command: 'x' }));
  assert.ok(is({ command: ['x', 'y'] }, { op: 'command', command: 'y' }));
  assert.ok(!is({ command: ['x'] }, { op: 'net', url: 'https://x/' }), 'a command condition does not apply to a request');
  assert.ok(!is({ path: ['src/'] }, { op: 'command', command: 'x' }), 'a path condition does not apply to a command');
  assert.ok(is({ host: ['*.example.com'] }, { op: 'net', url: 'https://api.example.com/v1?q=1' }));
  assert.ok(is({ host: ['*.example.com'] }, { op: 'browser.navigate', url: 'http://example.com/' }));
  assert.ok(!is({ host: ['*.example.com'] }, { op: 'net', url: 'https://example.org/' }));
  assert.ok(is({ host: ['127.0.0.1:8080'] }, { op: 'net', url: 'http://2130706433:8080/' }), 'hosts are normalised as allow.net does');
  assert.ok(!is({ host: ['127.0.0.1:8080'] }, { op: 'net', url: 'http://127.0.0.1:8081/' }));
  assert.ok(!is({ host: ['x.test'] }, { op: 'fs.read', path: 'x.test' }));
  assert.ok(is({ minSize: 10, maxSize: 20 }, { op: 'fs.write', path: 'a', size: 10 }));
  assert.ok(is({ minSize: 10, maxSize: 20 }, { op: 'fs.write', path: 'a', size: 20 }));
  assert.ok(!is({ minSize: 10, maxSize: 20 }, { op: 'fs.write', path: 'a', size: 21 }));
  assert.ok(!is({ minSize: 0 }, { op: 'fs.delete', path: 'a' }), 'no size: a size condition does not match');
  assert.ok(is({ op: ['fs.rename'], path: ['secrets/'] }, { op: 'fs.rename', path: 'notes.txt', to: 'secrets/notes.txt' }));

  // Paths: the grammar of `exclude`, plus "a directory covers what is below it".
  assert.ok(pathMatches('.env*', 'app/.env.production'));
  assert.ok(pathMatches('.github/', '.github/workflows/ci.yml'));
  assert.ok(pathMatches('./src', 'src/a/b.ts'));
  assert.ok(!pathMatches('src', 'lib/a.ts'));
  assert.ok(pathMatches('src', 'lib/src/a.ts'), 'a name without a slash matches at any depth');
  assert.ok(!pathMatches('src/', 'lib/src/a.ts'), 'with a slash: from the root');
  assert.ok(pathMatches('out/**/*.js', 'out/a/b/c.js'));
  assert.ok(!pathMatches('src/*.ts', 'src/a/b.ts'));
  assert.ok(!pathMatches('srcx', 'src/a'));
});

test('what logs and errors show holds no argument values; the hint is a rule to paste', () => {
  assert.equal(safeTarget({ op: 'command', command: 'touch', argv: ['touch', 'ARGV-MARK'] }), 'touch');
  assert.equal(safeTarget({ op: 'net', url: 'https://x.test/a/b?token=QUERY-MARK#frag', method: 'post' }), 'POST https://x.test/a/b');
  assert.equal(safeTarget({ op: 'fs.write', path: './out//a.txt', size: 12 }), 'out/a.txt (12 bytes)');
  assert.equal(safeTarget({ op: 'fs.rename', path: 'a', to: 'b' }), 'a -> b');
  // The human, who is the client's own user, sees the whole target and the size.
  assert.deepEqual(question('t', { op: 'fs.write', path: 'out/a.txt', size: 12 }), { text: 'Tool "t" wants to write the file "out/a.txt" (12 bytes)' });
  assert.deepEqual(question('t', { op: 'command', command: 'c', argv: ['git', 'log', 'a b'] }), { text: 'Tool "t" wants to run command "c": git log "a b"' });
  assert.deepEqual(question('t', { op: 'net', url: 'https://x.test/?q=1', method: 'put' }), { text: 'Tool "t" wants to send an HTTP request: PUT "https://x.test/?q=1"' });
  assert.deepEqual(question('t', { op: 'fs.write', path: 'current/a', realPath: 'config/a', size: 1 }), { text: 'Tool "t" wants to write the file "current/a" (really "config/a") (1 bytes)' });
  // Nothing is cut: a long target is shown whole, or, past QUESTION_MAX_CHARS, not asked about at all.
  const long = 'y'.repeat(QUESTION_MAX_CHARS - 100);
  assert.ok(question('t', { op: 'command', command: 'c', argv: [long, 'TAIL'] }).text.endsWith(`${long} TAIL`));
  const prefix = 'Tool "t" wants to run command "c": '.length;
  assert.deepEqual(question('t', { op: 'command', command: 'c', argv: [long, 'z'.repeat(200)] }), { tooLong: prefix + long.length + 201 });
  assert.ok('tooLong' in question('t', { op: 'net', url: `https://x.test/?q=${'a'.repeat(QUESTION_MAX_CHARS)}` }));
  const input = { tool: 'notes.edit', extension: EXT, op: 'command', command: 'touch', argv: ['touch', 'x'] };
  const s = settings({ preset: 'strict' });
  assert.equal(allowHint(input, s, decide(input, s)),
    'to allow it without asking, make { op = ["command"], tool = "notes.edit", command = "touch", verdict = "allow" } the first of the [approvals] rules in kiln.toml, or set [approvals] preset = "balanced"');
  const fsInput = { tool: 't', extension: EXT, op: 'fs.write', path: '.env', size: 3 };
  const b = settings({ preset: 'balanced' });
  assert.match(allowHint(fsInput, b, decide(fsInput, b)), /path = \["\.env"\].*or set \[approvals\] preset = "permissive"$/);
  const d = settings({ default: 'require' });
  assert.match(allowHint(input, d, decide(input, d)), /or set \[approvals\] default = "allow"$/);
});

test('[approvals] in kiln.toml is checked key by key', () => {
  const parse = (v) => parseApprovals(v, (k) => `key:${k}`, (p) => `/abs/${p}`);
  assert.equal(parse(undefined), DEFAULT_APPROVALS);
  const s = parse({ preset: 'balanced', default: 'require', store: 'kiln-approvals.json', timeoutMs: 1000, rules: [{ id: 'x', op: 'command', extension: 'a.ts', verdict: 'deny' }] });
  assert.equal(s.store, '/abs/kiln-approvals.json');
  assert.deepEqual(s.rules, [{ id: 'x', op: ['command'], extension: ['key:a.ts'], verdict: 'deny' }]);
  for (const [v, msg] of [
    [{ preset: 'lax' }, /preset must be one of/],
    [{ mode: 'x' }, /unknown key "mode"/],
    [{ default: 'maybe' }, /default must be/],
    [{ rules: [{ op: ['exec'], verdict: 'allow' }] }, /rules\[0\]\.op: "exec" is not an operation/],
    [{ rules: [{ op: ['command'] }] }, /rules\[0\]\.verdict must be/],
    [{ rules: [{ host: ['a b'], verdict: 'allow' }] }, /rules\[0\]\.host/],
    [{ rules: [{ path: [], verdict: 'allow' }] }, /rules\[0\]\.path must be a string or a non-empty list/],
    [{ rules: [{ minSize: -1, verdict: 'allow' }] }, /minSize must be a non-negative integer/],
    [{ rules: [{ verdict: 'allow', glob: 'x' }] }, /unknown key "glob"/],
    [{ timeoutMs: 0 }, /timeoutMs must be a positive integer/],
  ]) assert.throws(() => parse(v), msg, JSON.stringify(v));
});

test('every guest value is shown quoted and escaped; the question stays one line', () => {
  assert.equal(shown('a"b\\c\nd\u001b[1m\u202e\u2028\u00a0e \u00e9\u{e0041}'), '"a\\"b\\\\c\\nd\\u001b[1m\\u202e\\u2028\\u00a0e \\u00e9\\u{e0041}"');
  // Everything outside printable ASCII: blank-looking letters and symbols, quote and colon look-alikes.
  assert.equal(escaped('\u3164\u115f\u1160\uffa0\u2800\u034f\u02ba\uff02\u201c\u201d\u02d0\u{1d159}'),
    '\\u3164\\u115f\\u1160\\uffa0\\u2800\\u034f\\u02ba\\uff02\\u201c\\u201d\\u02d0\\u{1d159}');
  assert.equal(escaped(' ~az09!'), ' ~az09!');
  const q = question('t', { op: 'command', command: 'c\nExtension: x', argv: ['echo', 'a\u202eb'] });
  assert.deepEqual(q, { text: 'Tool "t" wants to run command "c\\nExtension: x": echo "a\\u202eb"' });
  assert.deepEqual(question('t', { op: 'fs.delete', path: 'd', inside: ['d/.env'] }), { text: 'Tool "t" wants to delete "d" and the 1 entry below it ("d/.env")' });
});

test('a path is judged as the file operation touches it; a rule on a name covers what a removal or move takes along', () => {
  const s = settings({ default: 'require', rules: [{ path: ['.env*'], verdict: 'deny' }, { path: ['out/'], verdict: 'allow' }] });
  const at = (r) => decide({ tool: 't', extension: EXT, ...r }, s).verdict;
  assert.equal(at({ op: 'fs.write', path: 'out/a' }), 'allow');
  assert.equal(at({ op: 'fs.write', path: 'out\\..\\run.sh' }), 'require', 'a backslash is part of a name at the root');
  assert.equal(at({ op: 'fs.delete', path: 'out/cfg', inside: ['out/cfg/.env'] }), 'deny');
  assert.equal(at({ op: 'fs.rename', path: 'out/cfg', to: 'out/x', inside: ['out/cfg/.env'] }), 'deny');
  assert.equal(at({ op: 'fs.rename', path: 'out/a', to: 'out/.env' }), 'deny');
  assert.equal(at({ op: 'fs.delete', path: 'out/cfg', inside: ['out/cfg/a'] }), 'allow');
  // Through a directory link: the real path matches too (and what lies below it, and a rename's real target).
  assert.equal(at({ op: 'fs.write', path: 'lnk/a', realPath: 'out/a' }), 'allow');
  const cfg = settings({ rules: [{ path: ['config/'], verdict: 'deny' }] });
  const atCfg = (r) => decide({ tool: 't', extension: EXT, ...r }, cfg).verdict;
  assert.equal(atCfg({ op: 'fs.write', path: 'current/app.toml', realPath: 'config/app.toml' }), 'deny');
  assert.equal(atCfg({ op: 'fs.rename', path: 'a', to: 'current/a', realTo: 'config/a' }), 'deny');
  assert.equal(atCfg({ op: 'fs.delete', path: 'current/d', realPath: 'config/d', inside: ['current/d/x'] }), 'deny');
  assert.equal(atCfg({ op: 'fs.write', path: 'current/app.toml' }), 'allow');
  const parse = (v) => parseApprovals(v, (k) => k, (p) => p);
  assert.deepEqual([parse({}).maxQuestionsPerCall, parse({}).maxOpenQuestionsPerSession], [16, 1]);
  assert.equal(parse({ maxQuestionsPerCall: 3, maxOpenQuestionsPerSession: 2 }).maxQuestionsPerCall, 3);
  assert.throws(() => parse({ maxQuestionsPerCall: 0 }), /\[approvals\] maxQuestionsPerCall must be an integer from 1 to 10000/);
});

// ---- through a real MCP client -------------------------------------------------------------------------------

let srv;
let extDir;
const closers = [];
before(async () => {
  srv = await startServer({ after: (fn) => closers.push(fn) });
  extDir = tempDir({ after: (fn) => closers.push(fn) });
  // One extension file for every server below (so it is built once). Its handlers catch what the host throws
  // and return "Name: message": the guest can catch a refusal.
  writeFileSync(join(extDir, 'ap.ts'), `
const caught = (e) => e.name + ': ' + e.message;
defineTool({ name: 'ap.touch', exposeAsTool: true,
  allow: { commands: { touch: { run: ['touch', '\${path}'] }, echo: { run: ['echo', '\${word}'] } } },
  handler: async ({ commands, args }) => {
    try { await commands.run(args.cmd ?? 'touch', args.cmd === 'echo' ? { word: args.word } : { path: args.path }); return 'ran'; } catch (e) { return caught(e); }
  } });
defineTool({ name: 'ap.short', exposeAsTool: true, timeoutMs: 4000, allow: { commands: { touch: { run: ['touch', '\${path}'] } } },
  handler: async ({ commands, args }) => { try { await commands.run('touch', { path: args.path }); return 'ran'; } catch (e) { return caught(e); } } });
defineTool({ name: 'ap.page', exposeAsTool: true, allow: { browser: ['127.0.0.1:${srv.port}'] },
  handler: async ({ page, args }) => { try { return String((await page.goto(args.url)).status); } catch (e) { return caught(e); } } });
defineTool({ name: 'ap.fetch', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}', 'localhost:${srv.port}'] },
  handler: async ({ args }) => { try { const r = await fetch(args.url); await r.text(); return String(r.status); } catch (e) { return caught(e); } } });
`);
});
after(() => { for (const c of closers.reverse()) c(); });

/** A kiln.toml in a fresh directory (audit and store beside it). */
function config(t, approvals, dir = tempDir(t)) {
  const file = join(dir, 'kiln.toml');
  writeFileSync(file, `extensions = [${JSON.stringify(join(extDir, 'ap.ts'))}]\n[audit]\npath = "audit.jsonl"\n${approvals}\n`);
  return { dir, file, audit: join(dir, 'audit.jsonl'), store: join(dir, 'approvals.json') };
}

/** `kiln mcp --config file` with a real SDK client; with `answer`, the client declares form elicitation and
 *  answers each question with `answer(params, ctx)`; every question is kept in `asked`. */
async function serve(t, file, answer) {
  const asked = [];
  const client = new Client({ name: 'approvals-test', version: '0' }, answer ? { capabilities: { elicitation: { form: {} } } } : undefined);
  if (answer) {
    client.setRequestHandler('elicitation/create', async (req, ctx) => {
      asked.push(req.params);
      return answer(req.params, ctx);
    });
  }
  const stderr = [];
  const transport = new StdioClientTransport({ command: process.execPath, args: [kilnBin, 'mcp', '--config', file], stderr: 'pipe' });
  transport.stderr?.on('data', (d) => stderr.push(String(d)));
  await client.connect(transport);
  t.after(() => client.close());
  return { client, asked, stderr: () => stderr.join('') };
}

/** Answers taken in order from `queue` (each an ElicitResult, or a function of the question). */
const answers = (queue) => async (params, ctx) => {
  const next = queue.shift();
  assert.ok(next, `an unexpected question: ${params.message}`);
  return typeof next === 'function' ? next(params, ctx) : next;
};
const accept = (allow) => ({ action: 'accept', content: { allow } });
const auditLines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);
const approvalLines = (file) => auditLines(file).filter((r) => r.type === 'approval').map((r) => [r.event, r.verdict ?? r.answer ?? r.rule ?? null]);

test('strict: a command is asked for; once, session, always (kept across a restart), decline', { timeout: 120_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"\nstore = "approvals.json"');
  const marker = (n) => join(c.dir, `ARGV-MARK-${n}`);
  const queue = [];
  const { client, asked } = await serve(t, c.file, answers(queue));

  // Once: it runs; the same call is asked again.
  queue.push(accept('once'));
  assert.equal((await call(client, 'ap.touch', { path: marker(1) })).text, 'ran');
  assert.ok(existsSync(marker(1)));
  assert.equal(asked.length, 1);
  const q = asked[0];
  assert.match(q.message, /^Tool "ap\.touch" wants to run command "touch": touch \S*ARGV-MARK-1\n/, 'tool, operation and target');
  assert.match(q.message, /preset strict: commands/);
  assert.deepEqual(q.requestedSchema.properties.allow.oneOf.map((o) => o.const), ['once', 'session', 'always']);

  // Decline: the guest catches a PermissionError naming the op and target; nothing ran.
  queue.push({ action: 'decline' });
  assert.equal((await call(client, 'ap.touch', { path: marker(2) })).text, 'PermissionError: tool "ap.touch" may not run command "touch": the human declined');
  assert.equal(existsSync(marker(2)), false, 'a declined command never ran');
  // Dismissed (cancel): the same.
  queue.push({ action: 'cancel' });
  assert.match((await call(client, 'ap.touch', { path: marker(2) })).text, /^PermissionError: .*the human dismissed the question$/);
  assert.equal(existsSync(marker(2)), false);
  assert.equal(asked.length, 3);

  // For this session: the same command line runs again without a question; another one is asked.
  queue.push(accept('session'));
  assert.equal((await call(client, 'ap.touch', { path: marker(3) })).text, 'ran');
  assert.equal((await call(client, 'ap.touch', { path: marker(3) })).text, 'ran');
  assert.equal(asked.length, 4, 'no second question in the session');
  queue.push({ action: 'decline' });
  assert.match((await call(client, 'ap.touch', { path: marker(4) })).text, /declined/);
  assert.equal(asked.length, 5, 'other arguments: another question');
  // Another session (named in _meta) does not share the answer.
  queue.push({ action: 'decline' });
  assert.match((await call(client, 'ap.touch', { path: marker(3) }, { session: 'other' })).text, /declined/);
  assert.equal(asked.length, 6);

  // Always: kept in the operator's store (a hash of the target, not the arguments) ...
  queue.push(accept('always'));
  assert.equal((await call(client, 'ap.touch', { path: marker(5) })).text, 'ran');
  const store = JSON.parse(readFileSync(c.store, 'utf8'));
  assert.equal(store.approvals.length, 1);
  assert.deepEqual([store.approvals[0].tool, store.approvals[0].op, store.approvals[0].target], ['ap.touch', 'command', 'touch']);
  assert.match(store.approvals[0].sha256, /^[0-9a-f]{64}$/);
  assert.equal(readFileSync(c.store, 'utf8').includes('ARGV-MARK'), false, 'the store holds no argument value');
  await client.close();

  // ... and it survives a restart: a new server asks nothing for it, and still asks for anything else.
  const again = await serve(t, c.file, answers([{ action: 'decline' }]));
  assert.equal((await call(again.client, 'ap.touch', { path: marker(5) }, { session: 'fresh' })).text, 'ran');
  assert.equal(again.asked.length, 0);
  assert.match((await call(again.client, 'ap.touch', { path: marker(6) })).text, /declined/);
  assert.equal(again.asked.length, 1);
  assert.equal(existsSync(marker(6)), false);

  // The audit file: each decision with its rule, each question and answer; no argument value anywhere.
  assert.deepEqual(approvalLines(c.audit), [
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'once'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'decline'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'cancel'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'session'],
    ['decision', 'require'], ['remembered', 'session'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'decline'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'decline'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'always'],
    ['decision', 'require'], ['remembered', 'always'],
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'decline'],
  ]);
  const lines = auditLines(c.audit);
  for (const r of lines.filter((x) => x.type === 'approval')) {
    assert.equal(r.op, 'command');
    assert.equal(r.target, 'touch');
    assert.equal(r.tool, 'ap.touch');
    if (r.event === 'decision') assert.equal(r.rule, 'preset strict: commands');
  }
  assert.deepEqual(lines.filter((x) => x.type === 'decision' && x.verdict === 'deny').map((x) => x.reason)[0], 'tool "ap.touch" may not run command "touch": the human declined');
  assert.equal(readFileSync(c.audit, 'utf8').includes('ARGV-MARK'), false, 'no argument value reached the audit log');
});

test('a client that cannot elicit gets the refusal with the line that would allow it; nothing ran', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"');
  const { client } = await serve(t, c.file);
  const r = await call(client, 'ap.touch', { path: join(c.dir, 'marker') });
  assert.equal(r.text, 'PermissionError: tool "ap.touch" may not run command "touch" without a human\'s approval (preset strict: commands requires it), '
    + 'and this MCP client cannot be asked (it does not declare the elicitation capability); to allow it without asking, make '
    + '{ op = ["command"], tool = "ap.touch", command = "touch", verdict = "allow" } the first of the [approvals] rules in kiln.toml, or set [approvals] preset = "balanced"');
  assert.equal(existsSync(join(c.dir, 'marker')), false);
  assert.deepEqual(approvalLines(c.audit), [['decision', 'require'], ['unasked', 'preset strict: commands']]);

  // The hint is exact: with that rule first, the same call runs without asking.
  const fixed = config(t, '[approvals]\npreset = "strict"\nrules = [{ op = ["command"], tool = "ap.touch", command = "touch", verdict = "allow" }]');
  const ok = await serve(t, fixed.file);
  assert.equal((await call(ok.client, 'ap.touch', { path: join(fixed.dir, 'marker') })).text, 'ran');
  assert.ok(existsSync(join(fixed.dir, 'marker')));
});

test('kiln run has nobody to ask: a required approval is refused, and nothing ran', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"');
  const script = join(c.dir, 'go.js');
  writeFileSync(script, `await plugins['ap.touch']({ path: ${JSON.stringify(join(c.dir, 'marker'))} })`);
  const r = await kiln(['run', script, '--config', c.file]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /PermissionError: tool \\"ap\.touch\\" may not run command \\"touch\\" without a human's approval \(preset strict: commands requires it\), and nobody can be asked here \(no MCP client: kiln run\); to allow it without asking/);
  assert.equal(existsSync(join(c.dir, 'marker')), false);
});

test('permissive and balanced run a command without asking; no [approvals] writes no approval lines', { timeout: 60_000 }, async (t) => {
  for (const preset of ['permissive', 'balanced']) {
    const c = config(t, `[approvals]\npreset = "${preset}"`);
    const { client, asked } = await serve(t, c.file, answers([]));
    assert.equal((await call(client, 'ap.touch', { path: join(c.dir, 'marker') })).text, 'ran', preset);
    assert.ok(existsSync(join(c.dir, 'marker')));
    assert.equal(asked.length, 0, preset);
    if (preset === 'balanced') assert.deepEqual(approvalLines(c.audit), [['decision', 'allow']]);
    else assert.deepEqual(approvalLines(c.audit), [], 'permissive without rules: approvals are off');
  }
});

test('custom rules in order: an allow before the preset, a deny that never asks', { timeout: 60_000 }, async (t) => {
  const c = config(t, `[approvals]
preset = "strict"
[[approvals.rules]]
id = "echo is harmless"
command = "echo"
verdict = "allow"
[[approvals.rules]]
op = ["command"]
tool = "ap.*"
verdict = "deny"
[[approvals.rules]]
op = ["command"]
verdict = "allow"
`);
  const { client, asked } = await serve(t, c.file, answers([]));
  assert.equal((await call(client, 'ap.touch', { cmd: 'echo', word: 'hi' })).text, 'ran');
  assert.equal((await call(client, 'ap.touch', { path: join(c.dir, 'marker') })).text,
    'PermissionError: tool "ap.touch" may not run command "touch": the operator\'s approvals.rules[1] denies it (kiln.toml [approvals])');
  assert.equal(existsSync(join(c.dir, 'marker')), false);
  assert.equal(asked.length, 0, 'deny never asks');
  assert.deepEqual(auditLines(c.audit).filter((r) => r.type === 'approval').map((r) => [r.event, r.verdict, r.rule]), [
    ['decision', 'allow', 'approvals.rules[0] "echo is harmless"'], ['decision', 'deny', 'approvals.rules[1]'],
  ]);
  // kiln_extensions shows the operator's approvals; no MCP tool approves or grants anything.
  const report = (await call(client, 'kiln_extensions')).json;
  assert.equal(report.operator.approvals.preset, 'strict');
  assert.deepEqual(report.operator.approvals.rules.map((r) => r.verdict), ['allow', 'deny', 'allow']);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).filter((n) => !n.startsWith('ap.')).sort(), ['kiln_close_session', 'kiln_extensions', 'run_script']);
});

test('net: the first hop and each redirect to a new origin are asked; a refused hop never reaches the server', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\nrules = [{ op = ["net"], verdict = "require" }]');
  const queue = [];
  const { client, asked } = await serve(t, c.file, answers(queue));
  const before = srv.hits.length;
  queue.push({ action: 'decline' });
  assert.equal((await call(client, 'ap.fetch', { url: `${srv.base}/hello?q=QUERY-MARK` })).text,
    `PermissionError: tool "ap.fetch" may not send GET "${srv.base}/hello": the human declined`);
  assert.equal(srv.hits.length, before, 'the declined request never reached the server');

  queue.push(accept('once'));
  assert.equal((await call(client, 'ap.fetch', { url: `${srv.base}/hello` })).text, '200');
  assert.equal(srv.count('/hello'), 1);
  assert.match(asked[1].message, new RegExp(`wants to send an HTTP request: GET "${srv.base}/hello"\n`));

  // A redirect to another origin is asked again; declined, the second hop is never made.
  const to = `http://localhost:${srv.port}/hello`;
  queue.push(accept('once'), { action: 'decline' });
  const r = await call(client, 'ap.fetch', { url: `${srv.base}/redirect?to=${encodeURIComponent(to)}` });
  assert.equal(r.text, `PermissionError: tool "ap.fetch" may not send GET "http://localhost:${srv.port}/hello": the human declined`);
  assert.equal(srv.count('/redirect'), 1, 'the approved first hop was made');
  assert.equal(srv.count('/hello'), 1, 'the declined hop was not');
  // A redirect within the approved origin is not asked again.
  queue.push(accept('once'));
  assert.equal((await call(client, 'ap.fetch', { url: `${srv.base}/redirect?to=/hello` })).text, '200');
  assert.equal(asked.length, 5);
  assert.equal(readFileSync(c.audit, 'utf8').includes('QUERY-MARK'), false);
});

test('browser: page.goto is asked for; a declined page is never loaded', { timeout: 90_000 }, async (t) => {
  const c = config(t, '[approvals]\nrules = [{ op = ["browser.navigate"], host = "127.0.0.1", verdict = "require" }]');
  const queue = [];
  const { client, asked } = await serve(t, c.file, answers(queue));
  queue.push({ action: 'decline' });
  assert.equal((await call(client, 'ap.page', { url: `${srv.base}/echo?page=1` })).text,
    `PermissionError: tool "ap.page" may not load "${srv.base}/echo" in its browser: the human declined`);
  assert.equal(srv.count('/echo'), 0, 'the declined page was never requested');
  queue.push(accept('session'));
  assert.equal((await call(client, 'ap.page', { url: `${srv.base}/echo?page=2` })).text, '200');
  assert.equal((await call(client, 'ap.page', { url: `${srv.base}/echo?page=3` })).text, '200');
  assert.equal(srv.count('/echo'), 2);
  assert.equal(asked.length, 2, 'the session answer covers the origin');
  assert.match(asked[1].message, new RegExp(`wants to load a page in its browser: "${srv.base}/echo\\?page=2"\n`));
});

test('waiting for a human does not count against the call\'s timeoutMs (nor its callers\')', { timeout: 90_000 }, async (t) => {
  // The human answers only after the call's whole time limit (4000 ms) has passed since it asked: a call whose
  // clock ran on would be over by then, however fast or slow this machine runs the rest of it.
  const slowly = () => new Promise((r) => setTimeout(() => r(accept('once')), 4500));
  for (const isolation of ['worker', 'inline']) {
    const c = config(t, `[sessions]\nisolation = "${isolation}"\n[approvals]\npreset = "strict"`);
    // ap.short has timeoutMs 4000; the human takes 4500 ms. Without the pause, the call would time out.
    const { client } = await serve(t, c.file, answers([slowly, slowly]));
    assert.equal((await call(client, 'ap.short', { path: join(c.dir, 'marker') })).text, 'ran', isolation);
    assert.ok(existsSync(join(c.dir, 'marker')));
    // A script (timeout 4000 ms) waits on a tool that waits for the human: the script's clock stops too.
    const code = `await plugins['ap.touch']({ path: ${JSON.stringify(join(c.dir, 'marker2'))} })`;
    const r = await call(client, 'run_script', { code, timeoutMs: 4000 });
    assert.deepEqual([r.json.status, r.json.result], ['ok', 'ran'], JSON.stringify(r.json));
    assert.ok(existsSync(join(c.dir, 'marker2')));
  }
});

test('no answer within [approvals] timeoutMs is a refusal the guest can catch', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"\ntimeoutMs = 300');
  // The answer would be "accept", but only long after kiln stopped waiting.
  const { client } = await serve(t, c.file, answers([() => new Promise((r) => setTimeout(() => r(accept('once')), 4000))]));
  assert.equal((await call(client, 'ap.touch', { path: join(c.dir, 'marker') })).text,
    'PermissionError: tool "ap.touch" may not run command "touch": no answer came within 300 ms ([approvals] timeoutMs)');
  assert.equal(existsSync(join(c.dir, 'marker')), false);
  assert.deepEqual(approvalLines(c.audit).at(-1), ['answered', 'timeout']);
});

test('a call cancelled by its client while a human is asked ends the wait; nothing ran', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"');
  const abort = new AbortController();
  let questionGone;
  const gone = new Promise((r) => (questionGone = r));
  const { client } = await serve(t, c.file, answers([(_params, ctx) => {
    ctx.mcpReq.signal.addEventListener('abort', () => questionGone('cancelled'));
    abort.abort(); // the client gives up on the call while the question is open
    return new Promise(() => {});
  }]));
  await assert.rejects(client.callTool({ name: 'ap.touch', arguments: { path: join(c.dir, 'marker') } }, { signal: abort.signal }));
  assert.equal(await gone, 'cancelled', 'kiln withdrew its question');
  assert.ok(await waitUntil(() => approvalLines(c.audit).some(([e, a]) => e === 'answered' && a === 'cancelled'), 10_000), JSON.stringify(approvalLines(c.audit)));
  assert.equal(existsSync(join(c.dir, 'marker')), false);
});

test('over Streamable HTTP the question goes to the MCP session that made the call', { timeout: 60_000 }, async (t) => {
  const c = config(t, '[approvals]\npreset = "strict"');
  const token = 'test-token-0123456789abcdef';
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', '--config', c.file], {
    env: { ...process.env, KILN_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  assert.ok(await waitUntil(() => /at (http:\/\/\S+\/mcp)/.test(stderr), 30_000), stderr);
  const url = new URL(/at (http:\/\/\S+\/mcp)/.exec(stderr)[1]);
  const connect = async (queue, asked) => {
    const client = new Client({ name: 'approvals-http', version: '0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params);
      return queue.shift() ?? { action: 'decline' };
    });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    t.after(() => client.close());
    return client;
  };
  const askedA = [], askedB = [];
  const a = await connect([accept('once')], askedA);
  await connect([accept('once')], askedB);
  assert.equal((await call(a, 'ap.touch', { path: join(c.dir, 'marker') })).text, 'ran');
  assert.ok(existsSync(join(c.dir, 'marker')));
  assert.equal(askedA.length, 1, 'the calling session was asked');
  assert.equal(askedB.length, 0, 'the other session was not');
});
