// Shared test utilities: run the real CLI, connect a real MCP client over stdio.
// Every process started here is ended when its test ends, whatever the outcome (t.after, registered before
// anything that can fail). Waits are for events or conditions; their bounds only end a test that would
// otherwise hang (the runner's --test-timeout is the last bound), never decide one that passes when slow.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const kilnBin = join(root, 'bin/kiln.js');
export const fixtures = join(root, 'test/fixtures');

/** Run `kiln ...args`; resolves with { code, stdout, stderr } whatever the exit code (killed after
 *  `opts.timeout`, 10 minutes by default: a bound for a hang, not a budget for a slow machine). */
export function kiln(args, opts = {}) {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [kilnBin, ...args], { cwd: opts.cwd ?? root, env: { ...process.env, ...opts.env }, maxBuffer: 1 << 24, timeout: opts.timeout ?? 600_000 },
      (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }));
    child.stdin.end(opts.input ?? ''); // a closed stdin: `kiln mcp` exits when it sees it
  });
}

export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-test-'));
  // Best effort, and never a failure: a server the test started may still be writing into the directory
  // (an audit line) when this hook runs, and rmdir then fails with ENOTEMPTY. A throwing hook once kept the
  // test's other hooks from stopping that server, and the suite waited on it (approvals.test.mjs, under load).
  t?.after(() => {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch {
      // left in the system's temporary directory
    }
  });
  return dir;
}

/** The first request's options: a server answers it once its extensions are loaded, which on a loaded machine
 *  (large schemas compiled) takes longer than the client's default 60 s; a server that dies ends it at once. */
export const STARTING = { timeout: 10 * 60_000 };

/** A real MCP client connected to `kiln mcp ...args` over stdio. */
export async function mcp(t, args, opts = {}) {
  const stderr = [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [kilnBin, 'mcp', ...args],
    cwd: opts.cwd ?? root,
    env: { ...process.env, ...opts.env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => stderr.push(String(d)));
  const client = new Client({ name: 'kiln-test', version: '0.0.0' });
  // before connect: a server that fails to start or to answer is still ended (close: stdin, SIGTERM, SIGKILL)
  t?.after(async () => {
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
  });
  opts.beforeConnect?.(client); // e.g. notification handlers for what the server sends at once
  await client.connect(transport, STARTING);
  return { client, transport, stderr: () => stderr.join('') };
}

/** A real MCP client connected over Streamable HTTP to a `kiln mcp --http 127.0.0.1:0 ...args` process. */
export async function mcpHttp(t, args, opts = {}) {
  const token = 'test-token-0123456789abcdef';
  const child = spawn(process.execPath, [kilnBin, 'mcp', '--http', '127.0.0.1:0', ...args], {
    cwd: opts.cwd ?? root, env: { ...process.env, ...opts.env, KILN_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = (await stderrMatch(child, /at (http:\/\/\S+\/mcp)/))[1];
  const client = new Client({ name: 'kiln-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }), STARTING);
  t.after(() => client.close());
  return { client, child, stderr: () => stderr };
}

/** Call a tool and return { isError, text, json }. `options`: the client's request options (its `timeout`, 60 s
 *  by default, for a call whose work grows with the machine's load). */
export async function call(client, name, args = {}, meta, options) {
  const res = await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, options);
  const text = res.content.map((c) => c.text).join('\n');
  // A string result arrives as its text, an object as structuredContent (and JSON text), anything else as JSON
  // text. `json` is the value: the structured content, else the JSON an array, number, boolean or null was
  // sent as, else the text itself (a text that happens to be JSON, such as "42", stays a string only when it
  // is not a number, boolean or null: tests that care compare `text`).
  let json = res.structuredContent;
  if (json === undefined && !res.isError) {
    try { json = JSON.parse(text); } catch { json = text; }
    if (typeof json === 'string' || (typeof json === 'object' && json !== null && !Array.isArray(json))) json = text;
  }
  return { isError: res.isError === true, text, json };
}

/** Build a fixture extension (path under test/fixtures) into a fresh .wasm artifact; returns its path. */
export async function buildFixture(rel) {
  const out = join(mkdtempSync(join(tmpdir(), 'kiln-fixture-')), rel.replace(/[\/]/g, '_').replace(/\.\w+$/, '.wasm'));
  const r = await kiln(['build', join(fixtures, rel), '-o', out]);
  if (r.code !== 0) throw new Error(`building ${rel} failed: ${r.stderr}`);
  return out;
}

/** A real MCP client on `kiln mcp <artifact>`, with `toml` as its kiln.toml when given. */
export async function serveArtifact(t, artifact, toml, opts = {}) {
  const args = [artifact];
  if (toml) {
    const cfg = join(tempDir(t), 'kiln.toml');
    writeFileSync(cfg, toml);
    args.push('--config', cfg);
  }
  return (await mcp(t, args, opts)).client;
}

/** The first match of `re` in `child`'s stderr, as soon as it is written; rejects if the child exits first. */
export function stderrMatch(child, re) {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stderr.on('data', (d) => {
      text += d;
      const m = re.exec(text);
      if (m) resolve(m);
    });
    child.on('exit', (code, signal) => reject(new Error(`exited (${code ?? signal}) before writing ${re}: ${text}`)));
  });
}

/** Poll `fn` until it is truthy or `ms` pass; returns whether it became truthy. The bound is for a condition
 *  that never comes (the test then fails instead of hanging): generous, so a loaded machine never hits it. */
export async function waitUntil(fn, ms = 60_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

/** The pids of `root`'s descendants, read from /proc. */
export function descendants(root) {
  const children = new Map();
  for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch { /* gone */ }
  }
  const out = [];
  for (let todo = [root]; todo.length;) for (const c of children.get(todo.pop()) ?? []) { out.push(c); todo.push(c); }
  return out;
}
