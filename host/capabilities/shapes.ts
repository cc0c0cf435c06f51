// What capability operations complete with, as the guest receives it (JSON through guest.complete): each shape
// defined once, here. The guest's API makes its own objects of them, and those are described to extension
// authors in types/kiln.d.ts and types/web.d.ts; the WIT documents the same fields. test/unit/shapes.test.mjs
// checks each shape here field by field against both, so a field added on one side only fails the test.
//
// Invariants: pure types, imports nothing.

/** commands.status: a persistent process (`KilnProcessStatus` in types/kiln.d.ts). */
export interface ProcessStatus {
  running: boolean;
  pid: number;
  exitCode: number | null;
  uptimeMs: number;
  stdout: string;
  stderr: string;
}

/** An entry's type as fs.stat and readdir({ withFileTypes }) give it ('' for none of these); the guest's
 *  `isFile()`, `isDirectory()`, ... (types/kiln.d.ts `KilnEntryType`) answer from it. */
export type FsEntryType = 'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'block' | 'char' | '';

/** fs.stat: no device, inode or owner (they describe the host). The guest's `KilnStats` (types/kiln.d.ts) has
 *  these numbers, a Date for each `*Ms`, and the type tests. */
export interface FsStat {
  type: FsEntryType;
  size: number;
  mode: number;
  nlink: number;
  atimeMs: number;
  mtimeMs: number;
  ctimeMs: number;
  birthtimeMs: number;
}

/** http.fetch: a response's head; `body` is the handle http.read reads it through. The guest's `Response`
 *  (types/web.d.ts) has these fields (headers and body as objects), plus `ok`, `type` and `bodyUsed`. */
export interface FetchHead {
  status: number;
  statusText: string;
  url: string;
  redirected: boolean;
  headers: [string, string][];
  body: number;
}
