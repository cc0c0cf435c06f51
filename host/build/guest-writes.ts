// A grant is given to the code the operator reviewed: the files an extension's build read. While it is served,
// no tool may write those files (capabilities/fs-policy.ts); and a build must not read a file a guest wrote, or
// it would run that guest's code under this extension's grant (a planted file that the resolver now prefers:
// `lib/helper.ts` before `lib/helper/index.ts`, a package in a nearer node_modules, a file a new import names).
//
// This is the record of what guests wrote through allow.fs (real paths: files written or appended, directories
// made, rename targets), and the pure question a build asks of it. It is kept in a journal in the build cache
// directory (GUEST_WRITES, which no tool may touch), so that a restart does not forget it: each server appends a
// line the first time a path is written, and at start drops the entries whose path no longer exists. The
// operator approves a file a guest wrote by removing its line (or the journal). The record is bounded: past
// MAX_TRACKED paths it stops telling them apart, and every build is refused until the operator clears the
// journal (never a guess that lets one through). A journal that cannot be written leaves the record in memory
// for the server's life, and stderr says so once.
import { appendFileSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BUILD_CACHE } from './cache.js';

/** Who wrote a path: the extension file, and its tool that did. */
export interface Writer {
  extension: string;
  tool: string;
}

/** Paths recorded before the record stops telling them apart. */
export const MAX_TRACKED = 100_000;

/** Where the servers of this kiln keep the record. */
export const GUEST_WRITES = join(BUILD_CACHE, 'guest-writes.jsonl');

const exists = (p: string) => {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true; // unreadable: kept
  }
};

export class GuestWrites {
  private readonly paths = new Map<string, Writer>();
  private overflow?: Writer;
  private failed = false;

  /** `journal`: the file the record is kept in (none: memory only). */
  constructor(private readonly journal?: string, private readonly warn: (line: string) => void = (l) => process.stderr.write(l + '\n')) {
    if (journal) this.restore(journal);
  }

  /** `path` (a real path) is about to be written, made or moved onto by `by`. */
  record(path: string, by: Writer): void {
    if (this.overflow) return;
    const known = this.paths.get(path);
    if (known && known.extension === by.extension && known.tool === by.tool) return;
    this.add(path, by);
    this.save(`${JSON.stringify({ path, ...by })}\n`, true);
  }

  /** The first of `inputs` (real paths) that a guest wrote, or that lies in a directory a guest made or moved,
   *  with who did; undefined when a build of them runs only what the operator put on disk. */
  writtenAmong(inputs: readonly string[]): { input: string; by: Writer; overflow?: true } | undefined {
    if (this.overflow && inputs.length) return { input: inputs[0], by: this.overflow, overflow: true };
    if (this.paths.size === 0) return undefined;
    for (const input of inputs) {
      for (let p = input; ; p = dirname(p)) {
        const by = this.paths.get(p);
        if (by) return { input, by };
        if (dirname(p) === p) break;
      }
    }
    return undefined;
  }

  /** Where the record is kept, for messages. */
  get where(): string | undefined {
    return this.journal;
  }

  private add(path: string, by: Writer): void {
    if (!this.paths.has(path) && this.paths.size >= MAX_TRACKED) {
      this.overflow = by;
      this.paths.clear();
      return;
    }
    this.paths.set(path, by);
  }

  /** The journal's entries whose path still exists; the journal rewritten without the others. */
  private restore(journal: string): void {
    let text: string;
    try {
      text = readFileSync(journal, 'utf8');
    } catch {
      return; // none yet
    }
    let dropped = false;
    for (const line of text.split('\n')) {
      if (!line) continue;
      let e: any;
      try {
        e = JSON.parse(line);
      } catch {
        dropped = true; // a torn line
        continue;
      }
      if (typeof e?.path !== 'string' || typeof e.extension !== 'string' || typeof e.tool !== 'string' || !exists(e.path)) {
        dropped = true;
        continue;
      }
      if (!this.overflow) this.add(e.path, { extension: e.extension, tool: e.tool });
    }
    if (!dropped || this.overflow) return;
    this.save([...this.paths].map(([path, by]) => `${JSON.stringify({ path, ...by })}\n`).join(''), false);
  }

  private save(text: string, append: boolean): void {
    if (!this.journal) return;
    try {
      mkdirSync(dirname(this.journal), { recursive: true });
      if (append) appendFileSync(this.journal, text, { mode: 0o600 });
      else {
        const tmp = `${this.journal}.${process.pid}.tmp`;
        writeFileSync(tmp, text, { mode: 0o600 });
        renameSync(tmp, this.journal);
      }
    } catch (e) {
      if (!this.failed) this.warn(`kiln: the record of files guests wrote (${this.journal}) cannot be written: ${(e as Error).message}; this server keeps it in memory, and a restart forgets it`);
      this.failed = true;
    }
  }
}
