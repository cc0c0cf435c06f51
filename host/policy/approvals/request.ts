// What [approvals] judges: one operation a tool is about to perform, as capability code describes it to
// `CapabilityContext.approve` (policy/approvals/gate.ts), and the places it touches. Pure: no I/O, no settings.
//
// Invariants:
//  - The operations are capabilities/operations.ts's approval kinds (`APPROVAL_OPS`); nothing here lists them.
//  - A path is judged exactly as the file operation will touch it: `path`/`to` are what `lexicalPath` made of the
//    guest's string (capabilities/fs/policy.ts parses it once, for approvals and the operation alike), and
//    nothing here reads them another way (a "\\" is a character of a name, never a separator); when a directory
//    symlink inside the workspace leads it elsewhere, `realPath`/`realTo` say where (capabilities/fs/policy.ts).
//    An operation that removes or moves a directory (rm -r, rename) carries `inside`, every entry below it as
//    capabilities/fs/operations.ts listed it; `touchedPaths` gives all of them, at both places for a rename.
//  - A URL that does not parse is no URL (`urlOf`: undefined), never an error.
import type { ExtensionIdentity } from '../extension-identity.js';
import { OP_APPROVAL_KINDS, type OpApprovalKind } from '../../capabilities/operations.js';

/** The operations [approvals] rules name (`op`), as capabilities/operations.ts gives each capability operation. */
export const APPROVAL_OPS = OP_APPROVAL_KINDS;
export type ApprovalOp = OpApprovalKind;

/** One operation a tool is about to perform, as capability code describes it to `CapabilityContext.approve`. */
export interface ApprovalRequest {
  op: ApprovalOp;
  /** command: the name in allow.commands. */
  command?: string;
  /** command: the program and its arguments after substitution (shell form: ["/bin/sh", "-c", line]). Shown
   *  to the human who is asked; never written to the audit log or an error message. */
  argv?: string[];
  /** net, browser.navigate: the absolute URL. */
  url?: string;
  /** net: the request method (GET when absent). */
  method?: string;
  /** fs.*: the path relative to the workspace root ([fs] root), '/'-separated; fs.rename: where from. */
  path?: string;
  /** fs.rename: where to, in the same form as `path`. */
  to?: string;
  /** fs.*: `path` and `to` as the operation really reaches them — the workspace's directory symlinks on the way
   *  resolved, relative to the real root — when that differs from the path as written (capabilities/fs/policy.ts). A path
   *  rule matches either. */
  realPath?: string;
  realTo?: string;
  /** fs.delete (rm -r), fs.rename of a directory: every entry below `path`, in the same form, as the code that
   *  performs the operation listed it (a rename's entries are also judged at their new place under `to`). */
  inside?: string[];
  /** fs.write: the bytes to be written; fs.read: the file's size when known. */
  size?: number;
}

/** A request with who asks: the running tool and its extension as the operator names it. */
export interface DecisionInput extends ApprovalRequest {
  tool: string;
  extension: ExtensionIdentity;
}

/** `path` as rules see it: '/'-separated, without "./" or empty segments. Only "/" separates: a "\\" is part of a
 *  name, as it is for the file operation (capabilities/fs/path.ts lexicalPath). */
export function normalisePath(path: string): string {
  return path.split('/').filter((s) => s !== '' && s !== '.').join('/');
}

/** Every path an fs operation touches: its path, a rename's destination, and what lies below a directory it
 *  removes or moves (at both places for a rename). */
export function touchedPaths(r: ApprovalRequest): string[] {
  if (r.path === undefined) return [];
  const rename = r.op === 'fs.rename';
  const froms = [r.path, ...(r.realPath !== undefined ? [r.realPath] : [])];
  const tos = rename ? [r.to, r.realTo].filter((x): x is string => x !== undefined) : [];
  const out = [...froms, ...tos];
  for (const p of r.inside ?? []) {
    out.push(p);
    if (!p.startsWith(`${r.path}/`)) continue;
    const below = p.slice(r.path.length);
    if (r.realPath !== undefined) out.push(`${r.realPath}${below}`);
    for (const to of tos) out.push(`${to}${below}`);
  }
  return out;
}

/** The request's URL, parsed; undefined when it has none or it does not parse. */
export function urlOf(r: ApprovalRequest): URL | undefined {
  try {
    return r.url === undefined ? undefined : new URL(r.url);
  } catch {
    return undefined;
  }
}
