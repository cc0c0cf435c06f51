// Running what capabilities/commands/commands.ts allowed: one-shot commands and a session's persistent processes.
//
// Invariants:
//  - Every child runs under kiln-reaper (reaper.c) in its own process group (detached), with only PATH and
//    the spec's `env` names from the server's environment, stdin closed, no other file descriptor (the reaper
//    closes those kiln inherited), and no shell unless the spec is
//    shell form (`/bin/sh -c`). The reaper is a subreaper: whatever the command starts — even a process that
//    leaves the group with setsid — is killed when the command exits or the reaper is stopped, and the
//    reaper is stopped when the server dies, even by SIGKILL (PR_SET_PDEATHSIG).
//  - A one-shot command belongs to its call: it is stopped when the call's signal fires (the handler
//    returned, timed out, or its guest or session went away), when it times out, and when its output passes
//    8 MiB. Output is never buffered past the cap.
//  - A persistent process belongs to its session, not to a guest instance: it survives guest resets and is
//    stopped on `stop`, when the session closes, and when the server exits.
//  - A command cannot see the server (reaper.c, "Isolation"): where the kernel allows it, it runs in a new pid
//    namespace with its own /proc, the host's kernel settings (/proc/sys, /sys) read-only and only Docker's
//    default capabilities less CAP_MKNOD, so no /proc entry of the server (its initial environment, memory,
//    command line) or of any process outside exists for it, and no kernel helper runs for it outside. Where the
//    kernel does not, kiln says so once on stderr: at start when a loaded tool declares commands, else at the
//    first command (docs/security.md says what holds then).
//  - Commands running at once in the whole server (one-shot and persistent, every session) never pass
//    [commands] maxProcesses: one past it is refused before anything is spawned. A command counts until its
//    reaper has exited, that is until everything it started is gone.
//  - Every running command remembers the extension and the declaration it was started under (its Origin), so
//    that a revocation (the operator's config changed: commands.ts `stillCovered`) stops exactly those the new
//    settings no longer cover.
//  - Without the reaper (not Linux, no build/kiln-reaper, or one built for another machine: the package ships a
//    static linux-x64 one, scripts/build-reaper.sh) commands run directly and only their process group is
//    killed: a setsid'd descendant, or anything after a SIGKILL of the server, could survive, nothing hides
//    the server's /proc entries, and a descriptor kiln inherited without close-on-exec reaches the command.
//    kiln says so once on stderr, as above.
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { execa as Execa, ResultPromise } from 'execa';
import { KilnError } from '../../errors.js';
import { repoRoot } from '../../paths.js';
import type { Allow, CommandSpec } from '../../extensions/manifest.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';
import { DEFAULT_MAX_PROCESSES, MAX_PROCESSES_CEILING, type Invocation } from './commands.js';
import { writeStderr } from '../../untrusted/terminal.js';
import type { ProcessStatus } from '../shapes.js';

export const OUTPUT_LIMIT = 8 * 1024 * 1024;
export const RING_BYTES = 64 * 1024;
export const MAX_PERSISTENT = 16;
/** One-shot commands running at once in a session; past it a call fails at once. */
export const MAX_RUNNING = 16;
const STDERR_TAIL = 2048;

/** The extension and the declaration a command was started under: what a revocation judges it by. */
export interface Origin {
  extension: ExtensionIdentity;
  allow: Allow;
}

/** The commands running now in this server (a server is one process), every session's: their reapers' pids. */
const serverRunning = new Set<number>();

/** Refuse a new command when the server already runs `max` ([commands] maxProcesses). */
function admit(name: string, max: number): void {
  if (serverRunning.size >= max) {
    throw new CommandError(
      `command "${name}" was not started: this server already runs ${serverRunning.size} commands, its limit ([commands] maxProcesses = ${max}); ` +
        `wait for some to end or stop some` + (max < MAX_PROCESSES_CEILING ? `, or raise the limit in kiln.toml, e.g. [commands] maxProcesses = ${Math.min(max * 2, MAX_PROCESSES_CEILING)}` : ''),
    );
  }
}

/** Count `child` as running in the server until it (its reaper, and so everything it started) has exited. */
function counted(child: ResultPromise): void {
  const pid = child.pid;
  if (!pid) return;
  serverRunning.add(pid);
  const done = () => serverRunning.delete(pid);
  (child as unknown as Promise<unknown>).then(done, done);
}

/** A command that failed. When it ran and ended badly, `fields` are what the guest's CommandError exposes:
 *  exitCode (null when a signal killed it), signal, and its stdout and stderr (each at most 8 MiB). */
export class CommandError extends KilnError {
  override name = 'CommandError';
  constructor(message: string, readonly fields?: { exitCode: number | null; signal: string | null; stdout: string; stderr: string }) {
    super(message);
  }
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

/** The reaper binary, or undefined (then commands run directly; see the invariants above). The package
 *  ships it for linux-x64 (scripts/build-reaper.sh); a checkout builds it for its own machine. */
const REAPER = join(repoRoot, 'build', 'kiln-reaper');
const ELF_MACHINE: Partial<Record<string, number>> = { x64: 0x3e, arm64: 0xb7 };

/** Why commands cannot run under the reaper on this machine, or undefined when they can. */
export function reaperUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `commands run without kiln's process reaper on ${process.platform} (it is Linux only)`;
  const head = Buffer.alloc(20);
  try {
    const fd = openSync(REAPER, 'r');
    try {
      readSync(fd, head, 0, 20, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return `${REAPER} is missing (run scripts/setup.sh): commands run without kiln's process reaper`;
  }
  if (head.readUInt32BE(0) !== 0x7f454c46 || head.readUInt16LE(18) !== ELF_MACHINE[process.arch]) {
    return `kiln's process reaper is built for another machine than this ${process.arch} one: commands run without it`;
  }
  return undefined;
}

let reaperPath: string | null | undefined;
/** The reaper to run commands under; the first call says once on stderr when there is none (`kiln mcp`,
 *  `run` and `bdd` make it at start). */
export function reaper(): string | undefined {
  if (reaperPath === undefined) {
    const why = reaperUnavailable();
    if (why) writeStderr(`kiln: ${why}, so a command that leaves its process group can outlive its call, and it sees the server's /proc entries (docs/security.md)`);
    else {
      // node:child_process loads here: a process that runs no command never loads it.
      const { spawnSync } = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
      const probe = spawnSync(REAPER, ['--probe'], { encoding: 'utf8', env: {}, stdio: ['ignore', 'ignore', 'pipe'] });
      if (probe.status !== 0) {
        writeStderr(`kiln: commands are not isolated from the server (${(probe.stderr || probe.error?.message || 'the probe failed').trim().slice(0, 200)}): a command running as kiln's user can read the server's /proc entries (its initial environment, memory); give secrets from [secrets.*] only where kiln runs as root or unprivileged user namespaces are on (docs/security.md, "Secrets")`);
      }
    }
    reaperPath = why ? null : REAPER;
  }
  return reaperPath ?? undefined;
}

/** Say now (once) what commands will run without: the reaper, or their isolation from the server. */
export function checkCommandSupport(): void {
  reaper();
}

/** How long a reaper gets to clean up after SIGTERM before its group is killed outright. */
const REAPER_GRACE_MS = 2000;

/** Stop a command and everything it started: SIGTERM to its reaper (which kills every descendant), then, as a
 *  backstop, SIGKILL to its process group. Synchronous in its first step, so it is safe in an exit handler. */
function stopTree(pid: number | undefined): void {
  if (!pid) return;
  const signal = (target: number, sig: NodeJS.Signals) => {
    try {
      process.kill(target, sig);
    } catch {
      // already gone
    }
  };
  if (reaper()) {
    signal(pid, 'SIGTERM');
    setTimeout(() => signal(-pid, 'SIGKILL'), REAPER_GRACE_MS).unref();
  } else signal(-pid, 'SIGKILL');
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

let execa: typeof Execa | undefined;
/** Load execa (on the first command: a process that runs none, like `kiln run` of a pure tool, never pays
 *  for it). `spawn` needs it loaded. */
export async function loadProcessSupport(): Promise<void> {
  execa ??= (await import('execa')).execa;
}

function spawn(inv: Invocation, spec: CommandSpec, buffer: boolean): ResultPromise {
  const r = reaper();
  if (!execa) throw new Error('processes.ts: loadProcessSupport() was not awaited before spawning');
  return execa(r ?? inv.file, r ? ['--', inv.file, ...inv.args] : inv.args, {
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

/** Run a one-shot command to completion and shape its stdout. `table` counts and tracks the session's
 *  running ones; `signal` fires when the call that started it ends, which stops it. */
export async function runOnce(
  name: string, spec: CommandSpec, inv: Invocation, table: ProcessTable, signal: AbortSignal | undefined, origin: Origin, maxProcesses = DEFAULT_MAX_PROCESSES,
): Promise<unknown> {
  await loadProcessSupport(); // before the checks: from them to the spawn nothing may yield to another call
  if (signal?.aborted) throw new CommandError(`command "${name}" was not started: its call had already ended`);
  if (table.oneShots.size >= MAX_RUNNING) throw new CommandError(`a session runs at most ${MAX_RUNNING} one-shot commands at once; await some first`);
  admit(name, maxProcesses);
  const child = spawn(inv, spec, true);
  counted(child);
  const pid = child.pid ?? 0;
  let stopped: string | undefined;
  const stop = (why: string) => {
    stopped ??= why;
    stopTree(pid);
  };
  if (pid) table.oneShots.set(pid, { name, origin, stop });
  const timer = spec.timeoutMs ? setTimeout(() => stop(`timed out after ${spec.timeoutMs} ms`), spec.timeoutMs) : undefined;
  const onAbort = () => stop('was stopped: the call that ran it ended');
  signal?.addEventListener('abort', onAbort, { once: true });
  let result;
  try {
    result = await child;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    table.oneShots.delete(pid);
    if (!reaper()) stopTree(pid); // without a reaper: whatever it left behind in its group
  }
  return outcome(name, spec, inv, result, stopped);
}

function outcome(name: string, spec: CommandSpec, inv: Invocation, result: unknown, stopped: string | undefined): unknown {
  const r = result as any;
  const notFound = r.exitCode === 127 && /^kiln-reaper: cannot run /.test(String(r.stderr ? new TextDecoder().decode(r.stderr) : ''));
  if ((r.failed && r.code === 'ENOENT') || notFound) throw new CommandError(`command "${name}": ${inv.file} was not found on PATH`);
  if (r.failed && r.cwd && r.code === 'ENOTDIR') throw new CommandError(`command "${name}": cwd ${spec.cwd} is not a directory`);
  const decode = (b: unknown) => (b instanceof Uint8Array ? new TextDecoder().decode(b) : String(b ?? ''));
  const stdout = decode(r.stdout);
  const stderr = decode(r.stderr);
  if (stopped) throw new CommandError(`command "${name}" ${stopped}; it and everything it started were killed`);
  if (r.isMaxBuffer) throw new CommandError(`command "${name}" printed more than ${OUTPUT_LIMIT / 1048576} MiB; it was killed`);
  if (r.exitCode === undefined && r.signal) {
    throw new CommandError(`command "${name}" was killed by ${r.signal}${stderr ? `: ${tail(stderr, STDERR_TAIL)}` : ''}`, { exitCode: null, signal: String(r.signal), stdout, stderr });
  }
  if (r.failed && r.exitCode === undefined) throw new CommandError(`command "${name}" could not start: ${r.originalMessage ?? r.shortMessage ?? 'unknown error'}`);
  if (r.exitCode !== 0) {
    throw new CommandError(`command "${name}" exited with code ${r.exitCode}${stderr ? `: ${tail(stderr, STDERR_TAIL)}` : ''}`, { exitCode: r.exitCode, signal: null, stdout, stderr });
  }
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
  name: string;
  origin: Origin;
  child: ResultPromise;
  pid: number;
  startedAt: number;
  exitCode: number | null;
  running: boolean;
  stdout: Ring;
  stderr: Ring;
}

export type { ProcessStatus };

/** A session's persistent processes, keyed by extension file, command name and spec. */
export class ProcessTable {
  private readonly procs = new Map<string, Persistent>();
  /** The one-shot commands running now, by pid (see runOnce). */
  readonly oneShots = new Map<number, { name: string; origin: Origin; stop(why: string): void }>();

  private static key(owner: string, name: string, spec: CommandSpec): string {
    return JSON.stringify([owner, name, spec.run, spec.env, spec.cwd ?? null]);
  }

  get running(): number {
    return [...this.procs.values()].filter((p) => p.running).length;
  }

  start(owner: string, name: string, spec: CommandSpec, inv: Invocation, origin: Origin, maxProcesses = DEFAULT_MAX_PROCESSES): { name: string; pid: number } {
    const key = ProcessTable.key(owner, name, spec);
    const existing = this.procs.get(key);
    if (existing?.running) return { name, pid: existing.pid };
    if (this.running >= MAX_PERSISTENT) throw new CommandError(`a session runs at most ${MAX_PERSISTENT} persistent processes; stop one first`);
    admit(name, maxProcesses);
    const child = spawn(inv, spec, false);
    counted(child);
    if (!child.pid) throw new CommandError(`command "${name}" could not start (${inv.file})`);
    const p: Persistent = { name, origin, child, pid: child.pid, startedAt: Date.now(), exitCode: null, running: true, stdout: new Ring(), stderr: new Ring() };
    child.stdout?.on('data', (b: Buffer) => p.stdout.push(b));
    child.stderr?.on('data', (b: Buffer) => p.stderr.push(b));
    child.then((r: any) => {
      p.running = false;
      p.exitCode = typeof r.exitCode === 'number' ? r.exitCode : null;
      if (!reaper()) stopTree(p.pid);
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
      stopTree(p.pid);
      await p.child.catch(() => undefined);
    }
    return null;
  }

  /** Stop every command of the session now, persistent and one-shot (synchronous: safe in an exit handler). */
  killAll(): void {
    for (const p of this.procs.values()) if (p.running) stopTree(p.pid);
    for (const pid of this.oneShots.keys()) stopTree(pid);
  }

  /** Stop, with everything they started, the running commands `covered` no longer covers (a revocation:
   *  commands.ts stillCovered decides); a one-shot command's call fails saying `why`. Returns what was stopped. */
  revoke(covered: (name: string, origin: Origin) => boolean, why: string): string[] {
    const stopped: string[] = [];
    for (const p of this.procs.values()) {
      if (p.running && !covered(p.name, p.origin)) {
        stopTree(p.pid);
        stopped.push(p.name);
      }
    }
    for (const c of this.oneShots.values()) {
      if (!covered(c.name, c.origin)) {
        c.stop(why);
        stopped.push(c.name);
      }
    }
    return stopped;
  }
}
