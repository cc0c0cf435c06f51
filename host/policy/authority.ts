// A tool's authority, kind by kind: what its manifest declares, what the operator's grants allow, and what
// the checks let through (declared ∩ granted, within the [commands] and [browser] switches). What `kiln inspect
// --config`, `kiln_extensions`, the audit report and a tool's MCP annotations show, and what a config change
// takes away (narrowedKinds). Pure functions of the manifest and the policy.
import type { Allow } from '../extensions/manifest.js';
import type { ExtensionIdentity } from './extension-identity.js';
import { GRANT_KINDS, granted as grantedOf, grantedToolName, grantOf, intersectNames, intersectPatterns, intersectPrefixes, NOT_ASKED, type GrantKind } from './grants.js';
import type { OperatorPolicy } from './policy.js';

/** A tool's authority of each kind: names, host patterns or path prefixes. */
export type Authority = Record<GrantKind, string[]>;

/** What a tool's manifest declares, kind by kind. */
export function declaredAuthority(allow: Allow): Authority {
  const fs = (allow as { fs?: { read?: string[]; write?: string[] } }).fs;
  return {
    commands: Object.keys(allow.commands), net: allow.net, browser: allow.browser, tools: allow.tools ?? [],
    'fs.read': fs?.read ?? [], 'fs.write': fs?.write ?? [], env: allow.env ?? [], secrets: allow.secrets ?? [],
  };
}

/** Declared, granted (null: grants do not narrow that kind) and effective authority of a tool of `ext`, as
 *  `kiln inspect --config`, `kiln_extensions` and the audit report show it. Effective is what the checks let
 *  through: declared ∩ granted, and nothing of a kind the operator switched off ([commands] / [browser]
 *  enabled = false). Effective env: the declared names the operator gives a value or passes through. Secrets
 *  are always narrowed (granted is a list in every mode), and a tool with one declared and not granted is
 *  refused as a whole (grantedSecrets), so its effective secrets are none. */
export function authority(allow: Allow, ext: ExtensionIdentity, policy: Pick<OperatorPolicy, 'grants' | 'commands' | 'browser' | 'allowEnv'>): {
  declared: Authority; granted: Record<GrantKind, string[] | null>; effective: Authority;
} {
  const declared = declaredAuthority(allow);
  const grants = policy.grants;
  const granted = Object.fromEntries(GRANT_KINDS.map((k) => [k, granted_(k)])) as Record<GrantKind, string[] | null>;
  function granted_(k: GrantKind): string[] | null {
    return (k === 'env' ? envGranted() : grantedOf(grants, ext, k)) ?? null;
  }
  function envGranted(): string[] {
    const { grant } = grantOf(grants, ext);
    return [...Object.keys(grant?.env ?? {}), ...(grant?.allowEnv ?? []), ...(grants.mode === 'declared' ? policy.allowEnv : [])];
  }
  const g = (k: GrantKind) => granted[k] ?? undefined;
  return {
    declared,
    granted,
    effective: {
      commands: policy.commands.enabled ? intersectNames(declared.commands, g('commands')) : [],
      net: intersectPatterns(declared.net, g('net')),
      browser: policy.browser.enabled ? intersectPatterns(declared.browser, g('browser')) : [],
      tools: intersectNames(declared.tools, g('tools')?.map(grantedToolName)),
      'fs.read': intersectPrefixes(declared['fs.read'], g('fs.read')),
      'fs.write': intersectPrefixes(declared['fs.write'], g('fs.write')),
      env: intersectNames(declared.env, g('env')),
      secrets: ((both) => (both.length === declared.secrets.length ? both : []))(intersectNames(declared.secrets, g('secrets'))),
    },
  };
}

/** What a tool of `ext` may come to use, kind by kind: its effective authority and, in mode "ask", every
 *  declared use a human may allow when it comes (every kind but NOT_ASKED, within the [commands] and [browser]
 *  switches). A tool's MCP annotations follow it (mcp/annotations.ts): in mode "ask", a tool declaring
 *  `rm -rf ${dir}` is one "Allow once" away from running it. */
export function withinReach(allow: Allow, ext: ExtensionIdentity, policy: Pick<OperatorPolicy, 'grants' | 'commands' | 'browser' | 'allowEnv'>): Authority {
  const { declared, effective } = authority(allow, ext, policy);
  if (policy.grants.mode !== 'ask') return effective;
  const off = (k: GrantKind) => (k === 'commands' && !policy.commands.enabled) || (k === 'browser' && !policy.browser.enabled);
  return Object.fromEntries(GRANT_KINDS.map((k) => [k, NOT_ASKED.includes(k) ? effective[k] : off(k) ? [] : declared[k]])) as Authority;
}

/** What a revocation closes: `browser` (the extension's pages), `net` (its requests in flight and open bodies). */
export type OpenKind = 'net' | 'browser';

/** What a config change from `before` to `after` took away from a tool declaring `allow` of `ext`, as the kinds
 *  of what it opened under the old grant that must close (mcp/config-watch.ts): `net` or `browser` when a host
 *  pattern was effective before and not after, and `net` when a secret was (its authenticated requests). */
export function narrowedKinds(
  allow: Allow, ext: ExtensionIdentity, before: Pick<OperatorPolicy, 'grants' | 'commands' | 'browser' | 'allowEnv'>, after: Pick<OperatorPolicy, 'grants' | 'commands' | 'browser' | 'allowEnv'>,
): OpenKind[] {
  const was = authority(allow, ext, before).effective;
  const now = authority(allow, ext, after).effective;
  const lost = (k: GrantKind) => was[k].some((p) => !now[k].includes(p));
  return [...new Set<OpenKind>([...(lost('net') || lost('secrets') ? ['net' as const] : []), ...(lost('browser') ? ['browser' as const] : [])])];
}
