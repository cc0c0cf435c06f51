// allow.fs's failures as the guest sees them: shaped like Node's (name, message, code, errno, syscall, the path),
// so code written against node:fs reads them as it would there.
//
// Invariants: a message names the path as the guest gave it, never the host's absolute path or its workspace
// root; a refusal (FsPermissionError) is a PermissionError naming the tool, the path and why, with code EACCES;
// an error of the operating system keeps its code and errno and is worded as Node words it. Pure: no I/O.
import { getSystemErrorMap } from 'node:util';
import { KilnError, PermissionError } from '../../errors.js';
import type { FsAccess } from './prefix.js';

/** The longest path a guest may give (a longer one is a TypeError, as in Node). */
export const MAX_PATH = 4096;

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

/** Who asks, for the refusal's wording: the tool, and the setting that lists the prefixes. */
export interface FsWho {
  tool?: string;
  /** "allow.fs" (the default) or, for the operator's grants, e.g. '[grants."notes.ts"] fs'. */
  setting?: string;
}

export const toolName = (who: FsWho) => (who.tool ? `tool "${who.tool}"` : 'this tool');

export function typeError(code: string, message: string): FsError {
  return new FsError(message, 'TypeError', { code });
}

export function tooLarge(what: string, size: number | string, setting: string, max: number): FsError {
  return new FsError(`${what} (${size} bytes) is larger than the server's [fs] ${setting} (${max})`, 'RangeError', { code: 'ERR_FS_FILE_TOO_LARGE' });
}

/** An error of the operating system, told with the guest's path (as Node words it). */
export function systemError(code: string, errno: number | undefined, syscall: string, path: string | undefined, dest?: string): FsError {
  const description = (errno !== undefined && getSystemErrorMap().get(errno)?.[1]) || code;
  const where = path === undefined ? `, ${syscall}` : `, ${syscall} '${path}'${dest !== undefined ? ` -> '${dest}'` : ''}`;
  return new FsError(`${code}: ${description}${where}`, 'Error', { code, errno, syscall, ...(path !== undefined ? { path } : {}), ...(dest !== undefined ? { dest } : {}) });
}

export const symlinkRefused = (access: FsAccess, path: string, who: FsWho) =>
  new FsPermissionError(`${toolName(who)} may not ${access} ${JSON.stringify(path)}: it is a symbolic link, and kiln's fs follows none at the end of a path (it could lead outside allow.fs)`, access, path);
