// Running what capabilities/commands.ts allowed: one-shot commands and a session's persistent processes.
//
// Invariants:
//  - Every child runs in its own process group (detached), with only PATH and the spec's `env` names from
//    the server's environment, stdin closed, and no shell unless the spec is shell form (`/bin/sh -c`).
//  - A one-shot call's whole group is killed when it times out, when its output passes 8 MiB, and after it
//    exits (so nothing it spawned outlives the call). Output is never buffered past the cap.
//  - A persistent process belongs to its session, not to a guest instance: it survives guest resets and is
//    killed (its whole group) on stop, when the session closes, and when the server exits.
import { execa, type ResultPromise } from 'execa';
import { KilnError } from '../errors.js';
import type { CommandSpec } from '../manifest.js';
import type { Invocation } from './commands.js';

export const OUTPUT_LIMIT = 8 * 1024 * 1024;
export const RING_BYTES = 64 * 1024;
export const MAX_PERSISTENT = 16;
/** One-shot commands running at once in a session; past it a call fails at once. */
export const MAX_RUNNING = 16;
const STDERR_TAIL = 2048;

export class CommandError extends KilnError {
  override name = 'CommandError';
}

/** The child's environment: PATH, and the listed names that are set on the server. Nothing else. */
export function childEnv(spec: CommandSpec, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['PATH', ...spec.env]) {
    const v = env[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const tail = (s: string, n: number) => (s.length > n ? '…' + s.slice(-n) : s).trim();

function shape(name: string, spec: CommandSpec, stdout: string): unknown {
  switch (spec.output) {
    case 'text':
      return stdout.trim();
    case 'lines':
      return stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '');
    case 'json':
      try {
        return JSON.parse(stdout);
      } catch (e: any) {
        throw new CommandError(`command "${name}" printed invalid JSON (${e.message}): ${tail(stdout, 200)}`);
      }
  }
}

function spawn(inv: Invocation, spec: CommandSpec, buffer: boolean): ResultPromise {
  return execa(inv.file, inv.args, {
    shell: false,
    env: childEnv(spec),
    extendEnv: false,
    cwd: spec.cwd,
    detached: true,
    stdin: 'ignore',
    encoding: 'buffer',
    buffer,
    maxBuffer: OUTPUT_LIMIT,
    reject: false,
    cleanup: true,
  } as const) as unknown as ResultPromise;
}

/** Run a one-shot command to completion and shape its stdout. `table` counts the session's running ones. */
export async function runOnce(name: string, spec: CommandSpec, inv: Invocation, table: ProcessTable): Promise<unknown> {
  if (table.oneShots >= MAX_RUNNING) throw new CommandError(`a session runs at most ${MAX_RUNNING} one-shot commands at once; await some first`);
  table.oneShots++;
  try {
    return await runToEnd(name, spec, inv);
  } finally {
    table.oneShots--;
  }
}

async function runToEnd(name: string, spec: CommandSpec, inv: Invocation): Promise<unknown> {
  const child = spawn(inv, spec, true);
  let timedOut = false;
  const timer = spec.timeoutMs
    ? setTimeout(() => {
        timedOut = true;
        killGroup(child.pid);
      }, spec.timeoutMs)
    : undefined;
  let result;
  try {
    result = await child;
  } finally {
    clearTimeout(timer);
    killGroup(child.pid); // whatever it left behind in its group
  }
  const r = result as any;
  if (r.failed && r.code === 'ENOENT') throw new CommandError(`command "${name}": ${inv.file} was not found on PATH`);
  if (r.failed && r.cwd && r.code === 'ENOTDIR') throw new CommandError(`command "${name}": cwd ${spec.cwd} is not a directory`);
  const decode = (b: unknown) => (b instanceof Uint8Array ? new TextDecoder().decode(b) : String(b ?? ''));
  const stdout = decode(r.stdout);
  const stderr = decode(r.stderr);
  if (timedOut) throw new CommandError(`command "${name}" timed out after ${spec.timeoutMs} ms; its process group was killed`);
  if (r.isMaxBuffer) throw new CommandError(`command "${name}" printed more than ${OUTPUT_LIMIT / 1048576} MiB; it was killed`);
  if (r.exitCode === undefined && r.signal) throw new CommandError(`command "${name}" was killed by ${r.signal}${stderr ? `: ${tail(stderr, STDERR_TAIL)}` : ''}`);
  if (r.failed && r.exitCode === undefined) throw new CommandError(`command "${name}" could not start: ${r.originalMessage ?? r.shortMessage ?? 'unknown error'}`);
  if (r.exitCode !== 0) throw new CommandError(`command "${name}" exited with code ${r.exitCode}${stderr ? `: ${tail(stderr, STDERR_TAIL)}` : ''}`);
  return shape(name, spec, stdout);
}

/** The last `RING_BYTES` of a stream. */
class Ring {
  private chunks: Buffer[] = [];
  private size = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
    while (this.size - this.chunks[0].length >= RING_BYTES) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - RING_BYTES)).toString('utf8');
  }
}

interface Persistent {
  child: ResultPromise;
  pid: number;
  startedAt: number;
  exitCode: number | null;
  running: boolean;
  stdout: Ring;
  stderr: Ring;
}

export interface ProcessStatus {
  running: boolean;
  pid: number;
  exitCode: number | null;
  uptimeMs: number;
  stdout: string;
  stderr: string;
}

/** A session's persistent processes, keyed by extension file, command name and spec. */
export class ProcessTable {
  private readonly procs = new Map<string, Persistent>();
  /** One-shot commands running now (see runOnce). */
  oneShots = 0;

  private static key(owner: string, name: string, spec: CommandSpec): string {
    return JSON.stringify([owner, name, spec.run, spec.env, spec.cwd ?? null]);
  }

  get running(): number {
    return [...this.procs.values()].filter((p) => p.running).length;
  }

  start(owner: string, name: string, spec: CommandSpec, inv: Invocation): { name: string; pid: number } {
    const key = ProcessTable.key(owner, name, spec);
    const existing = this.procs.get(key);
    if (existing?.running) return { name, pid: existing.pid };
    if (this.running >= MAX_PERSISTENT) throw new CommandError(`a session runs at most ${MAX_PERSISTENT} persistent processes; stop one first`);
    const child = spawn(inv, spec, false);
    if (!child.pid) throw new CommandError(`command "${name}" could not start (${inv.file})`);
    const p: Persistent = { child, pid: child.pid, startedAt: Date.now(), exitCode: null, running: true, stdout: new Ring(), stderr: new Ring() };
    child.stdout?.on('data', (b: Buffer) => p.stdout.push(b));
    child.stderr?.on('data', (b: Buffer) => p.stderr.push(b));
    child.then((r: any) => {
      p.running = false;
      p.exitCode = typeof r.exitCode === 'number' ? r.exitCode : null;
      killGroup(p.pid);
    });
    this.procs.set(key, p);
    return { name, pid: p.pid };
  }

  status(owner: string, name: string, spec: CommandSpec): ProcessStatus {
    const p = this.procs.get(ProcessTable.key(owner, name, spec));
    if (!p) return { running: false, pid: 0, exitCode: null, uptimeMs: 0, stdout: '', stderr: '' };
    return {
      running: p.running,
      pid: p.pid,
      exitCode: p.exitCode,
      uptimeMs: p.running ? Date.now() - p.startedAt : 0,
      stdout: p.stdout.text(),
      stderr: p.stderr.text(),
    };
  }

  async stop(owner: string, name: string, spec: CommandSpec): Promise<null> {
    const p = this.procs.get(ProcessTable.key(owner, name, spec));
    if (p?.running) {
      killGroup(p.pid);
      await p.child.catch(() => undefined);
    }
    return null;
  }

  /** Kill every process group now (synchronous: safe in an exit handler). */
  killAll(): void {
    for (const p of this.procs.values()) if (p.running) killGroup(p.pid);
  }
}
