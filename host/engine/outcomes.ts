// What crosses the boundary as an outcome, both ways: a host operation's value or failure as the guest receives
// it (guest.complete, guest.complete-bytes), and a guest's reported failure as the host's ToolError.
//
// Invariants:
//  - Never throws: an op's value that is not JSON (a capability's bug) becomes the op's failure, not an
//    exception where nothing would catch it.
//  - A failure reaches the guest as "Name: message", or as JSON {name, message, fields} when the error carries
//    fields for the guest (CommandError's exitCode, an fs error's code); a failed plugins[...] callee's own
//    "Name: message\nstack" reaches its caller whole.
//  - A guest's failure loses the prelude's frames (kiln's insides: prelude-frames.ts) before anyone sees it.
import { KilnError, ToolError } from '../errors.js';
import type { OpKind } from '../capabilities/operations.js';
import type { Outcome } from './imports.js';
import { withoutPreludeFrames } from './prelude-frames.js';

export type BytesOutcome = { tag: 'ok'; val: Uint8Array } | { tag: 'err'; val: string };

/** What the guest reports when QuickJS ran out of its memory limit. */
export const OUT_OF_MEMORY = /^InternalError: out of memory/;

/** An op's value as the guest receives it; a value that is not JSON (a cycle, a BigInt: a capability's bug)
 *  fails the op instead of throwing where nothing would catch it. */
export function opJson(kind: OpKind, v: unknown): Outcome {
  try {
    return { tag: 'ok', val: JSON.stringify(v ?? null) ?? 'null' };
  } catch (e) {
    return { tag: 'err', val: `Error: ${kind} produced a value that is not JSON (${(e as Error).message})` };
  }
}

/** A host failure as the guest receives it. */
export function errorText(e: unknown): string {
  // A tool called through plugins[...] failed: the caller gets the callee's own "Name: message\nstack" (its
  // frames already mapped to the callee's sources), so the caller's error shows where it really failed.
  if (e instanceof ToolError) return e.detail;
  // An error with fields for the guest (CommandError's exitCode, stdout, ...) travels as JSON; the prelude
  // makes an Error of that name with those fields.
  const fields = (e as { fields?: unknown })?.fields;
  if (e instanceof KilnError && fields && typeof fields === 'object') return JSON.stringify({ name: e.name, message: e.message, fields });
  if (e instanceof KilnError) return `${e.name}: ${e.message}`;
  if (e instanceof Error) return `Error: ${e.message}`;
  return `Error: ${String(e)}`;
}

/** A guest's "Name: message\nstack" as a ToolError: message first, the detail after (without the prelude's
 *  frames, which are kiln's insides: prelude-frames.ts). */
export function toolError(raw: string): ToolError {
  const text = withoutPreludeFrames(raw).replace(/\s+$/, '');
  const nl = text.indexOf('\n');
  return new ToolError(nl < 0 ? text : text.slice(0, nl), text);
}
