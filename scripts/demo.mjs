#!/usr/bin/env node
// `npm run demo`: build the example extensions into sealed artifacts, inspect one, then serve them with
// `kiln mcp` and drive a short MCP session over stdio, printing every call.
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const kiln = join(root, 'bin/kiln.js');
const out = join(root, 'build/demo');
const say = (s = '') => process.stdout.write(s + '\n');
const sh = (args) => execFileSync(process.execPath, [kiln, ...args], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

mkdirSync(out, { recursive: true });
const sources = readdirSync(join(root, 'extensions')).filter((f) => /\.(ts|js|mjs)$/.test(f)).map((f) => `extensions/${f}`);
say(`$ kiln build ${sources.join(' ')} --out-dir build/demo`);
say(sh(['build', ...sources, '--out-dir', out]).replaceAll(root + '/', ''));
say('$ kiln inspect build/demo/hello.wasm');
say(sh(['inspect', join(out, 'hello.wasm')]).replaceAll(root + '/', ''));

say('$ kiln mcp build/demo/   (driven by an MCP client over stdio)');
const client = new Client({ name: 'kiln-demo', version: '0.1.0' });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [kiln, 'mcp', out], cwd: root, stderr: 'ignore' }));
const { tools } = await client.listTools();
say(`→ tools/list\n← ${tools.map((t) => t.name).join(', ')}`);

async function show(name, args, meta) {
  const t0 = performance.now();
  const res = await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
  const ms = (performance.now() - t0).toFixed(1);
  let text = res.content.map((c) => (c.type === 'image' ? `[${c.mimeType} image, ${Buffer.from(c.data, 'base64').length} bytes]` : c.text)).join('\n');
  if (text.length > 400) text = text.slice(0, 400) + ' …';
  say(`→ tools/call ${name} ${JSON.stringify(args)}${meta ? ` _meta=${JSON.stringify(meta)}` : ''}`);
  say(`← ${res.isError ? 'isError ' : ''}${text}   (${ms} ms)`);
}

await show('hello.greet', { name: 'kiln' });
await show('hello.greet', { name: 42 });
await show('notes.add', { text: 'Fire the clay at 1200 °C' });
await show('notes.add', { text: 'Glaze after bisque' });
await show('notes.list', {});
await show('notes.list', {}, { session: 'someone-else' });
// a small JSON API on 127.0.0.1 for the local-api example
const api = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify([{ name: 'wedge the clay', done: true }, { name: 'throw', done: false }, { name: 'trim', done: false }]));
});
await new Promise((r) => api.listen(0, '127.0.0.1', r));
await show('api.summary', { url: `http://127.0.0.1:${api.address().port}/items` });
await show('api.summary', { url: 'http://169.254.169.254/latest/meta-data/' });
api.close();
// a login page on 127.0.0.1 for the login-shot example (the browser is Debian's chromium)
const site = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!doctype html><title>Kiln shop</title><form onsubmit="event.preventDefault();
    document.querySelector('#greeting').textContent = 'Welcome back, ' + document.querySelector('#user').value">
    <label>User <input id="user"></label> <label>Password <input id="pass" type="password"></label>
    <button>Sign in</button></form><h1 id="greeting"></h1>`);
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
await show('site.login', { url: `http://127.0.0.1:${site.address().port}/login`, user: 'ada' });
await show('site.login', { url: `http://localhost:${site.address().port}/login`, user: 'ada' });
site.close();
await show('greeter.greet', { name: 'Ada', lang: 'fr' });
await show('git.sha', { repo: '.' });
await show('git.sha', { repo: '--upload-pack=touch /tmp/kiln-demo-pwned' });
await show('kiln_extensions', {});
await client.close();

// The same greeter.ts that served greeter.greet above also holds its BDD steps (kiln.host === 'bdd').
say('\n$ kiln bdd extensions/features --config extensions/bdd.toml');
try {
  say(execFileSync(process.execPath, [kiln, 'bdd', 'extensions/features', '--config', 'extensions/bdd.toml'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
} catch (e) {
  say(e.stdout ?? '');
  throw new Error(`kiln bdd failed (exit ${e.status})`);
}
say('\ndone: the same artifacts, their hashes and capabilities are what `kiln_extensions` reports.');
