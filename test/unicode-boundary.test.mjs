// Strings across the component boundary. A WIT string is Unicode scalar values, and a JavaScript string may
// hold lone surrogates: what the guest hands the host (errors, logs, requests) arrives well-formed, each lone
// surrogate one U+FFFD as String.prototype.toWellFormed() makes it (Node's own rule for TextEncoder); a result
// keeps them (JSON escapes them); and `vars`, a store, refuses them rather than keep something else.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseGuestJson } from '../dist/host/untrusted/guest-json.js';
import { LogLimiter } from '../dist/host/untrusted/log-limiter.js';
import { kiln, tempDir } from './helpers.mjs';

const LONE = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF', 'a\uD800', '\uDC00\uD800', '\uD83D\uD83D\uDE00', '\uD83D\uDE00\uDE00'];

const extension = `
const attempt = (f) => { try { return { value: f() }; } catch (e) { return { error: e.name + ': ' + e.message }; } };
defineTool({ name: 'vars', handler: ({ args }) => {
  const out = [];
  for (const s of args.strings) {
    out.push({
      setKey: attempt(() => vars.set(s, 'v')),
      setValue: attempt(() => vars.set('k', s)),
      get: attempt(() => vars.get(s)),
      has: attempt(() => vars.has(s)),
      delete: attempt(() => vars.delete(s)),
    });
  }
  // Well-formed text round-trips exactly, astral characters included.
  const good = ['\\uD83D\\uDE00', 'caf\\u00e9', '\\uFFFD', '\\uD7FF\\uE000'];
  for (const s of good) vars.set('good:' + s, s + '!');
  return { out, keys: vars.keys().sort(), good: good.map((s) => vars.get('good:' + s) === s + '!'), value: vars.get('k') ?? null };
} });
defineTool({ name: 'echo', handler: ({ args }) => ({ strings: args.strings }) });
defineTool({ name: 'fail', handler: ({ args }) => { throw new Error('bad[' + args.s + ']'); } });
defineTool({ name: 'log', handler: ({ args }) => { console.log('log[' + args.s + ']'); return 'logged'; } });
defineTool({ name: 'bom', handler: () => {
  vars.set('\uFEFFabc', 'bom'); vars.set('abc', 'plain'); vars.set('v', '\uFEFFhello');
  console.log('\uFEFFbom-log');
  return { keys: vars.keys().sort(), bom: vars.get('\uFEFFabc'), plain: vars.get('abc'), v: vars.get('v'),
    url: new URL('\uFEFF/p', 'http://h/').href, bare: attempt(() => new URL('\uFEFFhttp://h/').href) };
} });
defineTool({ name: 'raw', handler: () => ({ x: JSON.rawJSON('"a\uD800b"') }) });
defineTool({ name: 'nul', handler: ({ args }) => {
  if (args.reject) { Promise.reject(new Error('rej\0hidden\uD800')); return 'rejected'; }
  throw new Error('nul\0hidden\uD800');
} });
`;

function setup(t) {
  const dir = tempDir(t);
  const ext = join(dir, 'strings.js');
  writeFileSync(ext, extension);
  const run = async (body) => {
    const script = join(dir, `s${Math.random().toString(36).slice(2)}.js`);
    writeFileSync(script, body);
    return kiln(['run', script, ext]);
  };
  return run;
}

test('vars refuses a lone surrogate in a key or value, in every call, and stores nothing for it', async (t) => {
  const run = setup(t);
  const r = await run(`await plugins['vars']({ strings: ${JSON.stringify(LONE)} })`);
  assert.equal(r.code, 0, r.stderr);
  const { out, keys, good, value } = JSON.parse(r.stdout);
  assert.equal(out.length, LONE.length);
  out.forEach((o, i) => {
    for (const [call, what] of [['setKey', 'key'], ['setValue', 'value'], ['get', 'key'], ['has', 'key'], ['delete', 'key']]) {
      assert.match(o[call].error ?? '', new RegExp(`^TypeError: vars ${what} must be well-formed Unicode: it has a lone surrogate \\(${what}\\.toWellFormed\\(\\) replaces each with U\\+FFFD\\)$`),
        `${call} of ${JSON.stringify(LONE[i])}: ${JSON.stringify(o[call])}`);
    }
  });
  // Nothing was stored for the refused keys and values (a store that replaced them would make '\uD800' and
  // '\uDFFF' one key).
  assert.deepEqual(keys.filter((k) => !k.startsWith('good:')), []);
  assert.equal(value, null, 'no value for "k" was stored');
  assert.deepEqual(good, [true, true, true, true]);
});

test('a result keeps its lone surrogates; an error and a log line carry one U+FFFD for each, as Node\'s toWellFormed', async (t) => {
  const run = setup(t);
  const echoed = await run(`await plugins['echo']({ strings: ${JSON.stringify(LONE)} })`);
  assert.equal(echoed.code, 0, echoed.stderr);
  assert.deepEqual(JSON.parse(echoed.stdout).strings, LONE);
  for (const s of LONE) {
    const failed = await run(`await plugins['fail']({ s: ${JSON.stringify(s)} })`);
    assert.notEqual(failed.code, 0);
    assert.ok(failed.stderr.includes(`bad[${s.toWellFormed()}]`), `error text for ${JSON.stringify(s)}: ${JSON.stringify(failed.stderr)}`);
    assert.ok(!failed.stderr.includes('\uFFFD\uFFFD\uFFFD'), 'one replacement per lone surrogate, not one per byte');
  }
  const logged = await run(`await plugins['log']({ s: '\\uD800x\\uDFFF' })`);
  assert.equal(logged.code, 0, logged.stderr);
  assert.ok(logged.stderr.includes('log[\uFFFDx\uFFFD]'), JSON.stringify(logged.stderr));
});

test('a lone surrogate in a file path is judged as the name it would write: an operator\'s file stays out of reach', async (t) => {
  const dir = tempDir(t);
  // The extension's own file (an operator's file: no tool may touch it) is named with U+FFFD; the tool asks
  // for it spelled with a lone surrogate, which the file system would write as U+FFFD.
  const ext = join(dir, 'e\uFFFD.js');
  const source = `defineTool({ name: 'w', allow: { fs: { read: ['.'], write: ['.'] } }, handler: async ({ fs, args }) => {
  try { await fs.appendFile(args.path, '// appended\\n'); return 'written'; } catch (e) { return e.name + ': ' + e.message; }
} });
`;
  writeFileSync(ext, source);
  const script = join(dir, 's.js');
  const outcomes = [];
  for (const path of ['e\uFFFD.js', 'e\uD800.js', 'e\uDFFF.js', './e\uDBFF.js', 'kiln.toml', 'kiln.json']) {
    writeFileSync(script, `await plugins['w']({ path: ${JSON.stringify(path)} })`);
    const r = await kiln(['run', script, ext], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    outcomes.push([path, JSON.parse(r.stdout)]);
  }
  for (const [path, outcome] of outcomes) {
    assert.match(outcome, /^PermissionError: tool "w" may not write .*: it is, holds or lies in one of the operator's files/, `${JSON.stringify(path)}: ${outcome}`);
  }
  // Nothing was written: the extension is as it was, and no config appeared for the next server to read.
  assert.equal(readFileSync(ext, 'utf8'), source);
  assert.deepEqual(readdirSync(dir).sort(), ['e\uFFFD.js', 's.js'].sort());
});

test('parseGuestJson: every string and key well-formed, pairs and U+FFFD kept, no prototype written', () => {
  const text = JSON.stringify({ path: 'a\uD800b', list: ['\uDC00', '\uD83D\uDE00', '\uFFFD', 'plain'], ['k\uDFFF']: { deep: 'x\uDBFFy' }, n: 1, t: true, z: null });
  assert.deepEqual(parseGuestJson(text), { path: 'a\uFFFDb', list: ['\uFFFD', '\uD83D\uDE00', '\uFFFD', 'plain'], ['k\uFFFD']: { deep: 'x\uFFFDy' }, n: 1, t: true, z: null });
  for (const v of [JSON.parse(JSON.stringify(parseGuestJson(text))), parseGuestJson(text)]) {
    for (const s of JSON.stringify(v).match(/"(?:[^"\\]|\\.)*"/g)) assert.ok(JSON.parse(s).isWellFormed(), s);
  }
  // A key that needed fixing rebuilds its object: "__proto__" stays an own property there, never a prototype.
  const proto = parseGuestJson('{"__proto__": {"polluted": 1}, "\\ud800": 2}');
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.keys(proto), ['__proto__', '\uFFFD']);
  assert.equal({}.polluted, undefined);
  // No recursion: a request nested 100,000 deep is read (the capability then answers it), its string fixed.
  const deep = parseGuestJson(`${'['.repeat(100_000)}"\\ud800"${']'.repeat(100_000)}`);
  let inner = deep;
  while (Array.isArray(inner)) inner = inner[0];
  assert.equal(inner, '\uFFFD');
  assert.doesNotThrow(() => parseGuestJson(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`));
});

test('a guest log line cut at its length limit is never cut between the halves of a surrogate pair', () => {
  const out = [];
  const limiter = new LogLimiter({ windowMs: 1000, lines: 10, chars: 1 << 20, lineChars: 8 }, (_level, text) => out.push(text), 'warn', () => 0);
  limiter.write('info', 'xxxxxxx\uD83D\uDE00yy'); // the pair straddles the 8th character
  limiter.write('info', 'xxxxxx\uD83D\uDE00yy'); // the pair ends at the 8th
  assert.deepEqual(out, ['xxxxxxx… [4 more characters cut]', 'xxxxxx\uD83D\uDE00… [2 more characters cut]']);
  assert.ok(out.every((t) => t.isWellFormed()));
});

test('a leading U+FEFF survives the boundary; raw JSON and NUL characters are carried whole', async (t) => {
  const run = setup(t);
  const bom = await run(`await plugins['bom']({})`);
  assert.equal(bom.code, 0, bom.stderr);
  const { bare, ...rest } = JSON.parse(bom.stdout);
  assert.deepEqual(rest, {
    keys: ['abc', 'v', '\uFEFFabc'].sort(), bom: 'bom', plain: 'plain', v: '\uFEFFhello',
    url: new URL('\uFEFF/p', 'http://h/').href, // Node: http://h/%EF%BB%BF/p
  });
  assert.throws(() => new URL('\uFEFFhttp://h/'), /Invalid URL/); // in Node, and in the guest:
  assert.match(bare.error, /^TypeError: Invalid URL/);
  assert.ok(bom.stderr.includes('\\u{feff}bom-log'), JSON.stringify(bom.stderr)); // shown escaped: an invisible character
  // JSON.rawJSON (quickjs-ng has it) can put a lone surrogate in a result's text raw: one U+FFFD, no crash.
  const raw = await run(`await plugins['raw']({})`);
  assert.equal(raw.code, 0, raw.stderr);
  assert.deepEqual(JSON.parse(raw.stdout), { x: 'a\uFFFDb' });
  const thrown = await run(`await plugins['nul']({ reject: false })`);
  // (kiln's own output shows a NUL escaped, as it shows every control character)
  assert.ok(thrown.stderr.includes('nul\\u{0}hidden\uFFFD'), JSON.stringify(thrown.stderr));
  const rejected = await run(`await plugins['nul']({ reject: true })`);
  assert.ok(rejected.stderr.includes('Uncaught (in promise) Error: rej\\u{0}hidden\uFFFD'), JSON.stringify(rejected.stderr));
});
