// allow.tools: which other tools a tool may call through plugins[...]. One rule, a pure function:
//  - a tool of the caller's own file is always callable (one file is one unit of trust: its tools share a
//    guest and its globals anyway);
//  - a tool of another file only if the caller's allow.tools names it (and the operator's grant, policy/grants.ts);
//  - a script (kiln run, run_script) is the operator's or the client's own code: it may call any loaded tool.
import { PermissionError } from '../../errors.js';
import type { ToolManifest } from '../../extensions/manifest.js';
import { NotGrantedError, TOOL_QUALIFIER, toolGranted, type GrantCheck } from '../../policy/grants.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';

/** The file scripts run as (sessions/scripts.ts): no extension's file is named like this (theirs are absolute paths). */
export const SCRIPT_HOST_FILE = 'kiln:scripts';

/** Throws a PermissionError unless `caller` (of file `callerFile`) may call `callee` (of extension `calleeExt`;
 *  undefined: no such tool is served, which the call itself reports). The operator's grant names the callee by
 *  name, or by file and name (policy/grants.ts toolGranted). */
export function checkToolCall(
  caller: ToolManifest, callerFile: string, callee: string, calleeExt: ExtensionIdentity | undefined, grant?: GrantCheck, calleeKey?: string,
): void {
  if (calleeExt === undefined || calleeExt.file === callerFile || callerFile === SCRIPT_HOST_FILE) return;
  if ((caller.allow.tools ?? []).includes(callee)) {
    if (grant && !toolGranted(grant.list, callee, calleeExt)) {
      // The refusal also gives the entry that names this file's tool only (calleeKey: the file as the config names it).
      const refusal = grant.refuse(callee);
      if (!calleeKey) throw refusal;
      throw new NotGrantedError(`${refusal.message} (or "${calleeKey}${TOOL_QUALIFIER}${callee}", which holds for that file's tool only)`, refusal.kind, refusal.item, refusal.askable);
    }
    return;
  }
  throw new PermissionError(
    `tool "${caller.name}" may not call "${callee}": it belongs to another extension and is not in allow.tools` +
    ` (${(caller.allow.tools ?? []).join(', ') || 'none'}); add "${callee}" to allow.tools`,
  );
}

/** The tools `start` can reach through plugins[...], itself included: its file's tools and what allow.tools
 *  names, transitively. `tools` maps every loaded tool to its manifest and file; `byFile`, each file to its
 *  tools' names (`toolsByFile`), made once for all the tools of a listing. */
export function reachableTools(start: string, tools: Map<string, { manifest: ToolManifest; file: string }>, byFile = toolsByFile(tools)): Set<string> {
  const seen = new Set<string>([start]);
  for (const todo = [start]; todo.length > 0;) {
    const t = tools.get(todo.pop()!);
    if (!t) continue;
    for (const next of [...(byFile.get(t.file) ?? []), ...(t.manifest.allow.tools ?? [])]) {
      if (!seen.has(next) && tools.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return seen;
}

/** Each file's tools' names. */
export function toolsByFile(tools: Map<string, { file: string }>): Map<string, string[]> {
  const byFile = new Map<string, string[]>();
  for (const [name, t] of tools) byFile.set(t.file, [...(byFile.get(t.file) ?? []), name]);
  return byFile;
}
