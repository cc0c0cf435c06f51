// The limits of one call and of one guest: what the manifest declares, lowered by the operator's [limits]. The
// lower of the two always wins; each result says which setting set it, for the error a call gets (sessions/call.ts).
import type { ToolManifest } from '../extensions/manifest.js';
import { operatorEntry, type ExtensionIdentity } from './extension-identity.js';
import type { OperatorPolicy } from './policy.js';

/** A call's CPU time budget, in ms, and the setting it comes from. */
export interface CpuBudget {
  ms: number;
  setting: string;
}

/** The CPU budget of a call of `tool` (a script's pseudo-tool declares none): the lower of its manifest's
 *  cpuMs and the operator's [limits] cpuMs; undefined when neither sets one (then only the deadline applies). */
export function cpuBudget(policy: OperatorPolicy, tool: Pick<ToolManifest, 'cpuMs'> | undefined, caller?: CallerLimits): CpuBudget | undefined {
  const declared = tool?.cpuMs;
  const operator = policy.limits.cpuMs;
  let budget: CpuBudget | undefined;
  if (operator !== undefined && (declared === undefined || operator <= declared)) budget = { ms: operator, setting: "the server's [limits] cpuMs" };
  else if (declared !== undefined) budget = { ms: declared, setting: 'cpuMs in its manifest' };
  if (caller?.cpuMs !== undefined && (budget === undefined || caller.cpuMs < budget.ms)) budget = { ms: caller.cpuMs, setting: `${caller.setting} cpuMs` };
  return budget;
}

/** Who makes a call over HTTP, and its limits (a principal's [principals.<name>.limits]) over the tool's and the
 *  operator's: each the lower; they hold for its plugins[...] callees too. `setting` names where they come
 *  from. `mayCall`: the tools a script it runs may call (its [principals.<name>] tools), `mayCallSetting` that
 *  line. */
export interface CallerLimits {
  timeoutMs?: number;
  cpuMs?: number;
  setting: string;
  mayCall?: (tool: string) => boolean;
  mayCallSetting?: string;
  /** The principal (mcp/principals.ts) whose human's "always" answers hold for this call. */
  principal?: string;
}

/** A call's time limit: the tool's timeoutMs, else the operator's [limits] timeoutMs; the caller's when lower;
 *  at most what a timer can wait. With the setting it comes from. */
export function callTimeout(policy: OperatorPolicy, toolTimeoutMs: number | undefined, caller?: CallerLimits, max = 2 ** 31 - 1): { ms: number; setting: string } {
  let t = toolTimeoutMs !== undefined ? { ms: toolTimeoutMs, setting: 'its timeoutMs' } : { ms: policy.limits.timeoutMs, setting: "the server's [limits] timeoutMs" };
  if (caller?.timeoutMs !== undefined && caller.timeoutMs < t.ms) t = { ms: caller.timeoutMs, setting: `${caller.setting} timeoutMs` };
  return { ms: Math.min(t.ms, max), setting: t.setting };
}

/** A guest's heap limit, in bytes, and the setting it comes from. */
export interface GuestMemory {
  bytes: number;
  setting: string;
}

/** The heap limit of `ext`'s guest. One guest serves every tool of a file, so the lowest memoryLimitBytes its
 *  tools declare is the manifest's side; the operator's is its [limits.memory] entry, else [limits]
 *  memoryLimitBytes. The lower wins. */
export function guestMemory(policy: OperatorPolicy, ext: ExtensionIdentity, tools: readonly Pick<ToolManifest, 'name' | 'memoryLimitBytes'>[]): GuestMemory {
  const entry = operatorEntry(policy.limits.memory, ext);
  let out: GuestMemory = entry !== undefined
    ? { bytes: entry, setting: "the server's [limits.memory] entry for this extension" }
    : { bytes: policy.limits.memoryLimitBytes, setting: "the server's [limits] memoryLimitBytes" };
  for (const t of tools) {
    if (t.memoryLimitBytes !== undefined && t.memoryLimitBytes < out.bytes) out = { bytes: t.memoryLimitBytes, setting: `memoryLimitBytes of tool "${t.name}" in its manifest` };
  }
  return out;
}
