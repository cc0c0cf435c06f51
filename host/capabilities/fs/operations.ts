// allow.fs's performer: the eight file operations, each on what policy.ts decided (a CheckedFsOp) and nothing
// else. It neither checks a prefix nor parses a path: it reaches each checked path through walk.ts and acts.
//
// Invariants:
//  - Files are opened O_PATH first, checked with fstat (a regular file, one link: a hard link may have another
//    name outside, so a file with nlink > 1 is refused; never truncated before that check) and only then reopened
//    for reading or writing through /proc/self/fd/<fd>, which is the same inode. A new file is created O_EXCL |
//    O_NOFOLLOW from its verified directory. No operation creates a symlink or a hard link.
//  - Sizes are capped ([fs] maxReadBytes, maxWriteBytes per operation, maxReaddirEntries), the bytes written by
//    one call (its plugins[...] callees included) and by one session too (maxWriteBytesPerCall,
//    maxWriteBytesPerSession: a write that would pass either is refused before a byte of it is written).
//  - Each operation runs in a turn of its (session, extension)'s FsTurns (turns.ts).
//  - rm -r removes only what [approvals] judged (CheckedFsOp.inside, listed by `listBelow` through the same
//    verified descriptors): an entry that appeared below the directory since is not removed, and the rm fails.
//  - Errors are Node's (errors.ts), naming the path as the guest gave it.
//
// What this does not stop: a directory that was inside when its descriptor was checked and is then moved
// outside by someone else receives the write there; only someone who could already write to that place can
// move it there. The guest itself cannot make symlinks or hard links.
import { constants, type Stats } from 'node:fs';
import { mkdir, open, opendir, rename, lstat, unlink, type FileHandle } from 'node:fs/promises';
import { KilnError } from '../../errors.js';
import { FsError, FsPermissionError, symlinkRefused, systemError, toolName, tooLarge } from './errors.js';
import type { CheckedFsOp, CheckedPath } from './policy.js';
import type { FsEntryType, FsStat } from '../shapes.js';
import { FS_BOUNDS, type FsSettings, type WriteCount } from './settings.js';
import type { FsTurns } from './turns.js';
import { areas, FD, firstArea, inspect, inspectLink, listEntries, mkdirBelow, needProc, openEntry, removeEntry } from './walk.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW } = constants;

/** What an operation runs with besides its decision: the caps, its (session, extension)'s turns, its call. */
export interface FsRuntime {
  settings: FsSettings;
  turns: FsTurns;
  signal: AbortSignal;
  /** What the call and the session have written ([fs] maxWriteBytesPerCall, maxWriteBytesPerSession). */
  written?: { call: WriteCount; session: WriteCount };
}

/** Run `op` in a turn of the (session, extension), its OS errors told as Node's, naming `p` (and `dest`). */
async function run<T>(syscall: string, p: CheckedPath, rt: FsRuntime, op: () => Promise<T>, dest?: CheckedPath): Promise<T> {
  await needProc();
  const release = await rt.turns.take(rt.signal);
  try {
    return await op();
  } catch (e: any) {
    if (e instanceof KilnError) throw e;
    if (e?.code === 'ELOOP') throw symlinkRefused(p.access, p.shown, p);
    if (typeof e?.code === 'string' && /^E[A-Z0-9]+$/.test(e.code)) throw systemError(e.code, e.errno, syscall, p.shown, dest?.shown);
    throw e;
  } finally {
    release();
  }
}

/** A regular file with no other name, or a refusal (directories: EISDIR, as Node's `syscall`; readFile's names
 *  no path, as Node's does not). */
function regular(p: CheckedPath, st: Stats, syscall: string): void {
  if (st.isDirectory()) throw systemError('EISDIR', -21, syscall, syscall === 'read' ? undefined : p.shown);
  if (!st.isFile()) throw new FsPermissionError(`${toolName(p)} may not ${p.access} ${JSON.stringify(p.shown)}: it is not a regular file (a FIFO, socket or device)`, p.access, p.shown);
  if (st.nlink > 1) {
    throw new FsPermissionError(`${toolName(p)} may not ${p.access} ${JSON.stringify(p.shown)}: it has ${st.nlink} hard links, and another name of it may lie outside allow.fs`, p.access, p.shown);
  }
}

function readFile(p: CheckedPath, rt: FsRuntime): Promise<Uint8Array> {
  return run('open', p, rt, async () => {
    const e = await openEntry(p);
    try {
      const { handle, st } = await inspect(p, e.at);
      try {
        if (p.namesDirectory && !st.isDirectory()) throw systemError('ENOTDIR', -20, 'open', p.shown);
        regular(p, st, 'read');
        const max = rt.settings.maxReadBytes;
        if (st.size > max) throw tooLarge(`${JSON.stringify(p.shown)}`, st.size, 'maxReadBytes', max);
        const file = await open(FD(handle.fd), O_RDONLY);
        try {
          const chunks: Buffer[] = [];
          let total = 0;
          for (let size = Math.min(st.size, max) + 1; ; size = 64 * 1024) {
            const buf = Buffer.allocUnsafe(size);
            const { bytesRead } = await file.read(buf, 0, size, null);
            if (bytesRead === 0) break;
            total += bytesRead;
            if (total > max) throw tooLarge(`${JSON.stringify(p.shown)}`, `more than ${max}`, 'maxReadBytes', max);
            chunks.push(buf.subarray(0, bytesRead));
          }
          const out = new Uint8Array(total);
          let at = 0;
          for (const c of chunks) {
            out.set(c, at);
            at += c.length;
          }
          return out;
        } finally {
          await file.close();
        }
      } finally {
        await handle.close();
      }
    } finally {
      await e.dir.close();
    }
  });
}

/** writeFile (append false) and appendFile. The file is created if missing (never through a symlink), and an
 *  existing one is truncated only after it proved to be a regular file with one link. */
function writeFile(p: CheckedPath, data: Uint8Array, append: boolean, rt: FsRuntime): Promise<null> {
  const max = rt.settings.maxWriteBytes;
  return run('open', p, rt, async () => {
    const e = await openEntry(p);
    try {
      if (p.namesDirectory) throw systemError('EISDIR', -21, 'open', p.shown); // "x/" names a directory, as in Node
      if (data.length > max) throw tooLarge('the data to write', data.length, 'maxWriteBytes', max);
      const refund = spend(data.length, rt);
      let writing = false;
      try {
        const flags = O_WRONLY | (append ? O_APPEND : 0);
        let file: FileHandle | undefined;
        for (let attempt = 0; !file; attempt++) {
          if (attempt === 3) throw systemError('EEXIST', -17, 'open', p.shown); // it keeps appearing and vanishing
          let existing: { handle: FileHandle; st: Stats } | undefined;
          try {
            existing = await inspect(p, e.at);
          } catch (err: any) {
            if (err?.code !== 'ENOENT') throw err;
          }
          if (!existing) {
            // O_EXCL: created here, now (a name that appeared meanwhile, a symlink included, is EEXIST: look again).
            file = await open(e.at, flags | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666).catch((err) => {
              if (err?.code === 'EEXIST') return undefined;
              throw err;
            });
            continue;
          }
          try {
            regular(p, existing.st, 'open');
            file = await open(FD(existing.handle.fd), flags);
          } finally {
            await existing.handle.close();
          }
        }
        try {
          writing = true;
          if (!append) await file.truncate(0);
          if (data.length) await file.writeFile(data);
        } finally {
          await file.close();
        }
        return null;
      } catch (err) {
        if (!writing) refund(); // refused or failed before the file was touched: those bytes were not written
        throw err;
      }
    } finally {
      await e.dir.close();
    }
  });
}

/** Count `n` bytes against the call's and the session's bounds before they are written; a refusal names the
 *  setting. Returns the refund for a write that then never happens. */
function spend(n: number, rt: FsRuntime): () => void {
  const w = rt.written;
  if (!w || n === 0) return () => {};
  const { maxWriteBytesPerCall: perCall, maxWriteBytesPerSession: perSession } = rt.settings;
  const over = (setting: string, max: number, used: number) => new FsError(
    `writing ${n} more bytes would pass the server's [fs] ${setting} (${max}; ${used} written already); ` +
    `to allow more, set ${setting} = ${Math.min(max * 2, FS_BOUNDS[setting as keyof typeof FS_BOUNDS])} under [fs] in kiln.toml`,
    'RangeError', { code: 'ERR_FS_WRITE_LIMIT' },
  );
  if (w.call.bytes + n > perCall) throw over('maxWriteBytesPerCall', perCall, w.call.bytes);
  if (w.session.bytes + n > perSession) throw over('maxWriteBytesPerSession', perSession, w.session.bytes);
  w.call.bytes += n;
  w.session.bytes += n;
  let refunded = false;
  return () => {
    if (refunded) return;
    refunded = true;
    w.call.bytes -= n;
    w.session.bytes -= n;
  };
}

function readdir(p: CheckedPath, withFileTypes: boolean, rt: FsRuntime): Promise<string[] | [string, string][]> {
  return run('scandir', p, rt, async () => {
    const e = await openEntry(p);
    try {
      const { handle, st } = await inspect(p, e.at);
      try {
        if (!st.isDirectory()) throw systemError('ENOTDIR', -20, 'scandir', p.shown);
        const max = rt.settings.maxReaddirEntries;
        const entries: [string, string][] = [];
        for await (const d of await opendir(FD(handle.fd), { bufferSize: 128 })) {
          if (entries.length >= max) throw new FsError(`${JSON.stringify(p.shown)} has more than ${max} entries, the server's [fs] maxReaddirEntries`, 'RangeError', { code: 'ERR_FS_TOO_MANY_ENTRIES' });
          let type = d.isFile() ? 'file' : d.isDirectory() ? 'directory' : d.isSymbolicLink() ? 'symlink' : d.isFIFO() ? 'fifo' : d.isSocket() ? 'socket' : d.isBlockDevice() ? 'block' : d.isCharacterDevice() ? 'char' : '';
          if (!type && withFileTypes) type = typeOf(await lstat(`${FD(handle.fd)}/${d.name}`).catch(() => undefined));
          entries.push([d.name, type]);
          if (rt.signal.aborted) break;
        }
        entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        return withFileTypes ? entries : entries.map(([n]) => n);
      } finally {
        await handle.close();
      }
    } finally {
      await e.dir.close();
    }
  });
}

function stat(p: CheckedPath, rt: FsRuntime): Promise<FsStat> {
  return run('stat', p, rt, async () => {
    const e = await openEntry(p);
    try {
      const { handle, st } = await inspect(p, e.at);
      await handle.close();
      if (p.namesDirectory && !st.isDirectory()) throw systemError('ENOTDIR', -20, 'stat', p.shown);
      return {
        type: typeOf(st), size: st.size, mode: st.mode, nlink: st.nlink,
        atimeMs: st.atimeMs, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, birthtimeMs: st.birthtimeMs,
      };
    } finally {
      await e.dir.close();
    }
  });
}

/** mkdir; recursive: each missing directory made from its verified parent (walk.ts mkdirBelow). Resolves to the
 *  first directory made (relative to the root) when recursive, else null. */
function makeDirectory(p: CheckedPath, recursive: boolean, rt: FsRuntime): Promise<string | null> {
  return run('mkdir', p, rt, async () => {
    if (!recursive) {
      const e = await openEntry(p);
      try {
        await mkdir(e.at, 0o777);
        return null;
      } finally {
        await e.dir.close();
      }
    }
    return firstArea(await areas(p), (a) => mkdirBelow(p, a));
  });
}

/** rm; recursive: the tree is emptied through descriptors, symlinks in it unlinked, never followed; only the
 *  entries approvals judged (`inside`, when they judged) are removed. */
function rm(p: CheckedPath, recursive: boolean, force: boolean, inside: readonly string[] | undefined, rt: FsRuntime): Promise<null> {
  return run('rm', p, rt, async () => {
    const e = await openEntry(p);
    try {
      let st: Stats;
      try {
        st = await inspectLink(e.at);
      } catch (err: any) {
        if (err?.code === 'ENOENT' && force) return null;
        if (err?.code === 'ENOENT') throw systemError('ENOENT', -2, 'lstat', p.shown);
        throw err;
      }
      if (!st.isDirectory()) {
        if (p.namesDirectory) throw systemError('ENOTDIR', -20, 'lstat', p.shown);
        await unlink(e.at);
        return null;
      }
      if (!recursive) {
        throw new FsError(`Path is a directory: rm returned EISDIR (is a directory) ${p.shown}`, 'SystemError', { code: 'ERR_FS_EISDIR', errno: 21, syscall: 'rm', path: p.shown });
      }
      const judged = inside && { set: new Set(inside), rel: p.rel };
      await removeEntry(FD(e.dir.fd), e.name, 0, rt.signal, judged);
      return null;
    } finally {
      await e.dir.close();
    }
  });
}

function move(from: CheckedPath, to: CheckedPath, rt: FsRuntime): Promise<null> {
  return run('rename', from, rt, async () => {
    const a = await openEntry(from);
    try {
      const b = await openEntry(to);
      try {
        await rename(a.at, b.at);
        return null;
      } finally {
        await b.dir.close();
      }
    } finally {
      await a.dir.close();
    }
  }, to);
}

function typeOf(st: Stats | undefined): FsEntryType {
  if (!st) return '';
  return st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : st.isSocket() ? 'socket' : st.isBlockDevice() ? 'block' : st.isCharacterDevice() ? 'char' : '';
}

/** Every entry below `p` when it is a directory (none for anything else or nothing), relative to the root,
 *  walked through descriptors as rm -r walks it (a symlink is an entry, never entered): what [approvals] judges
 *  for rm -r and rename (policy.ts FsPolicyContext.listBelow). */
export function listBelow(p: CheckedPath, rt: FsRuntime): Promise<string[]> {
  return run('scandir', p, rt, async () => {
    const e = await openEntry(p).catch((err) => {
      if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') return undefined; // nothing there: the operation says so
      throw err;
    });
    if (!e) return [];
    try {
      const out: string[] = [];
      await listEntries(FD(e.dir.fd), e.name, p.rel, 0, out, p.shown, rt.signal);
      return out;
    } finally {
      await e.dir.close();
    }
  });
}

/** Perform the decided operation `op` (capabilities/index.ts). `data`: the bytes of writeFile/appendFile. */
export function performFs(op: CheckedFsOp, data: Uint8Array | undefined, rt: FsRuntime): Promise<unknown> {
  const p = op.path;
  switch (op.kind) {
    case 'fs.readFile': return readFile(p, rt);
    case 'fs.writeFile': return writeFile(p, data ?? new Uint8Array(), false, rt);
    case 'fs.appendFile': return writeFile(p, data ?? new Uint8Array(), true, rt);
    case 'fs.readdir': return readdir(p, op.withFileTypes, rt);
    case 'fs.stat': return stat(p, rt);
    case 'fs.mkdir': return makeDirectory(p, op.recursive, rt);
    case 'fs.rm': return rm(p, op.recursive, op.force, op.inside, rt);
    case 'fs.rename': return move(p, op.to!, rt);
  }
}
