// The kernel's side of allow.fs: a checked path (policy.ts CheckedPath) reached through directory descriptors
// and /proc/self/fd, so that what the kernel resolves is what was checked. Used by the performer (operations.ts).
//
// The invariant: **an operation touches only an entry whose directory, as the kernel resolved it, is inside the
// real path of a granted prefix, and never follows a symbolic link at the end of a path.** For a checked path:
//
//  1. The prefix's area: the realpath of <root>/<prefix> (the operator's own symlinks there are followed; a
//     prefix not made yet is its parent's realpath and its own name).
//  2. The entry's parent directory is opened (O_PATH|O_DIRECTORY: the kernel follows symlinks on the way, and
//     no device or FIFO is ever opened) and its true path read back from /proc/self/fd/<fd>. It must be the
//     area or inside it (or, for the prefix entry itself, exactly the area's parent). A symlink anywhere on the
//     way — a symlinked parent, a symlinked directory, one swapped in a moment ago — that leads outside fails
//     here. From now on the descriptor is the directory: swapping names afterwards changes nothing.
//  3. The entry is reached as /proc/self/fd/<fd>/<name>, which the kernel resolves from that very directory
//     (an openat), with O_NOFOLLOW / lstat semantics for <name>: `inspect` refuses a symlink at the end of a
//     path; `inspectLink` sees the link itself (rm and rename act on it, never its target).
//  4. mkdir -p makes each missing directory from its verified parent, each checked inside the area once opened.
//  5. rm -r and the listing approvals judge walk the tree by descriptors too: each directory is opened
//     O_NOFOLLOW from its verified parent; a symlink inside the tree is an entry, never entered, so what it
//     points to survives. rm -r removes only the entries approvals judged.
//
// Needs Linux's /proc (O_PATH and /proc/self/fd): elsewhere `needProc` fails with an UnavailableError.
import { constants, type Stats } from 'node:fs';
import { mkdir, open, opendir, readlink, realpath, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { KilnError } from '../../errors.js';
import { UnavailableError } from '../../errors.js';
import { FsError, FsPermissionError, symlinkRefused, toolName } from './errors.js';
import type { CheckedPath, FsPlace } from './policy.js';

/** How deep rm -r (and the listing approvals judge) goes. */
const MAX_RM_DEPTH = 256;
/** The most entries below a directory that rm -r or rename lists for [approvals] to judge. */
export const MAX_JUDGED_ENTRIES = 10_000;
/** Linux's O_PATH (node:fs constants do not carry it). */
export const O_PATH = 0o10000000;
const { O_DIRECTORY, O_NOFOLLOW } = constants;

/** The path the kernel resolves from descriptor `fd` (an openat from that directory, or the file itself). */
export const FD = (fd: number) => `/proc/self/fd/${fd}`;
const inside = (real: string, area: string) => real === area || real.startsWith(area === '/' ? '/' : area + '/');

/** A place with its area: the real path of the prefix's directory. */
export interface Area extends FsPlace {
  readonly area: string;
}

/** The entry an operation acts on: its verified parent directory (held open) and its name in it. */
export interface Entry {
  dir: FileHandle;
  name: string;
  /** /proc/self/fd/<dir>/<name>: the kernel resolves it from the verified directory. */
  at: string;
}

let procChecked: Promise<void> | undefined;
/** /proc/self/fd is what makes the check race-free: without it, refuse everything. */
export function needProc(): Promise<void> {
  return (procChecked ??= readlink('/proc/self/fd/0').then(() => {}, (e) => {
    if (e?.code === 'ENOENT' || e?.code === 'ENOTDIR') throw new UnavailableError("fs needs Linux's /proc/self/fd, which this server does not have");
  }));
}

/** The real path of a prefix's directory (a prefix not made yet: its parent's, and its own name). */
async function realArea(root: string, prefix: string): Promise<string> {
  const lexical = prefix === '.' ? root : join(root, prefix);
  try {
    return await realpath(lexical);
  } catch (e: any) {
    if (e?.code !== 'ENOENT' || prefix === '.') throw e;
  }
  const parent = dirname(prefix);
  return join(await realArea(root, parent === '.' ? '.' : parent), basename(prefix));
}

/** Each place of `p` with its area, most specific first. */
export async function areas(p: CheckedPath): Promise<Area[]> {
  const out: Area[] = [];
  for (const place of p.places) out.push({ ...place, area: await realArea(p.root, place.prefix) });
  return out;
}

/** `fn` for the first area where it is not refused; else the first refusal. */
export async function firstArea<T>(list: Area[], fn: (area: Area) => Promise<T>): Promise<T> {
  let refused: Error | undefined;
  for (const a of list) {
    try {
      return await fn(a);
    } catch (e) {
      if (!(e instanceof FsPermissionError)) throw e;
      refused ??= e;
    }
  }
  throw refused!;
}

/** Open the entry's parent directory and check what the kernel resolved (step 2), trying each place `p` may be
 *  reached from. */
export async function openEntry(p: CheckedPath): Promise<Entry> {
  return firstArea(await areas(p), (a) => openIn(p, a));
}

/** The entry of `p` reached from area `a`; a refusal when its parent, as the kernel resolved it, is outside. */
async function openIn(p: CheckedPath, a: Area): Promise<Entry> {
  const parent = a.rest ? join(a.area, dirname(a.rest)) : dirname(a.area);
  const name = a.rest ? basename(a.rest) : basename(a.area);
  if (!name) throw new FsPermissionError(`${toolName(p)} may not ${p.access} ${JSON.stringify(p.shown)}: it is the filesystem's root`, p.access, p.shown);
  const dir = await open(parent, O_PATH | O_DIRECTORY);
  let real: string;
  try {
    real = await readlink(FD(dir.fd));
  } catch (e) {
    await dir.close();
    throw e;
  }
  if (a.rest ? inside(real, a.area) : real === dirname(a.area)) return { dir, name, at: `${FD(dir.fd)}/${name}` };
  await dir.close();
  throw outside(p, a);
}

function outside(p: CheckedPath, a: FsPlace): FsPermissionError {
  return new FsPermissionError(
    `${toolName(p)} may not ${p.access} ${JSON.stringify(p.shown)}: a symbolic link on its way leads outside ${a.prefix === '.' ? 'the workspace' : JSON.stringify(a.prefix)}, which allow.fs.${p.access} grants`,
    p.access, p.shown,
  );
}

/** The entry's fstat through an O_PATH descriptor: nothing is opened for reading or writing, no link followed. */
export async function inspect(p: CheckedPath, at: string): Promise<{ handle: FileHandle; st: Stats }> {
  const handle = await open(at, O_PATH | O_NOFOLLOW);
  try {
    const st = await handle.stat();
    if (st.isSymbolicLink()) throw symlinkRefused(p.access, p.shown, p);
    return { handle, st };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** fstat of the entry itself (a symlink as a symlink). */
export async function inspectLink(at: string): Promise<Stats> {
  const h = await open(at, O_PATH | O_NOFOLLOW);
  try {
    return await h.stat();
  } finally {
    await h.close();
  }
}

/** mkdir -p of `p` from area `a` (step 4): the area first (a prefix not made yet is made from its verified
 *  parent), then each component of the rest from the directory before it, each checked to be inside the area
 *  once opened. Resolves to the first directory made (relative to the root), or null. */
export async function mkdirBelow(p: CheckedPath, a: Area): Promise<string | null> {
  let created: string | null = null;
  let cur = await open(a.area, O_PATH | O_DIRECTORY).catch(async (err) => {
    if (err?.code !== 'ENOENT') throw err;
    const top = await openIn(p, { ...a, rest: '' });
    try {
      await mkdir(top.at, 0o777).then(() => {
        created = a.prefix;
      }, (err2) => {
        if (err2?.code !== 'EEXIST') throw err2;
      });
      return await open(top.at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
    } finally {
      await top.dir.close();
    }
  });
  try {
    if ((await readlink(FD(cur.fd))) !== a.area) throw outside(p, a);
    const parts = a.rest ? a.rest.split('/') : [];
    for (const [i, part] of parts.entries()) {
      const at = `${FD(cur.fd)}/${part}`;
      await mkdir(at, 0o777).then(() => {
        created ??= [a.prefix === '.' ? '' : a.prefix, ...parts.slice(0, i + 1)].filter(Boolean).join('/');
      }, (err) => {
        if (err?.code !== 'EEXIST') throw err;
      });
      const next = await open(at, O_PATH | O_DIRECTORY);
      const real = await readlink(FD(next.fd)).catch(async (err) => {
        await next.close();
        throw err;
      });
      if (!inside(real, a.area)) {
        await next.close();
        throw outside(p, a);
      }
      await cur.close();
      cur = next;
    }
  } finally {
    await cur.close();
  }
  return created;
}

/** Remove `name` in the directory `parent` (a /proc/self/fd path): a directory (opened O_NOFOLLOW, so a symlink
 *  is never entered) is emptied through its descriptor and removed; anything else is unlinked. `judged`: the
 *  entries approvals judged, and this one's path relative to the root; any other is not removed. */
export async function removeEntry(parent: string, name: string, depth: number, signal: AbortSignal, judged?: { set: ReadonlySet<string>; rel: string }): Promise<void> {
  const at = `${parent}/${name}`;
  if (judged && depth > 0 && !judged.set.has(judged.rel)) {
    throw new FsError(`rm: ${JSON.stringify(judged.rel)} appeared after [approvals] judged the removal; it was not removed`, 'Error', { code: 'ERR_FS_CHANGED' });
  }
  let dir: FileHandle | undefined;
  try {
    dir = await open(at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  } catch (e: any) {
    if (e?.code === 'ENOENT') return;
    if (e?.code !== 'ENOTDIR' && e?.code !== 'ELOOP') throw e;
  }
  if (!dir) {
    await unlink(at).catch((e) => {
      if (e?.code !== 'ENOENT') throw e;
    });
    return;
  }
  try {
    if (depth >= MAX_RM_DEPTH) throw new FsError(`rm: the tree is deeper than ${MAX_RM_DEPTH} levels`, 'RangeError', { code: 'ERR_FS_TOO_DEEP' });
    for (;;) {
      if (signal.aborted) throw new KilnError('rm was cancelled: its call had ended');
      const names: string[] = [];
      for await (const d of await opendir(FD(dir.fd), { bufferSize: 128 })) {
        names.push(d.name);
        if (names.length >= 1024) break;
      }
      if (names.length === 0) break;
      for (const n of names) await removeEntry(FD(dir.fd), n, depth + 1, signal, judged && { set: judged.set, rel: judged.rel ? `${judged.rel}/${n}` : n });
    }
  } finally {
    await dir.close();
  }
  await rmdir(at);
}

/** Append to `out` every entry below `name` in `parent` (a /proc/self/fd path) when it is a directory, each as
 *  `rel`/..., at most MAX_JUDGED_ENTRIES of them. */
export async function listEntries(parent: string, name: string, rel: string, depth: number, out: string[], shownPath: string, signal: AbortSignal): Promise<void> {
  let dir: FileHandle;
  try {
    dir = await open(`${parent}/${name}`, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  } catch (e: any) {
    if (e?.code === 'ENOENT' || e?.code === 'ENOTDIR' || e?.code === 'ELOOP') return; // not a directory
    throw e;
  }
  try {
    if (depth >= MAX_RM_DEPTH) throw new FsError(`the tree of ${JSON.stringify(shownPath)} is deeper than ${MAX_RM_DEPTH} levels`, 'RangeError', { code: 'ERR_FS_TOO_DEEP' });
    for await (const d of await opendir(FD(dir.fd), { bufferSize: 128 })) {
      if (signal.aborted) throw new KilnError('the listing was cancelled: its call had ended');
      const below = rel ? `${rel}/${d.name}` : d.name;
      out.push(below);
      if (out.length > MAX_JUDGED_ENTRIES) {
        throw new FsError(
          `${JSON.stringify(shownPath)} holds more than ${MAX_JUDGED_ENTRIES} entries, more than [approvals] judges for one removal or move (each entry is judged by its path rules); remove or move it in parts`,
          'RangeError', { code: 'ERR_FS_TOO_MANY_ENTRIES' },
        );
      }
      if (d.isDirectory()) await listEntries(FD(dir.fd), d.name, below, depth + 1, out, shownPath, signal);
    }
  } finally {
    await dir.close();
  }
}
