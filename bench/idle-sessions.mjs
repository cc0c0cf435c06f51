#!/usr/bin/env node
// 10,000 idle sessions in one `kiln mcp` server, on each backend: every session makes one no-op call (so it
// holds a live guest), then the server's RSS is read. The settings let every guest stay alive (a 4 MiB heap
// limit, room in [limits] totalMemoryBytes and [sessions] maxInstances); the run stops early past 6 GB of
// Pss. Prints one JSON line per backend: {backend, sessions, rssBytes, perSessionBytes, pssBytes,
// pssPerSessionBytes, newSessionUs}. RSS counts a copy-on-write page once per mapping; Pss once.
//
//   node bench/idle-sessions.mjs [--sessions N] [--backends wasmtime,v8]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const N = Number(opt('--sessions', 10_000));
const backends = opt('--backends', 'wasmtime,v8').split(',');
const RSS_CEILING = 6e9;

const dir = mkdtempSync(join(tmpdir(), 'kiln-idle-'));
const config = join(dir, 'kiln.toml');
writeFileSync(config, [
  `extensions = [${JSON.stringify(join(here, 'sessions.ts'))}]`,
  '[limits]', 'memoryLimitBytes = 4194304', 'totalMemoryBytes = 1000000000000',
  '[sessions]', `maxInstances = ${N + 10}`, `maxSessions = ${N + 10}`, 'idleTtlMs = 86400000', '',
].join('\n'));

async function measure(backend) {
  const child = spawn(process.execPath, [join(root, 'bin/kiln.js'), 'mcp', '--config', config], {
    cwd: root, stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, KILN_ENGINE: backend },
  });
  try {
    let buf = '';
    const waiting = new Map();
    child.stdout.on('data', (d) => {
      buf += d;
      for (let nl; (nl = buf.indexOf('\n')) >= 0; buf = buf.slice(nl + 1)) {
        const msg = JSON.parse(buf.slice(0, nl));
        waiting.get(msg.id)?.(msg);
      }
    });
    let id = 0;
    const request = (method, params) => new Promise((res) => {
      waiting.set(++id, res);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
    await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024;
    // RSS counts a copy-on-write page once per instance mapping it; Pss counts what the process really holds.
    const pss = () => Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/smaps_rollup`, 'utf8'))[1]) * 1024;
    const call = async (session) => {
      const r = await request('tools/call', { name: 'bench.noop', arguments: {}, _meta: { session } });
      if (r.error || r.result?.isError) throw new Error(`session ${session}: ${JSON.stringify(r.error ?? r.result)}`);
    };
    await call('warm');
    const before = rss();
    const pssBefore = pss();
    const t0 = performance.now();
    let made = 0;
    for (; made < N; made++) {
      await call(`s${made}`);
      if ((made + 1) % 1000 === 0) {
        process.stderr.write(`[idle-sessions] ${backend}: ${made + 1} sessions, RSS ${(rss() / 1e9).toFixed(2)} GB, Pss ${(pss() / 1e9).toFixed(2)} GB\n`);
        if (pss() > RSS_CEILING) { made++; break; }
      }
    }
    const elapsed = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 1000));
    const after = rss();
    const pssAfter = pss();
    return {
      backend, sessions: made, rssBytes: after, perSessionBytes: Math.round((after - before) / made),
      pssBytes: pssAfter, pssPerSessionBytes: Math.round((pssAfter - pssBefore) / made), newSessionUs: Math.round((elapsed / made) * 1000),
    };
  } finally {
    child.kill('SIGKILL');
  }
}

try {
  for (const b of backends) process.stdout.write(`${JSON.stringify(await measure(b))}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
