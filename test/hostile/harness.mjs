// The hostile suite's harness. Every attack is a real extension (or a crafted artifact) run through the real
// CLI or a real `kiln mcp` with a real MCP client, and asserts two things: the attack failed, and its side
// effect (a marker file, a request in a local server's log, a process, memory) did not happen.
//
// Attack modules live beside this file (test/hostile/*.mjs) and register with `attack(...)` when imported;
// test/hostile.test.mjs imports them all, runs every attack, and prints `N attacks, N contained`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mcp, tempDir } from '../helpers.mjs';

export const attacks = [];

/**
 * Register an attack. `id` is short and unique (e.g. "cmd-adjacent-argv"); `title` says what the attacker
 * tries; `fn(t)` performs it and asserts it was contained (throws otherwise).
 */
export function attack(id, title, fn, opts = {}) {
  if (attacks.some((a) => a.id === id)) throw new Error(`duplicate attack id ${id}`);
  attacks.push({ id, title, fn, timeout: opts.timeout ?? 120_000 });
}

/** Write `files` ({relative path: text}) under a fresh temporary directory; returns the directory. */
export function sources(t, files) {
  const dir = tempDir(t);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

/** `kiln mcp` on `paths` with a real MCP client; `toml`: a kiln.toml to pass with --config. */
export async function serve(t, paths, opts = {}) {
  const args = [...paths];
  if (opts.toml !== undefined) {
    const cfg = join(tempDir(t), 'kiln.toml');
    writeFileSync(cfg, opts.toml);
    args.push('--config', cfg);
  }
  return mcp(t, args, opts);
}

/** Command lines of live processes that contain `token` (never the `ps` itself). */
export function live(token) {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(token) && !l.includes('ps -eo'));
}

/** Resident memory of a process in bytes (0 when it is gone). */
export function rss(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A unique token to put in a marker file name or a process's command line. */
export const token = (what = 'kiln') => `${what}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;

/** The pid of the `kiln mcp` process behind a client transport from `serve()`. */
export function serverPid(transport) {
  const pid = transport.pid ?? transport._process?.pid;
  if (typeof pid !== 'number') throw new Error('the transport exposes no server pid');
  return pid;
}
