// The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli, a devDependency) against `kiln mcp`: an
// independent client lists the tools and calls one, over stdio and over HTTP.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { kilnBin, root, waitUntil } from './helpers.mjs';

const inspector = join(root, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const run = (args) => new Promise((resolve) => execFile(process.execPath, [inspector, '--cli', ...args], { cwd: root, timeout: 60_000, maxBuffer: 1 << 24 },
  (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr })));
const hello = join(root, 'extensions/hello.ts');

test('the Inspector CLI lists and calls kiln tools over stdio', async () => {
  const list = await run([process.execPath, kilnBin, 'mcp', hello, '--method', 'tools/list']);
  assert.equal(list.code, 0, list.stderr);
  const names = JSON.parse(list.stdout).tools.map((x) => x.name);
  assert.ok(names.includes('hello.greet') && names.includes('kiln_extensions'), names.join(', '));
  const called = await run([process.execPath, kilnBin, 'mcp', hello, '--method', 'tools/call', '--tool-name', 'hello.greet', '--tool-arg', 'name=inspector']);
  assert.equal(called.code, 0, called.stderr);
  assert.deepEqual(JSON.parse(called.stdout).structuredContent, { message: 'Hello, inspector!', host: 'mcp' });
});

test('the Inspector CLI calls kiln over HTTP with the bearer token', async (t) => {
  const token = 'inspector-token-0123456789';
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', hello], { env: { ...process.env, KILN_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  assert.ok(await waitUntil(() => /at (http:\/\/\S+\/mcp)/.test(stderr), 20_000), stderr);
  const url = /at (http:\/\/\S+\/mcp)/.exec(stderr)[1];
  const called = await run([url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, '--method', 'tools/call', '--tool-name', 'hello.greet', '--tool-arg', 'name=http']);
  assert.equal(called.code, 0, called.stderr + called.stdout);
  assert.deepEqual(JSON.parse(called.stdout).structuredContent, { message: 'Hello, http!', host: 'mcp' });
  const refused = await run([url, '--transport', 'http', '--method', 'tools/list']);
  assert.notEqual(refused.code, 0, 'no token, no tools');
});
