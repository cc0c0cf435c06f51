// [fs] in kiln.toml: the workspace root and the size caps of allow.fs, with their defaults and bounds. Read by
// config/config.ts (readFsSettings), held in the operator's policy (policy/policy.ts), applied by the performer
// (capabilities/fs/operations.ts).
//
// Invariants: every setting has a default (DEFAULT_FS) and a largest value (FS_BOUNDS); a value outside its
// bounds or an unknown key is refused naming the key; `root` is resolved against the config file's directory.
// Pure: no I/O (the TOML is parsed by the caller, whose error type `fail` makes).
import { dirname, resolve } from 'node:path';

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
export const FS_BOUNDS = {
  maxReadBytes: 1024 ** 3, maxWriteBytes: 1024 ** 3, maxWriteBytesPerCall: 1024 ** 3, maxWriteBytesPerSession: 1024 ** 4, maxReaddirEntries: 1024 ** 3,
} as const;

/** Bytes written so far, by a call (with its plugins[...] callees) or by a session. */
export interface WriteCount {
  bytes: number;
}

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
