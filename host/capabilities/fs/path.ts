// A guest's path as text: parsed once, resolved against ".." lexically, and matched against a list of prefixes.
// capabilities/fs/policy.ts is its one caller on the way to an operation (tests call it directly).
//
// Invariants: the result is relative to the workspace root ('' for the root itself), holds no "." or ".." and
// no empty part, and never climbs above the root; an absolute path, or one whose ".." would leave the root, is a
// refusal (FsPermissionError) naming the tool and the path as the guest gave it; a non-string, a NUL or a path
// longer than MAX_PATH is a TypeError-like FsError, as Node's would be. Nothing is touched: pure, no I/O.
import { join, resolve } from 'node:path';
import { FsPermissionError, MAX_PATH, toolName, typeError, type FsWho } from './errors.js';
import { underPrefix, type FsAccess } from './prefix.js';

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

/** Whether a guest's path names a directory by its spelling (it ends in "/" or "/."), as the kernel reads it;
 *  lexicalPath drops that slash. */
export const namesDirectory = (path: string) => /\/\.?$/.test(path);

/** The refusal of `path` (lexicalPath's result `rel`) under `prefixes`: what was refused and the exact setting
 *  to add. */
export function notUnder(access: FsAccess, path: string, rel: string, prefixes: readonly string[], who: FsWho = {}): FsPermissionError {
  const setting = `${who.setting ?? 'allow.fs'}.${access}`;
  return new FsPermissionError(
    `${toolName(who)} may not ${access} ${JSON.stringify(path)}: it is not under ${setting} (${prefixes.map((p) => JSON.stringify(p)).join(', ') || 'none'}); ` +
    `add ${JSON.stringify(rel || '.')} (or a directory that holds it) to ${setting}`,
    access, path,
  );
}

/**
 * The lexical check: `path` (as the guest gave it) normalised under `root`, if it lies under one of `prefixes`
 * (normalised, as in a manifest); else a PermissionError naming what was refused and the exact setting to add.
 */
export function fsAllowed(access: FsAccess, path: unknown, prefixes: readonly string[], root: string, who: FsWho = {}): string {
  const rel = lexicalPath(access, path, who);
  if (prefixes.some((p) => underPrefix(rel, p))) return rel ? join(resolve(root), rel) : resolve(root);
  throw notUnder(access, path as string, rel, prefixes, who);
}
