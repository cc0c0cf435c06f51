// What a remembered answer ("for this session", "always") covers, as a key (policy/approvals/gate.ts keeps answers
// by it, in memory and in the operator's store). Pure.
//
// Invariants:
//  - A key names the op and its exact target: a command's name and argv, a request's method and origin, a page's
//    origin, a file's path (any size); a directory's entries and where a directory symlink really leads a path are
//    part of it, so an answer for one target never covers another.
//  - Keys are hashed (sha256 over the artifact's sha256, the tool and the target), so the store never holds
//    argument values. An "always" answer given by a principal's human (over HTTP) is kept under a key of that
//    principal's (`storeKey`): it never answers for another principal's calls.
import { createHash } from 'node:crypto';
import { normalisePath, urlOf, type ApprovalRequest } from './request.js';

/**
 * What a remembered answer ("for this session", "always") covers, as a key: the op and its exact target —
 * a command's name and argv, a request's method and origin, a page's origin, a file's path (any size).
 * Hashed, so the store never holds argument values.
 */
export function approvalKey(r: ApprovalRequest, tool: string, sha256: string): string {
  let target: unknown;
  switch (r.op) {
    case 'command': target = [r.command, r.argv ?? []]; break;
    case 'net': target = [(r.method ?? 'GET').toUpperCase(), urlOf(r)?.origin ?? r.url]; break;
    case 'browser.navigate': target = urlOf(r)?.origin ?? r.url; break;
    // A directory's entries are part of what a remembered answer covers: new ones there are asked again.
    case 'fs.rename': target = [normalisePath(r.path ?? ''), normalisePath(r.to ?? ''), ...(r.inside?.length ? [r.inside] : [])]; break;
    case 'fs.delete': target = r.inside?.length ? [normalisePath(r.path ?? ''), r.inside] : normalisePath(r.path ?? ''); break;
    default: target = normalisePath(r.path ?? '');
  }
  // Where a directory symlink leads the path is part of it: an answer for one place does not cover another.
  if (r.realPath !== undefined || r.realTo !== undefined) target = [target, r.realPath ?? null, r.realTo ?? null];
  return createHash('sha256').update(JSON.stringify([sha256, tool, r.op, target])).digest('hex');
}

/** The key an "always" answer is kept under in the operator's store: `key` itself for the local client (stdio,
 *  kiln run), else bound to the principal whose human gave it. */
export function storeKey(key: string, principal: string | undefined): string {
  return principal === undefined ? key : createHash('sha256').update(JSON.stringify(['principal', principal, key])).digest('hex');
}
