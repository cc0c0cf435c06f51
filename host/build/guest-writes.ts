// A grant is given to the code the operator reviewed: the files an extension's build read. While it is served,
// no tool may write those files (capabilities/fs/policy.ts); and a build must not read a file a guest wrote, or
// it would run that guest's code under this extension's grant (a planted file that the resolver now prefers:
// `lib/helper.ts` before `lib/helper/index.ts`, a package in a nearer node_modules, a file a new import names).
//
// This is the record of what guests wrote through allow.fs (real paths: files written or appended, directories
// made, rename targets), and the pure question every build asks of it (`judge`: kiln mcp's loads and reloads,
// and `kiln build`). It is kept in a journal in the build cache directory (GUEST_WRITES, which no tool may
// touch), shared by every kiln using that cache: each server appends a line before a path is first written, and
// the journal on disk is the truth — every question re-reads what changed in it since it was last read (another
// server's lines, the operator's removal of a line or of the whole journal), so no build trusts a stale copy. A
// server drops, when it starts, the entries whose path no longer exists. The operator approves a file a guest
// wrote by removing its line (or the journal).
//
// The record is bounded, and the guest pays for the bound: once it holds MAX_TRACKED paths, a write that would
// need a new entry is refused (a PermissionError naming the bound and the way out), so a path missing from it is
// one no guest wrote; builds are never refused because of the bound. A journal that cannot be written leaves
// the record in memory for the server's life, and stderr says so once.
import { appendFileSync, closeSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PermissionError } from '../errors.js';
import { BUILD_CACHE } from './cache.js';
import { real } from './containment.js';
import { writeStderr } from '../untrusted/terminal.js';

/** Who wrote a path: the extension file, and its tool that did. */
export interface Writer {
  extension: string;
  tool: string;
}

/** Paths the record holds before it refuses guest writes that would need a new one. */
export const MAX_TRACKED = 100_000;

/** Where the kilns using this build cache keep the record. */
export const GUEST_WRITES = join(BUILD_CACHE, 'guest-writes.jsonl');

/** A build's verdict: its inputs as real paths, or the input a guest wrote, who did, and why it is refused. */
export type BuildVerdict = { paths: string[] } | { input: string; by: Writer; reason: string };

const exists = (p: string) => {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true; // unreadable: kept
  }
};

/** The journal's valid entries in `text` up to its last newline (a line still being appended waits), the bytes
 *  that covers, and whether a line was not a valid entry. */
function parse(text: string): { entries: [string, Writer][]; used: number; bad: boolean } {
  const end = text.lastIndexOf('\n') + 1;
  const entries: [string, Writer][] = [];
  let bad = false;
  for (const line of text.slice(0, end).split('\n')) {
    if (!line) continue;
    let e: any;
    try {
      e = JSON.parse(line);
    } catch {
      bad = true; // a torn line
      continue;
    }
    if (typeof e?.path !== 'string' || typeof e.extension !== 'string' || typeof e.tool !== 'string') bad = true;
    else entries.push([e.path, { extension: e.extension, tool: e.tool }]);
  }
  return { entries, used: Buffer.byteLength(text.slice(0, end)), bad };
}

/** `fd`'s bytes from `from` to its end. */
function readFrom(fd: number, from: number): string {
  const size = fstatSync(fd).size;
  if (size <= from) return '';
  const buf = Buffer.alloc(size - from);
  let n = 0;
  while (n < buf.length) {
    const got = readSync(fd, buf, n, buf.length - n, from + n);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n).toString('utf8');
}

export class GuestWrites {
  /** The journal's entries as last read, and those this server could not save. */
  private paths = new Map<string, Writer>();
  private readonly unsaved = new Map<string, Writer>();
  /** The journal file as last read: its identity, modification time and the bytes read. */
  private seen?: { dev: number; ino: number; mtimeMs: number; used: number };
  private failed = false;

  /** `journal`: the file the record is kept in (none: memory only). `compact`: drop the entries whose path no
   *  longer exists (a server at start; `kiln build` only reads). */
  constructor(private readonly journal?: string, private readonly warn: (line: string) => void = writeStderr, compact = false) {
    if (journal && compact) this.compact(journal);
    this.refresh();
  }

  /** `path` (a real path) is about to be written, made or moved onto by `by`; throws a PermissionError, and
   *  records nothing, when that needs a new entry and the record holds MAX_TRACKED. */
  record(path: string, by: Writer): void {
    this.refresh();
    const known = this.paths.get(path);
    if (known && known.extension === by.extension && known.tool === by.tool) return;
    if (!known && this.paths.size >= MAX_TRACKED) {
      const journal = this.journal ?? 'the record';
      throw new PermissionError(`fs: ${path} is not written: the record of files guests wrote (${journal}) holds its bound of ${MAX_TRACKED} paths, ` +
        'so kiln makes no new file for a guest until the operator clears it: remove the files guests wrote that are not wanted and restart kiln ' +
        `(a server drops the lines of files that no longer exist), or review them and remove their lines from ${journal}`);
    }
    this.paths.set(path, by);
    if (!this.save(`${JSON.stringify({ path, ...by })}\n`)) this.unsaved.set(path, by);
  }

  /** The verdict on a build of `file` that read `inputs`: refused when one of them (as a real path) is a file a
   *  guest wrote, or lies in a directory a guest made or moved. Asks the journal as it is now. */
  judge(file: string, inputs: readonly string[]): BuildVerdict {
    const paths = [...new Set([file, ...inputs].map(real))];
    this.refresh();
    if (this.paths.size === 0) return { paths };
    for (const input of paths) {
      for (let p = input; ; p = dirname(p)) {
        const by = this.paths.get(p);
        if (by) {
          const journal = this.journal ?? 'the record';
          return {
            input, by, reason: `its build would read ${input}, which ${by.extension} (tool "${by.tool}") wrote through allow.fs; ` +
              'a grant is given to the code the operator reviewed, so no build runs a file a guest wrote. Remove the file (the reviewed code builds ' +
              `again), or review it and remove its line from ${journal}`,
          };
        }
        if (dirname(p) === p) break;
      }
    }
    return { paths };
  }

  /** The record brought up to the journal on disk: the lines appended since the last read, or all of it when
   *  the file was replaced, rewritten or removed. */
  private refresh(): void {
    if (!this.journal) return;
    let fd: number;
    try {
      fd = openSync(this.journal, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') this.reset(undefined, []); // removed: nothing on disk
      return; // unreadable: the record as last read
    }
    try {
      const st = fstatSync(fd);
      const seen = this.seen;
      const same = seen && seen.dev === st.dev && seen.ino === st.ino;
      if (same && st.size === seen.used && st.mtimeMs === seen.mtimeMs) return;
      if (same && st.size > seen.used) {
        const tail = parse(readFrom(fd, seen.used));
        if (!tail.bad) {
          for (const [p, by] of tail.entries) this.paths.set(p, by);
          this.seen = { dev: st.dev, ino: st.ino, mtimeMs: st.mtimeMs, used: seen.used + tail.used };
          return;
        }
      }
      const all = parse(readFrom(fd, 0));
      this.reset({ dev: st.dev, ino: st.ino, mtimeMs: st.mtimeMs, used: all.used }, all.entries);
    } finally {
      closeSync(fd);
    }
  }

  private reset(seen: GuestWrites['seen'], entries: [string, Writer][]): void {
    this.paths = new Map([...entries, ...this.unsaved]);
    this.seen = seen;
  }

  /** The journal rewritten without the entries whose path no longer exists. Lines another server appends while
   *  this runs are carried over to the new file. */
  private compact(journal: string): void {
    let fd: number;
    try {
      fd = openSync(journal, 'r');
    } catch {
      return; // none yet
    }
    try {
      const all = parse(readFrom(fd, 0));
      const kept = all.entries.filter(([p]) => exists(p));
      if (!all.bad && kept.length === all.entries.length) return;
      const tmp = `${journal}.${process.pid}.tmp`;
      writeFileSync(tmp, kept.map(([path, by]) => `${JSON.stringify({ path, ...by })}\n`).join(''), { mode: 0o600 });
      renameSync(tmp, journal);
      const late = readFrom(fd, all.used);
      if (late) appendFileSync(journal, late, { mode: 0o600 });
    } catch (e) {
      this.warn(`kiln: the record of files guests wrote (${journal}) cannot be rewritten: ${(e as Error).message}; it is kept as it is`);
    } finally {
      closeSync(fd);
    }
  }

  /** Whether `line` reached the journal. */
  private save(line: string): boolean {
    if (!this.journal) return false;
    try {
      mkdirSync(dirname(this.journal), { recursive: true });
      appendFileSync(this.journal, line, { mode: 0o600 });
      return true;
    } catch (e) {
      if (!this.failed) this.warn(`kiln: the record of files guests wrote (${this.journal}) cannot be written: ${(e as Error).message}; this server keeps it in memory, and a restart forgets it`);
      this.failed = true;
      return false;
    }
  }
}
