// What the operator adds to allow.fs before a file operation runs (capabilities/fs/fs.ts performs it): the
// grant's prefixes ([grants."<file>"] fs, policy/grants.ts), the approvals gate ([approvals], fs.read / fs.write /
// fs.delete / fs.rename), and the operator's own files, which no tool may read or write whatever its prefixes
// say: the config file and its siblings kiln would read (they may hold grant env values), the approvals store
// (a tool that could write it could approve itself), the audit log, the extension files and directories kiln
// loads and its build cache (a tool that could rewrite another extension would take its grant), and /proc,
// /sys and /dev (the server's own environment and memory). Every file a loaded extension's build read (its
// imports, its packages' files and package.json) is as protected from writing: a tool that rewrote one would run
// its code under that extension's grant (reading them is allowed). Judged on real paths, before the operation;
// what a name is swapped to after this check is the fs layer's invariant (fs.ts), which keeps the operation
// inside the prefix but not away from a protected file swapped into it.
//
// Approvals judge the exact paths the operation touches: `lexicalPath`'s result, the one fs.ts resolves too,
// and, when a directory symlink inside the workspace leads it elsewhere (fs.ts follows those), the real path too
// (`realRel`: the directories on the way resolved, the last name kept as fs.ts acts on it, relative to the real
// root) — a path rule matches either; for rm -r or a rename of a directory every entry below it, as fs.ts lists
// it (`listBelow`); rm then removes nothing it was not judged on (fs.ts). One operation puts at most one
// question: in mode "ask", a use the grant does not list is asked together with what the rules say
// (policy/approval-gate.ts), never twice.
//
// The verdict also says which real paths the operation will write (a file written or appended, a rename's
// target, the first directory mkdir makes): the caller records them (build/guest-writes.ts), so that no rebuild
// runs a file a guest wrote under another extension's grant.
import { lstatSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { real } from '../../build/containment.js';
import type { ApprovalRequest } from '../../policy/approvals.js';
import { askFor, grantCheck, type Grants, type GrantKind, type NotGrantedError } from '../../policy/grants.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';
import { fsAllowed, FsPermissionError, intersectPrefixes, lexicalPath, type FsAccess, type FsAllow, type FsOp } from './fs.js';

/** Which access an operation needs, and how approvals name it. */
const ACCESS: Record<FsOp, { access: FsAccess; op: ApprovalRequest['op'] }> = {
  'fs.readFile': { access: 'read', op: 'fs.read' }, 'fs.readdir': { access: 'read', op: 'fs.read' }, 'fs.stat': { access: 'read', op: 'fs.read' },
  'fs.writeFile': { access: 'write', op: 'fs.write' }, 'fs.appendFile': { access: 'write', op: 'fs.write' }, 'fs.mkdir': { access: 'write', op: 'fs.write' },
  'fs.rm': { access: 'write', op: 'fs.delete' }, 'fs.rename': { access: 'write', op: 'fs.rename' },
};

export interface FsPolicyContext {
  tool: string;
  extension: ExtensionIdentity;
  allow: FsAllow | undefined;
  grants: Grants;
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
   *  that performs the operation (fs.ts listBelow). */
  listBelow(path: string): Promise<string[]>;
}

/** What the operation may do: the allow.fs it runs under, the entries below its directory that approvals
 *  judged (rm -r removes no other), and the real paths it will write (build/guest-writes.ts). */
export interface FsVerdict {
  allow: FsAllow | undefined;
  inside?: string[];
  writes: string[];
}


/** Kernel file systems that describe the server itself (its environment, memory, devices): never served. */
const SYSTEM_TREES = ['/proc', '/sys', '/dev'];

const within = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** The allow.fs the operation runs under (declared ∩ granted, or declared after a human said yes in mode
 *  "ask"), once grants, protected files and approvals have let it through; throws a PermissionError otherwise. */
export async function fsPolicy(kind: FsOp, req: Record<string, unknown>, size: number | undefined, c: FsPolicyContext): Promise<FsVerdict> {
  const { access, op } = ACCESS[kind];
  const paths = kind === 'fs.rename' ? [req.from, req.to] : [req.path];
  if (!c.allow) return { allow: undefined, writes: [] }; // fs.ts refuses it, naming allow.fs
  const declared = access === 'read' ? c.allow.read : c.allow.write;
  // The manifest first (its refusal names allow.fs); then the operator's files; then the grant.
  for (const p of paths) fsAllowed(access, p, declared, c.root, { tool: c.tool });
  const rels = paths.map((p) => lexicalPath(access, p, { tool: c.tool }));
  // Judged on real paths (a symlinked root or prefix included): the target may not be, hold, or lie under one
  // of the operator's files and trees.
  const protectedReal = c.protectedFiles.map(real);
  const targets: string[] = [];
  for (const [i, rel] of rels.entries()) {
    const abs = real(resolve(c.root, rel));
    targets.push(abs);
    if (SYSTEM_TREES.some((t) => within(abs, t))) {
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: it is in ${abs.split('/').slice(0, 2).join('/')}, which describes the server itself and is never served`, access, String(paths[i]));
    }
    if (protectedReal.some((f) => within(abs, f) || within(f, abs))) {
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: it is, holds or lies in one of the operator's files (the config, the approvals store, the audit log, the extensions kiln loads, the build cache), which no tool may touch`, access, String(paths[i]));
    }
    const input = access === 'write' ? buildInputAt(abs, c.buildInputs) : undefined;
    if (input) {
      const [file, extension] = input;
      const shown = (p: string) => shownPath(p, real(c.root));
      throw new FsPermissionError(`tool "${c.tool}" may not ${access} ${JSON.stringify(paths[i])}: ${file === abs ? 'it is' : `it holds ${shown(file)}, which is`} read by the build of ${shown(extension)}, ` +
        'a loaded extension; no tool may change the code an extension\'s grant was given to (no setting allows it: the operator edits such files by hand)', access, String(paths[i]));
    }
  }
  let effective = declared;
  let refusal: NotGrantedError | undefined;
  const grant = grantCheck(c.grants, c.extension, c.tool, `fs.${access}` as GrantKind);
  if (grant) {
    for (const [i, rel] of rels.entries()) {
      try {
        fsAllowed(access, paths[i], grant.list, c.root, { tool: c.tool });
      } catch (e) {
        if (!(e instanceof FsPermissionError)) throw e;
        refusal ??= grant.refuse(rel || '.');
        if (c.grants.mode !== 'ask') throw refusal;
      }
    }
    if (!refusal) effective = intersectPrefixes(declared, grant.list);
  }
  // What a removal or a move of a directory takes with it (listed only when approvals judge anything).
  const recursive = (kind === 'fs.rm' && req.recursive === true) || kind === 'fs.rename';
  const inside = recursive && c.judgesPaths ? await c.listBelow(String(paths[0])) : undefined;
  // One judgement, one question at most: the rules, and in mode "ask" a path the grant does not list.
  const reals = rels.map((rel) => realRel(c.root, rel));
  await c.approve(request(op, rels, reals, size, inside), refusal && askFor(refusal));
  // After a human allowed a use the grant does not list, the operation runs under what the tool declares.
  const allow = access === 'read' ? { read: effective, write: c.allow.write } : { read: c.allow.read, write: effective };
  const writes = written(kind, targets, real(c.root));
  return inside ? { allow, inside, writes } : { allow, writes };
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
 *  kernel follows them (the workspace's symlinks included), its last name kept (fs.ts never follows a link
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
