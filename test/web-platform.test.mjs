// The guest's web platform against Node's: test/web-platform/checks.js runs unchanged in a kiln guest (a
// `kiln run` script) and in Node 20, and every check's result must be the same — except the differences
// listed below, each with its reason (docs/extensions.md lists them for authors). A check that starts to
// agree with Node must leave the list, and a new difference must be explained here: the list is exact.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { kiln, root, tempDir } from './helpers.mjs';
import { startEchoServer } from './web-platform/echo-server.mjs';

const KNOWN_DIFFERENCES = {
  'subtle hmac not extractable': 'Node names the DOMException "InvalidAccessException"; the Web Crypto standard, and kiln, "InvalidAccessError"',
  'fetch keeps no cookies': "kiln keeps a cookie jar per session and extension, shared by fetch and the Playwright-style `request` (a login's cookie reaches the next call, as in a browser); Node's fetch has none",
  'globalThis.self': "the guest's global is a worker's, whose `self` is globalThis (browser builds find crypto through it); Node 20 has no `self`",
};

const nodeResults = (env) => new Promise((resolve, reject) => {
  execFile(process.execPath, [join(root, 'test/web-platform/node-run.mjs')], { timeout: 60_000, maxBuffer: 1 << 24, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
    (err ? reject(new Error(`node-run failed: ${stderr}`)) : resolve(JSON.parse(stdout))));
});

test('at least 250 web-platform checks give the same result in a guest as in Node, apart from the listed differences', async (t) => {
  // The fetch checks' echo server, whose URL both sides read from the environment; the guest's script may
  // reach it as the operator allows (a script declares no allow.net: [net] emptyMeansUnrestricted).
  const echo = await startEchoServer();
  t.after(echo.close);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'kiln.toml'), '[net]\nemptyMeansUnrestricted = true\n[scripting]\nallowEnv = ["WEB_PLATFORM_ECHO"]\n');
  // The guest's local time zone is UTC: Node is put there too.
  const env = { WEB_PLATFORM_ECHO: echo.base, TZ: 'UTC' };
  const [node, guestRun] = await Promise.all([nodeResults(env), kiln(['run', join(root, 'test/web-platform/checks.js'), '--config', join(dir, 'kiln.toml')], { env })]);
  assert.equal(guestRun.code, 0, guestRun.stderr);
  const guest = JSON.parse(guestRun.stdout);
  assert.ok(node.length >= 250, `only ${node.length} checks`);
  assert.deepEqual(guest.map(([name]) => name), node.map(([name]) => name));
  const differing = {};
  for (let i = 0; i < node.length; i++) if (guest[i][1] !== node[i][1]) differing[node[i][0]] = { node: node[i][1], kiln: guest[i][1] };
  const same = node.length - Object.keys(differing).length;
  console.log(`# ${same} of ${node.length} web-platform checks identical to Node`);
  const unexplained = Object.fromEntries(Object.entries(differing).filter(([name]) => !(name in KNOWN_DIFFERENCES)));
  assert.deepEqual(unexplained, {}, 'checks that differ from Node without a listed reason');
  const nowSame = Object.keys(KNOWN_DIFFERENCES).filter((name) => !(name in differing));
  assert.deepEqual(nowSame, [], 'listed differences that now agree with Node: take them off the list');
  // An uncaught exception in a timer callback is logged with its stack, and the guest goes on.
  assert.match(guestRun.stderr, /Uncaught Error: in timer\n\[script error\]\s+at .*checks\.js:\d+:\d+/);
  // So is a rejection no handler took by the time the job queue ran dry.
  assert.match(guestRun.stderr, /Uncaught \(in promise\) Error: unhandled in check\n\[script error\]\s+at .*checks\.js:\d+:\d+/);
});

test('console.log prints values as Node does: util.format placeholders and util.inspect basics, line by line', async () => {
  const file = join(root, 'test/web-platform/console.js');
  const node = await new Promise((resolve, reject) => execFile(process.execPath, [file], (err, stdout) => (err ? reject(err) : resolve(stdout))));
  const guest = await kiln(['run', file]);
  assert.equal(guest.code, 0, guest.stderr);
  const printed = guest.stderr.replace(/^\[script (log|info)\] /gm, '');
  const nodeLines = node.split('\n'), guestLines = printed.split('\n');
  assert.ok(nodeLines.length > 90, `only ${nodeLines.length} lines`);
  for (let i = 0; i < nodeLines.length; i++) assert.equal(guestLines[i], nodeLines[i], `line ${i + 1}`);
});

test('uncaught errors of an extension are logged with stacks mapped to its own source, without kiln\'s frames', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'late.ts'), [
    '// line 1',
    'type X = { a: number };',
    "defineTool({ name: 'late.go', handler: async () => {",
    "  setTimeout(() => { const x: X = { a: 1 }; throw new Error('late ' + x.a); }, 0);",
    "  Promise.reject(new RangeError('nobody'));",
    '  await new Promise((r) => setTimeout(r, 20));',
    "  return 'ok';",
    '} });',
  ].join('\n'));
  writeFileSync(join(dir, 'go.js'), "await plugins['late.go']()");
  const r = await kiln(['run', join(dir, 'go.js'), join(dir, 'late.ts')]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Uncaught \(in promise\) RangeError: nobody\n\[late\.ts error\]\s+at handler \(late\.ts:5:\d+\)/);
  assert.match(r.stderr, /Uncaught Error: late 1\n\[late\.ts error\]\s+at .*\(late\.ts:4:\d+\)/);
  assert.doesNotMatch(r.stderr, /bundle:|<null>/);
});

test('timers the top level left pending neither run in a later call nor keep its timers from firing', async (t) => {
  // The top level's timers are dropped when it has run (docs/architecture.md); the host's wake-up for them
  // went with them, and a call's own timers must still ask for theirs (they hung until the deadline).
  const dir = tempDir(t);
  writeFileSync(join(dir, 'top.ts'), [
    "setTimeout(() => vars.set('top', 'timeout ran'), 5);",
    "setInterval(() => vars.set('top', 'interval ran'), 5);",
    "setImmediate(() => vars.set('top', 'immediate ran'));",
    "defineTool({ name: 'top.wait', handler: async () => {",
    '  await new Promise((r) => setTimeout(r, 40));',
    "  return vars.get('top') ?? 'none ran';",
    '} });',
  ].join('\n'));
  writeFileSync(join(dir, 'go.js'), "[await plugins['top.wait'](), await plugins['top.wait']()]");
  const r = await kiln(['run', join(dir, 'go.js'), join(dir, 'top.ts')]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['none ran', 'none ran']);
});
