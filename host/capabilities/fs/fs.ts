// allow.fs: the workspace's files, read and written on behalf of one running handler.
//
// A tool declares path prefixes, relative to the operator's workspace root (`[fs] root`, default the server's
// working directory): `allow.fs = { read: ["data"], write: ["out"] }`. Read and write are independent: readFile,
// readdir and stat need a read prefix; writeFile, appendFile, mkdir, rm and rename need a write prefix (rename:
// on both paths). The check follows the running handler (its own manifest, per invocation), never the file's
// other tools and never WASI preopens (the guest has none).
//
// The invariant: **an operation touches only an entry whose directory, as the kernel resolved it, is inside the
// real path of a granted prefix, and never follows a symbolic link at the end of a path.** For every path:
//
//  1. Lexically (`fsAllowed`, pure): the guest's path must be relative; "." and empty parts are dropped and
//     ".." resolved as text, refused if it climbs above the root; the result must be a granted prefix or lie
//     under one, component by component ("data2" and "data-evil" are not under "data"). Nothing is touched yet.
//  2. The prefix's area: the realpath of <root>/<prefix> (the operator's own symlinks there are followed; a
//     prefix not made yet is its parent's realpath and its own name).
//  3. The entry's parent directory is opened (O_PATH|O_DIRECTORY: the kernel follows symlinks on the way, and
//     no device or FIFO is ever opened) and its true path read back from /proc/self/fd/<fd>. It must be the
//     area or inside it (or, for the prefix entry itself, exactly the area's parent). A symlink anywhere on the
//     way — a symlinked parent, a symlinked directory, one swapped in a moment ago — that leads outside fails
//     here. From now on the descriptor is the directory: swapping names afterwards changes nothing.
//  4. The entry is reached as /proc/self/fd/<fd>/<name>, which the kernel resolves from that very directory
//     (an openat), with O_NOFOLLOW / lstat semantics for <name>: a symlink at the end of a path is refused for
//     reads and writes (rm and rename act on the link itself, never its target). Files are opened O_PATH first,
//     checked with fstat (a regular file, one link: a hard link may have another name outside, so a file with
//     nlink > 1 is refused; never truncated before that check) and only then reopened for reading or writing
//     through /proc/self/fd/<fd>, which is the same inode.
//  5. rm -r walks the tree by descriptors too: each directory is opened O_NOFOLLOW from its verified parent;
//     a symlink inside the tree is unlinked, never followed, so what it points to survives.
//  6. Sizes are capped ([fs] maxReadBytes, maxWriteBytes per operation, maxReaddirEntries), the bytes written
//     by one call (its plugins[...] callees included) and by one session too (maxWriteBytesPerCall,
//     maxWriteBytesPerSession: a write that would pass either is refused before a byte of it is written), and a
//     (session, extension) runs at most 16 fs operations at once (the rest wait their turn: Promise.all over
//     many files works).
//  7. rm -r removes only what [approvals] judged (`inside`, listed by `listBelow` through the same verified
//     descriptors): an entry that appeared below the directory since is not removed, and the rm fails.
//
// What this does not stop: a directory that was inside when its descriptor was checked and is then moved
// outside by someone else receives the write there; only someone who could already write to that place can
// move it there. The guest itself cannot make symlinks or hard links: no operation here creates one.
//
// Needs Linux's /proc (O_PATH and /proc/self/fd): elsewhere every operation fails with UnavailableError.
import { constants, type Stats } from 'node:fs';
import { mkdir, open, opendir, readlink, realpath, rename, rmdir, lstat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { getSystemErrorMap } from 'node:util';
import { KilnError, PermissionError } from '../../errors.js';

export interface FsSettings {
  /** Absolute path of the workspace root; undefined: the server's working directory. */
  root?: string;
  /** The largest file readFile returns. */
  maxReadBytes: number;
  /** The most bytes one writeFile or appendFile may write. */
  maxWriteBytes: number;
  /** The most bytes the writes of one call (with its plugins[...] callees) may write together. */
  maxWriteBytesPerCall: number;
  /** The most bytes the writes of one session may write together, over its life. */
  maxWriteBytesPerSession: number;
  /** The most entries readdir returns; a larger directory fails. */
  maxReaddirEntries: number;
}

export const DEFAULT_FS: FsSettings = {
  maxReadBytes: 16 * 1024 * 1024, maxWriteBytes: 16 * 1024 * 1024, maxWriteBytesPerCall: 64 * 1024 * 1024,
  maxWriteBytesPerSession: 1024 * 1024 * 1024, maxReaddirEntries: 10_000,
};
/** The [fs] byte and count settings, and the largest value each takes. */
const FS_BOUNDS = {
  maxReadBytes: 1024 ** 3, maxWriteBytes: 1024 ** 3, maxWriteBytesPerCall: 1024 ** 3, maxWriteBytesPerSession: 1024 ** 4, maxReaddirEntries: 1024 ** 3,
} as const;

/** Bytes written so far, by a call (with its plugins[...] callees) or by a session. */
export interface WriteCount {
  bytes: number;
}

/** allow.fs as the manifest holds it: normalised prefixes (normalisePrefix). */
export interface FsAllow {
  read: string[];
  write: string[];
}

export type FsAccess = 'read' | 'write';

/** fs operations a (session, extension) runs at once; more wait for a turn. */
export const MAX_FS_IN_FLIGHT = 16;
/** How deep rm -r goes. */
const MAX_RM_DEPTH = 256;
/** The most entries below a directory that rm -r or rename lists for [approvals] to judge. */
export const MAX_JUDGED_ENTRIES = 10_000;
const MAX_PATH = 4096;
/** Linux's O_PATH (node:fs constants do not carry it). */
const O_PATH = 0o10000000;
const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND } = constants;

// ---- the pure part -------------------------------------------------------------------------------

export class FsPrefixError extends Error {}

/** A declared prefix in its one spelling: relative, "/"-separated, without "." or empty parts; "." is the whole
 *  workspace. Throws FsPrefixError for an absolute path, "..", a NUL or an empty string. */
export function normalisePrefix(p: unknown): string {
  if (typeof p !== 'string' || p.length === 0) throw new FsPrefixError('each prefix must be a non-empty path ("." for the whole workspace)');
  const shown = JSON.stringify(p).slice(0, 200);
  if (p.length > 1024) throw new FsPrefixError(`${shown}... is longer than 1024 characters`);
  if (p.includes('\0')) throw new FsPrefixError(`${shown} contains a NUL character`);
  if (p.startsWith('/')) throw new FsPrefixError(`${shown} is absolute; prefixes are relative to the operator's workspace root ([fs] root)`);
  const parts = p.split('/').filter((x) => x !== '' && x !== '.');
  if (parts.includes('..')) throw new FsPrefixError(`${shown} contains ".."; a prefix may not leave the workspace root`);
  return parts.length ? parts.join('/') : '.';
}

/** Whether `rel` (a normalised relative path, '' for the root itself) is `prefix` or lies under it. */
export function underPrefix(rel: string, prefix: string): boolean {
  return prefix === '.' || rel === prefix || rel.startsWith(prefix + '/');
}

/** The prefixes both lists allow (for an operator's grants applied on top of a manifest's): each prefix of
 *  one list that lies under a prefix of the other. */
export function intersectPrefixes(a: string[], b: string[]): string[] {
  const out = new Set<string>();
  for (const x of a) for (const y of b) {
    if (underPrefix(x === '.' ? '' : x, y)) out.add(x);
    else if (underPrefix(y === '.' ? '' : y, x)) out.add(y);
  }
  return [...out];
}

/** Who asks, for the refusal's wording: the tool, and the setting that lists the prefixes. */
export interface FsWho {
  tool?: string;
  /** "allow.fs" (the default) or, for the operator's grants, e.g. '[grants."notes.ts"] fs'. */
  setting?: string;
}

/** The guest's path, relative to the root ('' for the root itself), resolved as text. A PermissionError for an
 *  absolute path or one that climbs above the root; a TypeError-like FsError for a non-string or a NUL. */
export function lexicalPath(access: FsAccess, path: unknown, who: FsWho = {}): string {
  if (typeof path !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', `The "path" argument must be of type string. Received ${path === null ? 'null' : typeof path}`);
  if (path.includes('\0')) throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'path' must be a string without null bytes. Received ${JSON.stringify(path.slice(0, 200))}`);
  if (path.length > MAX_PATH) throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'path' is longer than ${MAX_PATH} characters`);
  const refuse = (why: string) => new FsPermissionError(`${toolName(who)} may not ${access} ${JSON.stringify(path)}: ${why}`, access, path);
  if (path.startsWith('/')) throw refuse("it is absolute; paths are relative to the operator's workspace root and may not leave it");
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part !== '..') parts.push(part);
    else if (parts.pop() === undefined) throw refuse('".." leaves the workspace root');
  }
  return parts.join('/');
}

/**
 * The lexical check, a pure function: `path` (as the guest gave it) normalised under `root`, if it lies under
 * one of `prefixes` (normalised, as in a manifest); else a PermissionError naming what was refused and the exact
 * setting to add. Call it once per list (the manifest's, then the operator's grants). What the kernel resolves
 * is checked when the operation runs (performFs).
 */
export function fsAllowed(access: FsAccess, path: unknown, prefixes: readonly string[], root: string, who: FsWho = {}): string {
  const rel = lexicalPath(access, path, who);
  if (prefixes.some((p) => underPrefix(rel, p))) return rel ? join(resolve(root), rel) : resolve(root);
  const setting = `${who.setting ?? 'allow.fs'}.${access}`;
  throw new FsPermissionError(
    `${toolName(who)} may not ${access} ${JSON.stringify(path)}: it is not under ${setting} (${prefixes.map((p) => JSON.stringify(p)).join(', ') || 'none'}); ` +
    `add ${JSON.stringify(rel || '.')} (or a directory that holds it) to ${setting}`,
    access, path as string,
  );
}

const toolName = (who: FsWho) => (who.tool ? `tool "${who.tool}"` : 'this tool');

// ---- errors as the guest sees them ---------------------------------------------------------------

/** What the guest's error carries besides name and message (the prelude copies these fields). */
interface FsFields {
  code: string;
  errno?: number;
  syscall?: string;
  path?: string;
  dest?: string;
}

/** A failure shaped like Node's: "ENOENT: no such file or directory, open 'data/x'" with code, errno, syscall
 *  and the path as the guest gave it (never the host's absolute path). */
export class FsError extends KilnError {
  constructor(message: string, name: string, readonly fields: FsFields) {
    super(message);
    this.name = name;
  }
}

/** allow.fs refused the path: a PermissionError, with code EACCES for code that checks it as Node's. */
export class FsPermissionError extends PermissionError {
  readonly fields: FsFields;
  constructor(message: string, readonly access: FsAccess, path: string) {
    super(message);
    this.fields = { code: 'EACCES', ...(typeof path === 'string' ? { path: path.slice(0, MAX_PATH) } : {}) };
  }
}

class UnavailableError extends KilnError {
  override name = 'UnavailableError';
}

function typeError(code: string, message: string): FsError {
  return new FsError(message, 'TypeError', { code });
}

function tooLarge(what: string, size: number | string, setting: string, max: number): FsError {
  return new FsError(`${what} (${size} bytes) is larger than the server's [fs] ${setting} (${max})`, 'RangeError', { code: 'ERR_FS_FILE_TOO_LARGE' });
}

/** An error of the operating system, told with the guest's path (as Node words it). */
function systemError(code: string, errno: number | undefined, syscall: string, path: string | undefined, dest?: string): FsError {
  const description = (errno !== undefined && getSystemErrorMap().get(errno)?.[1]) || code;
  const where = path === undefined ? `, ${syscall}` : `, ${syscall} '${path}'${dest !== undefined ? ` -> '${dest}'` : ''}`;
  return new FsError(`${code}: ${description}${where}`, 'Error', { code, errno, syscall, ...(path !== undefined ? { path } : {}), ...(dest !== undefined ? { dest } : {}) });
}

const symlinkRefused = (access: FsAccess, path: string, who: FsWho) =>
  new FsPermissionError(`${toolName(who)} may not ${access} ${JSON.stringify(path)}: it is a symbolic link, and kiln's fs follows none at the end of a path (it could lead outside allow.fs)`, access, path);

// ---- performing ----------------------------------------------------------------------------------

export type FsOp = 'fs.readFile' | 'fs.writeFile' | 'fs.appendFile' | 'fs.readdir' | 'fs.stat' | 'fs.mkdir' | 'fs.rm' | 'fs.rename';

export interface FsCall {
  tool: string;
  /** The running tool's allow.fs (undefined: it declares none, and every operation is refused). */
  allow: FsAllow | undefined;
  settings: FsSettings;
  /** The (session, extension) whose turns the operation waits for (MAX_FS_IN_FLIGHT). */
  slot: object;
  signal: AbortSignal;
  /** What the call and the session have written ([fs] maxWriteBytesPerCall, maxWriteBytesPerSession). */
  written?: { call: WriteCount; session: WriteCount };
  /** rm -r: the entries below the directory that [approvals] judged (fs-policy.ts); only those are removed. */
  inside?: string[];
}

/** Per (session, extension): operations running, and those waiting for a turn. */
const turns = new WeakMap<object, { running: number; waiting: (() => void)[] }>();

/** Wait for a turn of `slot` (at most MAX_FS_IN_FLIGHT run at once); resolves to its release. */
async function turn(slot: object, signal: AbortSignal): Promise<() => void> {
  let t = turns.get(slot);
  if (!t) turns.set(slot, (t = { running: 0, waiting: [] }));
  const q = t;
  if (q.running < MAX_FS_IN_FLIGHT) q.running++;
  else {
    await new Promise<void>((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', stop);
        resolve();
      };
      const stop = () => {
        q.waiting.splice(q.waiting.indexOf(go), 1);
        reject(new KilnError('the fs operation was cancelled while it waited: its call had ended'));
      };
      if (signal.aborted) return stop();
      q.waiting.push(go);
      signal.addEventListener('abort', stop, { once: true });
    });
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const next = q.waiting.shift();
    if (next) next(); // the turn passes on: `running` stays
    else q.running--;
  };
}
const FD = (fd: number) => `/proc/self/fd/${fd}`;
/** A path that ends in "/" names a directory (as the kernel reads it); the lexical check drops the slash. */
const dirOnly = (path: unknown) => typeof path === 'string' && /\/\.?$/.test(path);
const inside = (real: string, area: string) => real === area || real.startsWith(area === '/' ? '/' : area + '/');

/** One place a path may be reached from: a granted prefix's real area and the rest of the path under it. */
interface Place {
  prefix: string;
  area: string;
  rest: string;
}

/** The entry an operation acts on: its verified parent directory (held open) and its name in it. */
interface Entry {
  dir: FileHandle;
  name: string;
  /** /proc/self/fd/<dir>/<name>: the kernel resolves it from the verified directory. */
  at: string;
  place: Place;
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

let procChecked: Promise<void> | undefined;
/** /proc/self/fd is what makes the check race-free: without it, refuse everything. */
function needProc(): Promise<void> {
  return (procChecked ??= readlink('/proc/self/fd/0').then(() => {}, (e) => {
    if (e?.code === 'ENOENT' || e?.code === 'ENOTDIR') throw new UnavailableError("fs needs Linux's /proc/self/fd, which this server does not have");
  }));
}

export class FsCaller {
  private readonly root: string;
  private readonly who: FsWho;
  constructor(private readonly c: FsCall) {
    this.root = resolve(c.settings.root ?? process.cwd());
    this.who = { tool: c.tool };
  }

  /** The places `path` may be reached from, most specific prefix first (the lexical check). */
  private async places(access: FsAccess, path: unknown): Promise<{ rel: string; places: Place[] }> {
    const prefixes = (access === 'read' ? this.c.allow?.read : this.c.allow?.write) ?? [];
    if (!this.c.allow) {
      lexicalPath(access, path, this.who);
      throw new FsPermissionError(
        `tool "${this.c.tool}" may not ${access} ${JSON.stringify(path)}: it declares no allow.fs; add allow: { fs: { ${access}: [${JSON.stringify(lexicalPath(access, path, this.who) || '.')}] } } to its manifest`,
        access, path as string,
      );
    }
    fsAllowed(access, path, prefixes, this.root, this.who);
    const rel = lexicalPath(access, path, this.who);
    const matching = prefixes.filter((p) => underPrefix(rel, p)).sort((a, b) => b.length - a.length);
    const places: Place[] = [];
    for (const prefix of matching) {
      const area = await realArea(this.root, prefix);
      places.push({ prefix, area, rest: prefix === '.' ? rel : rel === prefix ? '' : rel.slice(prefix.length + 1) });
    }
    return { rel, places };
  }

  /** Open the entry's parent directory and check what the kernel resolved (step 3 of the invariant), trying each
   *  place `path` may be reached from. */
  private async entry(access: FsAccess, path: string): Promise<Entry> {
    const { places } = await this.places(access, path);
    return this.firstPlace(places, (place) => this.openPlace(access, path, place));
  }

  /** `fn` for the first place where it is not refused; else the first refusal. */
  private async firstPlace<T>(places: Place[], fn: (place: Place) => Promise<T>): Promise<T> {
    let refused: Error | undefined;
    for (const place of places) {
      try {
        return await fn(place);
      } catch (e) {
        if (!(e instanceof FsPermissionError)) throw e;
        refused ??= e;
      }
    }
    throw refused!;
  }

  private async openPlace(access: FsAccess, path: string, place: Place): Promise<Entry> {
    const parent = place.rest ? join(place.area, dirname(place.rest)) : dirname(place.area);
    const name = place.rest ? basename(place.rest) : basename(place.area);
    if (!name) throw new FsPermissionError(`${toolName(this.who)} may not ${access} ${JSON.stringify(path)}: it is the filesystem's root`, access, path);
    const dir = await open(parent, O_PATH | O_DIRECTORY);
    let real: string;
    try {
      real = await readlink(FD(dir.fd));
    } catch (e) {
      await dir.close();
      throw e;
    }
    if (place.rest ? inside(real, place.area) : real === dirname(place.area)) return { dir, name, at: `${FD(dir.fd)}/${name}`, place };
    await dir.close();
    throw this.outside(access, path, place);
  }

  private outside(access: FsAccess, path: string, place: Place): FsPermissionError {
    return new FsPermissionError(
      `${toolName(this.who)} may not ${access} ${JSON.stringify(path)}: a symbolic link on its way leads outside ${place.prefix === '.' ? 'the workspace' : JSON.stringify(place.prefix)}, which allow.fs.${access} grants`,
      access, path,
    );
  }

  /** Run `op` in a turn of the (session, extension), its OS errors told as Node's. */
  private async run<T>(syscall: string, access: FsAccess, path: unknown, op: () => Promise<T>, dest?: unknown): Promise<T> {
    await needProc();
    const release = await turn(this.c.slot, this.c.signal);
    try {
      return await op();
    } catch (e: any) {
      if (e instanceof KilnError) throw e;
      if (e?.code === 'ELOOP') throw symlinkRefused(access, String(path), this.who);
      if (typeof e?.code === 'string' && /^E[A-Z0-9]+$/.test(e.code)) throw systemError(e.code, e.errno, syscall, String(path), dest === undefined ? undefined : String(dest));
      throw e;
    } finally {
      release();
    }
  }

  /** The entry's fstat through an O_PATH descriptor: nothing is opened for reading or writing, no link followed. */
  private async inspect(access: FsAccess, path: string, at: string): Promise<{ handle: FileHandle; st: Stats }> {
    const handle = await open(at, O_PATH | O_NOFOLLOW);
    try {
      const st = await handle.stat();
      if (st.isSymbolicLink()) throw symlinkRefused(access, path, this.who);
      return { handle, st };
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  /** A regular file with no other name, or a refusal (directories: EISDIR, as Node's `syscall`; readFile's names
   *  no path, as Node's does not). */
  private regular(access: FsAccess, path: string, st: Stats, syscall: string): void {
    if (st.isDirectory()) throw systemError('EISDIR', -21, syscall, syscall === 'read' ? undefined : path);
    if (!st.isFile()) throw new FsPermissionError(`${toolName(this.who)} may not ${access} ${JSON.stringify(path)}: it is not a regular file (a FIFO, socket or device)`, access, path);
    if (st.nlink > 1) {
      throw new FsPermissionError(`${toolName(this.who)} may not ${access} ${JSON.stringify(path)}: it has ${st.nlink} hard links, and another name of it may lie outside allow.fs`, access, path);
    }
  }

  async readFile(path: unknown): Promise<Uint8Array> {
    return this.run('open', 'read', path, async () => {
      const e = await this.entry('read', path as string);
      try {
        const { handle, st } = await this.inspect('read', path as string, e.at);
        try {
          if (dirOnly(path) && !st.isDirectory()) throw systemError('ENOTDIR', -20, 'open', path as string);
          this.regular('read', path as string, st, 'read');
          const max = this.c.settings.maxReadBytes;
          if (st.size > max) throw tooLarge(`${JSON.stringify(path)}`, st.size, 'maxReadBytes', max);
          const file = await open(FD(handle.fd), O_RDONLY);
          try {
            const chunks: Buffer[] = [];
            let total = 0;
            for (let size = Math.min(st.size, max) + 1; ; size = 64 * 1024) {
              const buf = Buffer.allocUnsafe(size);
              const { bytesRead } = await file.read(buf, 0, size, null);
              if (bytesRead === 0) break;
              total += bytesRead;
              if (total > max) throw tooLarge(`${JSON.stringify(path)}`, `more than ${max}`, 'maxReadBytes', max);
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
  async writeFile(path: unknown, data: Uint8Array, append: boolean): Promise<null> {
    const max = this.c.settings.maxWriteBytes;
    return this.run('open', 'write', path, async () => {
      const e = await this.entry('write', path as string);
      try {
        if (dirOnly(path)) throw systemError('EISDIR', -21, 'open', path as string); // "x/" names a directory, as in Node
        if (data.length > max) throw tooLarge('the data to write', data.length, 'maxWriteBytes', max);
        const refund = this.spend(data.length);
        let writing = false;
        try {
          const flags = O_WRONLY | (append ? O_APPEND : 0);
          let file: FileHandle | undefined;
          for (let attempt = 0; !file; attempt++) {
            if (attempt === 3) throw systemError('EEXIST', -17, 'open', path as string); // it keeps appearing and vanishing
            let existing: { handle: FileHandle; st: Stats } | undefined;
            try {
              existing = await this.inspect('write', path as string, e.at);
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
              this.regular('write', path as string, existing.st, 'open');
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
  private spend(n: number): () => void {
    const w = this.c.written;
    if (!w || n === 0) return () => {};
    const { maxWriteBytesPerCall: perCall, maxWriteBytesPerSession: perSession } = this.c.settings;
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

  async readdir(path: unknown, withFileTypes: boolean): Promise<string[] | [string, string][]> {
    return this.run('scandir', 'read', path, async () => {
      const e = await this.entry('read', path as string);
      try {
        const { handle, st } = await this.inspect('read', path as string, e.at);
        try {
          if (!st.isDirectory()) throw systemError('ENOTDIR', -20, 'scandir', path as string);
          const max = this.c.settings.maxReaddirEntries;
          const entries: [string, string][] = [];
          for await (const d of await opendir(FD(handle.fd), { bufferSize: 128 })) {
            if (entries.length >= max) throw new FsError(`${JSON.stringify(path)} has more than ${max} entries, the server's [fs] maxReaddirEntries`, 'RangeError', { code: 'ERR_FS_TOO_MANY_ENTRIES' });
            let type = d.isFile() ? 'file' : d.isDirectory() ? 'directory' : d.isSymbolicLink() ? 'symlink' : d.isFIFO() ? 'fifo' : d.isSocket() ? 'socket' : d.isBlockDevice() ? 'block' : d.isCharacterDevice() ? 'char' : '';
            if (!type && withFileTypes) type = typeOf(await lstat(`${FD(handle.fd)}/${d.name}`).catch(() => undefined));
            entries.push([d.name, type]);
            if (this.c.signal.aborted) break;
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

  async stat(path: unknown): Promise<Record<string, unknown>> {
    return this.run('stat', 'read', path, async () => {
      const e = await this.entry('read', path as string);
      try {
        const { handle, st } = await this.inspect('read', path as string, e.at);
        await handle.close();
        if (dirOnly(path) && !st.isDirectory()) throw systemError('ENOTDIR', -20, 'stat', path as string);
        return {
          type: typeOf(st), size: st.size, mode: st.mode, nlink: st.nlink,
          atimeMs: st.atimeMs, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, birthtimeMs: st.birthtimeMs,
        };
      } finally {
        await e.dir.close();
      }
    });
  }

  /** mkdir; recursive: each missing directory made from its verified parent. Resolves to the first directory
   *  made (relative to the root) when recursive, else null. */
  async mkdir(path: unknown, recursive: boolean): Promise<string | null> {
    return this.run('mkdir', 'write', path, async () => {
      if (!recursive) {
        const e = await this.entry('write', path as string);
        try {
          await mkdir(e.at, 0o777);
          return null;
        } finally {
          await e.dir.close();
        }
      }
      const { places } = await this.places('write', path);
      return this.firstPlace(places, (place) => this.mkdirUnder(path as string, place));
    });
  }

  /** mkdir -p of `place`: its area first (a prefix not made yet is made from its verified parent), then each
   *  component of the rest from the directory before it, each checked to be inside the area once opened. */
  private async mkdirUnder(path: string, place: Place): Promise<string | null> {
    let created: string | null = null;
    let cur = await open(place.area, O_PATH | O_DIRECTORY).catch(async (err) => {
      if (err?.code !== 'ENOENT') throw err;
      const top = await this.openPlace('write', path, { ...place, rest: '' });
      try {
        await mkdir(top.at, 0o777).then(() => {
          created = place.prefix;
        }, (err2) => {
          if (err2?.code !== 'EEXIST') throw err2;
        });
        return await open(top.at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
      } finally {
        await top.dir.close();
      }
    });
    try {
      if ((await readlink(FD(cur.fd))) !== place.area) throw this.outside('write', path, place);
      const parts = place.rest ? place.rest.split('/') : [];
      for (const [i, part] of parts.entries()) {
        const at = `${FD(cur.fd)}/${part}`;
        await mkdir(at, 0o777).then(() => {
          created ??= [place.prefix === '.' ? '' : place.prefix, ...parts.slice(0, i + 1)].filter(Boolean).join('/');
        }, (err) => {
          if (err?.code !== 'EEXIST') throw err;
        });
        const next = await open(at, O_PATH | O_DIRECTORY);
        const real = await readlink(FD(next.fd)).catch(async (err) => {
          await next.close();
          throw err;
        });
        if (!inside(real, place.area)) {
          await next.close();
          throw this.outside('write', path, place);
        }
        await cur.close();
        cur = next;
      }
    } finally {
      await cur.close();
    }
    return created;
  }

  /** rm; recursive: the tree is emptied through descriptors, symlinks in it unlinked, never followed. */
  async rm(path: unknown, recursive: boolean, force: boolean): Promise<null> {
    return this.run('rm', 'write', path, async () => {
      const e = await this.entry('write', path as string);
      try {
        let st: Stats;
        try {
          const found = await this.inspectLink(e.at);
          st = found;
        } catch (err: any) {
          if (err?.code === 'ENOENT' && force) return null;
          if (err?.code === 'ENOENT') throw systemError('ENOENT', -2, 'lstat', path as string);
          throw err;
        }
        if (!st.isDirectory()) {
          if (dirOnly(path)) throw systemError('ENOTDIR', -20, 'lstat', path as string);
          await unlink(e.at);
          return null;
        }
        if (!recursive) {
          throw new FsError(`Path is a directory: rm returned EISDIR (is a directory) ${path}`, 'SystemError', { code: 'ERR_FS_EISDIR', errno: 21, syscall: 'rm', path: path as string });
        }
        const judged = this.c.inside && { set: new Set(this.c.inside), rel: lexicalPath('write', path, this.who) };
        await removeEntry(FD(e.dir.fd), e.name, 0, this.c.signal, judged);
        return null;
      } finally {
        await e.dir.close();
      }
    });
  }

  /** Every entry below `path` when it is a directory (none for anything else or nothing), relative to the root,
   *  walked through descriptors as rm -r walks it (a symlink is an entry, never entered): what [approvals]
   *  judges for rm -r and rename. */
  async listBelow(path: unknown): Promise<string[]> {
    return this.run('scandir', 'write', path, async () => {
      const rel = lexicalPath('write', path, this.who);
      const e = await this.entry('write', path as string).catch((err) => {
        if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') return undefined; // nothing there: the operation says so
        throw err;
      });
      if (!e) return [];
      try {
        const out: string[] = [];
        await listEntries(FD(e.dir.fd), e.name, rel, 0, out, String(path), this.c.signal);
        return out;
      } finally {
        await e.dir.close();
      }
    });
  }

  /** fstat of the entry itself (a symlink as a symlink). */
  private async inspectLink(at: string): Promise<Stats> {
    const h = await open(at, O_PATH | O_NOFOLLOW);
    try {
      return await h.stat();
    } finally {
      await h.close();
    }
  }

  async rename(from: unknown, to: unknown): Promise<null> {
    return this.run('rename', 'write', from, async () => {
      const a = await this.entry('write', from as string);
      try {
        const b = await this.entry('write', to as string);
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
}

function typeOf(st: Stats | undefined): string {
  if (!st) return '';
  return st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : st.isSocket() ? 'socket' : st.isBlockDevice() ? 'block' : st.isCharacterDevice() ? 'char' : '';
}

/** Remove `name` in the directory `parent` (a /proc/self/fd path): a directory (opened O_NOFOLLOW, so a symlink
 *  is never entered) is emptied through its descriptor and removed; anything else is unlinked. */
async function removeEntry(parent: string, name: string, depth: number, signal: AbortSignal, judged?: { set: Set<string>; rel: string }): Promise<void> {
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
async function listEntries(parent: string, name: string, rel: string, depth: number, out: string[], shownPath: string, signal: AbortSignal): Promise<void> {
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

/** Every entry below `path` (fs-policy.ts: what approvals judge for rm -r and rename), through `call`'s checks. */
export function listBelow(path: unknown, call: FsCall): Promise<string[]> {
  return new FsCaller(call).listBelow(path);
}

/** Perform fs op `kind` for the running tool (capabilities/index.ts). `data`: the bytes of writeFile/appendFile. */
export function performFs(kind: FsOp, req: Record<string, unknown>, data: Uint8Array | undefined, call: FsCall): Promise<unknown> {
  const fs = new FsCaller(call);
  switch (kind) {
    case 'fs.readFile': return fs.readFile(req.path);
    case 'fs.writeFile': return fs.writeFile(req.path, data ?? new Uint8Array(), false);
    case 'fs.appendFile': return fs.writeFile(req.path, data ?? new Uint8Array(), true);
    case 'fs.readdir': return fs.readdir(req.path, req.withFileTypes === true);
    case 'fs.stat': return fs.stat(req.path);
    case 'fs.mkdir': return fs.mkdir(req.path, req.recursive === true);
    case 'fs.rm': return fs.rm(req.path, req.recursive === true, req.force === true);
    case 'fs.rename': return fs.rename(req.from, req.to);
  }
}

// ---- [fs] in kiln.toml -----------------------------------------------------------------------------

/** [fs]: root (relative to the config file) and the FS_BOUNDS settings. `fail` makes the
 *  config's error type (config/config.ts), so this module never loads the TOML parser. */
export function readFsSettings(file: string, v: unknown, fail: (message: string) => Error): FsSettings {
  if (v === undefined) return DEFAULT_FS;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fail(`${file}: [fs] must be a table`);
  const t = v as Record<string, unknown>;
  const out: FsSettings = { ...DEFAULT_FS };
  for (const [k, x] of Object.entries(t)) {
    if (k === 'root') {
      if (typeof x !== 'string' || !x || x.includes('\0')) throw fail(`${file}: [fs] root must be a directory path`);
      out.root = resolve(dirname(file), x);
    } else if (Object.hasOwn(FS_BOUNDS, k)) {
      const bound = FS_BOUNDS[k as keyof typeof FS_BOUNDS];
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 1 || x > bound) throw fail(`${file}: [fs] ${k} must be a positive integer up to ${bound === 1024 ** 4 ? '1 TiB' : '1 GiB'}`);
      out[k as keyof typeof FS_BOUNDS] = x;
    } else {
      throw fail(`${file}: [fs] has an unknown key "${k}" (root, ${Object.keys(FS_BOUNDS).join(', ')})`);
    }
  }
  return out;
}
