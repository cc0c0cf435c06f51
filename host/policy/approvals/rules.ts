// The [approvals] rule grammar and its verdict: which capability operations need a human's approval at the moment
// they are used. Pure functions — `decide` is what tests call directly; capability code asks through
// CapabilityContext.approve (policy/approvals/gate.ts), which consults `decide` and, when the verdict is "require",
// asks a human.
//
// Rules (docs/configuration.md, docs/security.md):
//  - Approvals only narrow. An operation reaches `decide` only after its allow.* check (and the operator's
//    ceilings) passed; no verdict grants anything a tool did not declare.
//  - Order: the operator's custom rules in order (the first that matches decides), then the preset's rules,
//    then `default` ("allow" unless the operator says otherwise).
//  - A rule matches when every condition it names matches (a list: any of its entries); a condition that does
//    not apply to the operation (a path on a command, a host on a file) makes the rule not match.
//  - Presets (docs/configuration.md):
//      permissive  no rules: everything is allowed.
//      balanced    any fs operation on a sensitive path (a dotfile or dot-directory anywhere in it — .env*,
//                  .github/, .git/, .npmrc — or a CI/deploy config: wrangler.toml, Jenkinsfile, ...) requires;
//                  fs.delete and fs.rename require; fs.write of more than 5000 bytes requires; the rest is free.
//      strict      balanced's sensitive paths, plus every fs.write, fs.delete, fs.rename and every command
//                  run/start (a command can write anything) require.
//  - A path rule matches a path as policy/approvals/request.ts hands it over (the path as written and where a
//    directory symlink really leads it, and what lies below either); an operation that removes or moves a
//    directory matches when any entry below it does: a rule on a name covers every operation that would remove,
//    move or overwrite a matching file.
import { globRegExp } from '../../extensions/discovery.js';
import { extensionKeys } from '../extension-identity.js';
import { hostAllowed } from '../../capabilities/net/net.js';
import { approvalKindsOf } from '../../capabilities/operations.js';
import { normalisePath, touchedPaths, urlOf, type ApprovalOp, type DecisionInput } from './request.js';
import type { ApprovalRule, ApprovalSettings, Preset, Verdict } from './settings.js';

/** Writes larger than this need approval under "balanced". */
export const BALANCED_WRITE_BYTES = 5000;

/** CI and deployment configuration files (besides dotfiles, which are all sensitive). */
export const SENSITIVE_NAMES = [
  'wrangler.toml', 'wrangler.json', 'wrangler.jsonc', 'Jenkinsfile', 'netlify.toml', 'vercel.json', 'fly.toml',
  'azure-pipelines.yml', 'bitbucket-pipelines.yml', 'cloudbuild.yaml', 'cloudbuild.yml',
];

const FS_OPS: ApprovalOp[] = approvalKindsOf('fs');

/** A preset's rules, evaluated after the operator's own. */
export function presetRules(preset: Preset): ApprovalRule[] {
  if (preset === 'permissive') return [];
  const sensitive: ApprovalRule = { id: `preset ${preset}: dotfiles and CI configs`, op: FS_OPS, path: ['.*', ...SENSITIVE_NAMES], verdict: 'require' };
  if (preset === 'balanced') {
    return [
      sensitive,
      { id: 'preset balanced: deletes and renames', op: ['fs.delete', 'fs.rename'], verdict: 'require' },
      { id: `preset balanced: writes over ${BALANCED_WRITE_BYTES} bytes`, op: ['fs.write'], minSize: BALANCED_WRITE_BYTES + 1, verdict: 'require' },
    ];
  }
  return [
    sensitive,
    { id: 'preset strict: writes, deletes and renames', op: ['fs.write', 'fs.delete', 'fs.rename'], verdict: 'require' },
    { id: 'preset strict: commands', op: ['command'], verdict: 'require' },
  ];
}

/**
 * Whether `path` (relative to the workspace root) matches `pattern`. The grammar of `exclude`: a pattern
 * without a slash matches a file or directory name at any depth (`.env*`, `wrangler.toml`, `.github`); one
 * with a slash, even a trailing one, matches from the root (`src/`, `src/*.ts`, `out/**`) — the path itself
 * or a directory it is in, so `.github/` and `secrets/keys` cover everything below them. `*` is any run of characters but `/`, `**` any
 * run including `/`, `?` one character.
 */
export function pathMatches(pattern: string, path: string): boolean {
  const p = normalisePath(pattern);
  const parts = normalisePath(path).split('/');
  if (p === '') return true;
  const re = globRegExp(p);
  if (!pattern.includes('/')) return parts.some((part) => re.test(part)); // as written: `src/` and `./src` are rooted
  for (let i = 1; i <= parts.length; i++) if (re.test(parts.slice(0, i).join('/'))) return true;
  return false;
}

const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443 };

function ruleMatches(rule: ApprovalRule, r: DecisionInput): boolean {
  if (rule.op && !rule.op.includes(r.op)) return false;
  if (rule.tool && !rule.tool.some((t) => globRegExp(t).test(r.tool))) return false;
  if (rule.extension) {
    const keys = extensionKeys(r.extension);
    if (!rule.extension.some((k) => keys.includes(k))) return false;
  }
  if (rule.command && (r.op !== 'command' || r.command === undefined || !rule.command.includes(r.command))) return false;
  if (rule.path) {
    if (!r.op.startsWith('fs.') || r.path === undefined) return false;
    const paths = touchedPaths(r); // rename: either end; rm -r and rename of a directory: all it holds
    if (!rule.path.some((p) => paths.some((x) => pathMatches(p, x)))) return false;
  }
  if (rule.host) {
    const u = r.op === 'net' || r.op === 'browser.navigate' ? urlOf(r) : undefined;
    if (!u || !(u.protocol in DEFAULT_PORT)) return false;
    if (!hostAllowed(rule.host, u.hostname, u.port ? Number(u.port) : DEFAULT_PORT[u.protocol])) return false;
  }
  if (rule.minSize !== undefined || rule.maxSize !== undefined) {
    if (typeof r.size !== 'number') return false;
    if (rule.minSize !== undefined && r.size < rule.minSize) return false;
    if (rule.maxSize !== undefined && r.size > rule.maxSize) return false;
  }
  return true;
}

/** The name a custom rule goes by in messages and the audit log. */
export function ruleName(rule: ApprovalRule, index: number): string {
  return `approvals.rules[${index}]${rule.id ? ` "${rule.id}"` : ''}`;
}

export interface Decision {
  verdict: Verdict;
  /** What decided: `approvals.rules[i] "id"`, `preset balanced: ...`, or `default`. */
  rule: string;
}

/** The verdict for `input`: the first matching custom rule, else the first matching preset rule, else `default`. */
export function decide(input: DecisionInput, settings: ApprovalSettings): Decision {
  for (const [i, rule] of settings.rules.entries()) if (ruleMatches(rule, input)) return { verdict: rule.verdict, rule: ruleName(rule, i) };
  for (const rule of presetRules(settings.preset)) if (ruleMatches(rule, input)) return { verdict: rule.verdict, rule: rule.id! };
  return { verdict: settings.default, rule: 'default' };
}
