// allow.fs's one decision: whether a file operation may run, and on what. `decideFs` parses each of the guest's
// paths once (path.ts), checks it against the running tool's own allow.fs (its manifest, per invocation, never a
// sibling's), then the operator's files, then the grant's prefixes ([grants."<file>"] fs, policy/grants.ts), then
// asks the approvals gate ([approvals], fs.read / fs.write / fs.delete / fs.rename), and returns a CheckedFsOp:
// the only thing the performer (operations.ts) takes. The performer never checks a prefix nor parses a path again.
//
// The operator's own files no tool may read or write whatever its prefixes say: the config file and its siblings
// kiln would read (they may hold grant env values), the approvals store (a tool that could write it could approve
// itself), the audit log, the extension files and directories kiln loads and its build cache (a tool that could
// rewrite another extension would take its grant), and /proc, /sys and /dev (the server's own environment and
// memory). Every file a loaded extension's build read (its imports, its packages' files and package.json) is as
// protected from writing: a tool that rewrote one would run its code under that extension's grant (reading them is
// allowed). Judged on real paths, before the operation; what a name is swapped to after this check is the
// performer's invariant (operations.ts, walk.ts), which keeps the operation inside the prefix but not away from
// a protected file swapped into it.
//
// Approvals judge the exact paths the operation touches: the path as parsed here, and, when a directory symlink
// inside the workspace leads it elsewhere (the walk follows those), the real path too (`realRel`: the directories
// on the way resolved, the last name kept as the performer acts on it, relative to the real root) — a path rule
// matches either; for rm -r or a rename of a directory every entry below it, as the performer lists it
// (`listBelow`); rm then removes nothing it was not judged on. One operation puts at most one question: in mode
// "ask", a use the grant does not list is asked together with what the rules say (policy/approvals/gate.ts), never
// twice.
//
// The checked value also says which real paths the operation will write (a file written or appended, a rename's
// target, the first directory mkdir makes): the caller records them (build/guest-writes.ts), so that no rebuild
// runs a file a guest wrote under another extension's grant.
import { lstatSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { real } from '../../build/containment.js';
import type { ApprovalRequest } from '../../policy/approvals/request.js';
import { askFor, grantCheck, type Grants, type GrantKind, type NotGrantedError } from '../../policy/grants.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';
import { FsPermissionError, type FsWho } from './errors.js';
import { lexicalPath, namesDirectory, notUnder } from './path.js';
import { intersectPrefixes, underPrefix, type FsAccess, type FsAllow } from './prefix.js';
import { OPERATIONS, type FsOp } from '../operations.js';

/** The operations of allow.fs, as the guest's calls name them (capabilities/operations.ts). */
export type { FsOp };

/** One place a checked path may be reached from: a prefix it lies under, and the rest of the path below it. */
export interface FsPlace {
  readonly prefix: string;
  /** Below the prefix, "/"-separated ('' for the prefix itself). */
  readonly rest: string;
}

/** One of the guest's paths as allow.fs let it through, for one access: all the performer needs to reach it. */
export interface CheckedPath {
  /** The tool it was checked for (the performer's refusals name it). */
  readonly tool: string;
  readonly access: FsAccess;
  /** The path as the guest gave it: every message names it so, never the host's absolute path. */
  readonly shown: string;
  /** Relative to the root, "." and ".." resolved as text ('' for the root itself). */
  readonly rel: string;
  /** The guest's spelling names a directory (a trailing "/"): the kernel would insist on one. */
  readonly namesDirectory: boolean;
  /** The workspace root (absolute, as configured; the walk resolves its real path). */
  readonly root: string;
  /** The prefixes of the allow.fs it runs under that hold it, most specific first (never empty). */
  readonly places: readonly FsPlace[];
}

/** A file operation as decided: its paths checked, its options read, what approvals judged. */
export interface CheckedFsOp {
  readonly kind: FsOp;
  /** The path it acts on (rename: the one it moves). */
  readonly path: CheckedPath;
  /** rename: where it moves to. */
  readonly to?: CheckedPath;
  /** mkdir -p, rm -r. */
  readonly recursive: boolean;
  /** rm: no error when nothing is there. */
  readonly force: boolean;
  /** readdir: each name with its type. */
  readonly withFileTypes: boolean;
  /** rm -r: the entries below the directory that approvals judged; the performer removes no other. */
  readonly inside?: readonly string[];
  /** The real paths the operation will write (build/guest-writes.ts records them before it runs). */
  readonly writes: readonly string[];
}

export interface FsPolicyContext {
  tool: string;
  extension: ExtensionIdentity;
  allow: FsAllow | undefined;
  grants: Grants;
  /** The workspace root (absolute). */
  root: string;
  /** The operator's files no tool may touch (absolute paths). */
  protectedFiles: string[];
  /** The files loaded extensions' builds read (real paths), each with the extension file whose build read it:
   *  no tool may write them. */
  buildInputs: ReadonlyMap<string, string>;
  approve(request: ApprovalRequest, forced?: { rule: string; hint: string }): Promise<void>;
  /** Whether [approvals] judges operations at all (no [approvals]: nothing below a directory is listed). */
  judgesPaths: boolean;
  /** Every entry below `path` (a directory; none for anything else), relative to the root, listed by the code
   *  that performs the operation (operations.ts listBelow); `path` is checked against what the tool declares. */
  listBelow(path: CheckedPath): Promise<string[]>;
}

/** Kernel file systems that describe the server itself (its environment, memory, devices): never served. */
const SYSTEM_TREES = ['/proc', '/sys', '/dev'];

const within = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** `rel` (parsed from `shown`) as checked for `access` under `prefixes`, which hold it. */
function checkedPath(tool: string, access: FsAccess, shown: string, rel: string, root: string, prefixes: readonly string[]): CheckedPath {
  const places = prefixes.filter((p) => underPrefix(rel, p)).sort((a, b) => b.length - a.length)
    .map((prefix) => ({ prefix, rest: prefix === '.' ? rel : rel === prefix ? '' : rel.slice(prefix.length + 1) }));
  return { tool, access, shown, rel, namesDirectory: namesDirectory(shown), root, places };
}

/**
 * The one decision on a file operation: `kind` with the guest's request `req` (its path, or from and to, and
 * its options), `size` the bytes a write carries. Returns the operation checked, under the allow.fs it runs
 * under (declared ∩ granted, or declared after a human said yes in mode "ask"); throws a PermissionError (or a
 * TypeError-like FsError for a malformed path) otherwise, naming the setting that would allow it.
 */
export async function decideFs(kind: FsOp, req: Record<string, unknown>, size: number | undefined, c: FsPolicyContext): Promise<CheckedFsOp> {
  const { access, approval: op } = OPERATIONS[kind];
  const given = kind === 'fs.rename' ? [req.from, req.to] : [req.path];
  const who: FsWho = { tool: c.tool };
  if (!c.allow) {
    const rel = lexicalPath(access, given[0], who);
    throw new FsPermissionError(
      `tool "${c.tool}" may not ${access} ${JSON.stringify(given[0])}: it declares no allow.fs; add allow: { fs: { ${access}: [${JSON.stringify(rel || '.')}] } } to its manifest`,
      access, given[0] as string,
    );
  }
  const declared = access === 'read' ? c.allow.read : c.allow.write;
  // The manifest first (its refusal names allow.fs), each path parsed here once; then the operator's files; then the grant.
  const rels: string[] = [];
  for (const p of given) {
    const rel = lexicalPath(access, p, who);
    if (!declared.some((prefix) => underPrefix(rel, prefix))) throw notUnder(access, p as string, rel, declared, who);
    rels.push(rel);
  }
  const paths = given as string[];
  // Judged on real paths (a symlinked root or prefix included): the target may not be, hold, or lie under one
  // of the operator's files and trees.
  const protectedReal = c.protectedFiles.map(real);
  const targets: string[] = [];
  for (const [i, rel] of rels.entries()) {
    const abs = real(resolve(c.root, rel));
    targets.push(abs);
    if (SYSTEM_TREES.some((t) => within(abs, t))) {
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: it is in ${abs.split('/').slice(0, 2).join('/')}, which describes the server itself and is never served`, access, paths[i]);
    }
    if (protectedReal.some((f) => within(abs, f) || within(f, abs))) {
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: it is, holds or lies in one of the operator's files (the config, the approvals store, the audit log, the extensions kiln loads, the build cache), which no tool may touch`, access, paths[i]);
    }
    const input = access === 'write' ? buildInputAt(abs, c.buildInputs) : undefined;
    if (input) {
      const [file, extension] = input;
      const shown = (p: string) => shownPath(p, real(c.root));
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: ${file === abs ? 'it is' : `it holds ${shown(file)}, which is`} read by the build of ${shown(extension)}, ` +
        'a loaded extension; no tool may change the code an extension\'s grant was given to (no setting allows it: the operator edits such files by hand)', access, paths[i]);
    }
  }
  let effective = declared;
  let refusal: NotGrantedError | undefined;
  const grant = grantCheck(c.grants, c.extension, c.tool, `fs.${access}` as GrantKind);
  if (grant) {
    for (const rel of rels) {
      if (grant.list.some((prefix) => underPrefix(rel, prefix))) continue;
      refusal ??= grant.refuse(rel || '.');
      if (c.grants.mode !== 'ask') throw refusal;
    }
    if (!refusal) effective = intersectPrefixes(declared, grant.list);
  }
  // What a removal or a move of a directory takes with it (listed only when approvals judge anything), under
  // what the tool declares.
  const recursive = req.recursive === true;
  const takesTree = (kind === 'fs.rm' && recursive) || kind === 'fs.rename';
  const inside = takesTree && c.judgesPaths ? await c.listBelow(checkedPath(c.tool, access, paths[0], rels[0], c.root, declared)) : undefined;
  // One judgement, one question at most: the rules, and in mode "ask" a path the grant does not list.
  const reals = rels.map((rel) => realRel(c.root, rel));
  await c.approve(request(op, rels, reals, size, inside), refusal && askFor(refusal));
  // After a human allowed a use the grant does not list, the operation runs under what the tool declares.
  const [path, to] = rels.map((rel, i) => checkedPath(c.tool, access, paths[i], rel, c.root, effective));
  return {
    kind, path, ...(to ? { to } : {}),
    recursive, force: req.force === true, withFileTypes: req.withFileTypes === true,
    ...(inside ? { inside } : {}), writes: written(kind, targets, real(c.root)),
  };
}

/** The build input `abs` is, or one a directory `abs` holds, with the extension whose build read it. */
function buildInputAt(abs: string, inputs: ReadonlyMap<string, string>): [string, string] | undefined {
  const own = inputs.get(abs);
  if (own) return [abs, own];
  for (const entry of inputs) if (within(entry[0], abs)) return entry;
  return undefined;
}

/** The real paths an allowed operation on `targets` puts a guest's content at: the file written or appended,
 *  a rename's target (a file, or a directory and all it holds), the first directory mkdir creates (none when it
 *  exists: mkdir -p of an existing directory writes nothing). rm and reads write nothing. */
function written(kind: FsOp, targets: string[], root: string): string[] {
  if (kind === 'fs.writeFile' || kind === 'fs.appendFile') return [targets[0]];
  if (kind === 'fs.rename') return [targets[1]];
  if (kind !== 'fs.mkdir') return [];
  let first: string | undefined;
  for (let p = targets[0]; within(p, root) && p !== root && !exists(p); p = dirname(p)) first = p;
  return first ? [first] : [];
}

/** Whether a name is taken (one that cannot be examined counts as taken: mkdir will fail on it anyway). */
function exists(p: string): boolean {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch (e: any) {
    return e?.code !== 'ENOTDIR';
  }
}

/** A path as a guest may see it: relative to the workspace root when inside it (never the host's root). */
function shownPath(p: string, root: string): string {
  const rel = relative(root, p);
  return rel && !rel.startsWith('..') && !rel.startsWith(sep) ? JSON.stringify(rel) : JSON.stringify(p.slice(p.lastIndexOf(sep) + 1));
}

/** Where `rel` (lexicalPath's result) really is, relative to the real root: its directories resolved as the
 *  kernel follows them (the workspace's symlinks included), its last name kept (the walk never follows a link
 *  there; rm and rename act on the link itself). Undefined when that is `rel` itself, or outside the root (an
 *  operator's prefix linked elsewhere: no path rule, which names paths under the root, can name it). */
export function realRel(root: string, rel: string): string | undefined {
  if (rel === '') return undefined;
  const realRoot = real(root);
  const abs = resolve(root, rel);
  const r = relative(realRoot, join(real(dirname(abs)), basename(abs)));
  if (r === '' || r === '..' || r.startsWith(`..${sep}`) || isAbsolute(r)) return undefined;
  const slashed = r.split(sep).join('/');
  return slashed === rel ? undefined : slashed;
}

function request(op: ApprovalRequest['op'], rels: string[], reals: (string | undefined)[], size: number | undefined, inside: string[] | undefined): ApprovalRequest {
  return {
    op, path: rels[0] || '.', ...(rels[1] !== undefined ? { to: rels[1] || '.' } : {}), ...(size !== undefined ? { size } : {}),
    ...(reals[0] !== undefined ? { realPath: reals[0] } : {}), ...(reals[1] !== undefined ? { realTo: reals[1] } : {}),
    ...(inside?.length ? { inside } : {}),
  };
}
