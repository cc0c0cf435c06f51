// allow.fs's prefixes as text: the one spelling of a declared or granted prefix, and how two lists of them meet.
// What the manifest (extensions/manifest.ts), the operator's grants (policy/grants.ts) and the config
// (config/config.ts) import of allow.fs; the rest of capabilities/fs/ builds on it.
//
// Invariants: a prefix is relative to the operator's workspace root ([fs] root), "/"-separated, without "." or
// empty parts, never "..", never absolute; "." is the whole workspace. "Under" is component by component ("data2"
// and "data-evil" are not under "data"). Pure: no I/O.

/** Which list of allow.fs an operation needs: read (readFile, readdir, stat) or write (the rest). */
export type FsAccess = 'read' | 'write';

/** allow.fs as the manifest holds it: normalised prefixes (normalisePrefix). */
export interface FsAllow {
  read: string[];
  write: string[];
}

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
