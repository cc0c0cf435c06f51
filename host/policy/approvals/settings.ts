// [approvals] of kiln.toml: the operator's rules, preset and default, and how long and how often a human is
// asked; `parseApprovals` reads the section (config/config.ts calls it and resolves keys and paths). Pure.
//
// Invariants:
//  - Approvals only narrow. An operation reaches a verdict only after its allow.* check (and the operator's
//    ceilings) passed; no setting here grants anything a tool did not declare.
//  - Without an [approvals] section nothing is asked (`DEFAULT_APPROVALS`: preset "permissive", default "allow").
//  - Every key is checked: an unknown key, a wrong type or a value out of range throws ApprovalsConfigError
//    naming the key (and, for a rule, its index), listing the keys or values allowed. Every setting and its
//    default is described in docs/configuration.md.
import { parsePattern } from '../../capabilities/net/net.js';
import { APPROVAL_OPS, type ApprovalOp } from './request.js';

export type Verdict = 'allow' | 'require' | 'deny';
export const PRESETS = ['permissive', 'balanced', 'strict'] as const;
export type Preset = (typeof PRESETS)[number];

export interface ApprovalRule {
  /** The operator's name for the rule (shown in messages and the audit log). */
  id?: string;
  op?: ApprovalOp[];
  /** Tool names; `*` and `?` are globs. */
  tool?: string[];
  /** Extension keys as config/config.ts resolves them: a file's real path, or sha256:<hex>. */
  extension?: string[];
  /** Path patterns (see policy/approvals/rules.ts `pathMatches`); fs ops only. */
  path?: string[];
  /** allow.net grammar (host, *.suffix, host:port); net and browser.navigate only. */
  host?: string[];
  /** Command names; command only. */
  command?: string[];
  /** Bytes, inclusive; an operation without a size does not match a rule that names one. */
  minSize?: number;
  maxSize?: number;
  verdict: Verdict;
}

export interface ApprovalSettings {
  preset: Preset;
  rules: ApprovalRule[];
  /** The verdict when no custom or preset rule matches. */
  default: Verdict;
  /** Absolute path of the file "always" answers are kept in (the operator's); none: "always" is not offered. */
  store?: string;
  /** How long a human is waited for; no answer by then is a refusal. */
  timeoutMs: number;
  /** The most questions one call (with the tools it calls through plugins[...]) puts to a human; more are
   *  refused without asking. */
  maxQuestionsPerCall: number;
  /** The most questions of one session open at once; more wait their turn (the call's clock stopped). */
  maxOpenQuestionsPerSession: number;
}

export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60 * 1000;
export const DEFAULT_QUESTIONS_PER_CALL = 16;
export const DEFAULT_OPEN_QUESTIONS_PER_SESSION = 1;
export const DEFAULT_APPROVALS: ApprovalSettings = {
  preset: 'permissive', rules: [], default: 'allow', timeoutMs: DEFAULT_APPROVAL_TIMEOUT_MS,
  maxQuestionsPerCall: DEFAULT_QUESTIONS_PER_CALL, maxOpenQuestionsPerSession: DEFAULT_OPEN_QUESTIONS_PER_SESSION,
};
/** The [approvals] keys (each described in docs/configuration.md). */
const SETTING_KEYS = ['preset', 'default', 'store', 'timeoutMs', 'maxQuestionsPerCall', 'maxOpenQuestionsPerSession', 'rules'];

export class ApprovalsConfigError extends Error {
  override name = 'ApprovalsConfigError';
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const VERDICTS: Verdict[] = ['allow', 'require', 'deny'];
const RULE_KEYS = ['id', 'op', 'tool', 'extension', 'path', 'host', 'command', 'minSize', 'maxSize', 'verdict'];

/**
 * `[approvals]` of kiln.toml. `extensionKey` turns an `extension` entry into the key config/config.ts compares
 * (a real path or sha256:<hex>); `resolvePath` makes `store` absolute (relative to the config file).
 * Throws ApprovalsConfigError naming the key.
 */
export function parseApprovals(v: unknown, extensionKey: (key: string) => string, resolvePath: (p: string) => string): ApprovalSettings {
  if (v === undefined) return DEFAULT_APPROVALS;
  const bad = (msg: string) => new ApprovalsConfigError(`[approvals] ${msg}`);
  if (!isTable(v)) throw bad('must be a table');
  for (const k of Object.keys(v)) {
    if (!SETTING_KEYS.includes(k)) throw bad(`has an unknown key "${k}" (${SETTING_KEYS.join(', ')})`);
  }
  if (v.preset !== undefined && !PRESETS.includes(v.preset as Preset)) throw bad(`preset must be one of ${PRESETS.map((p) => `"${p}"`).join(', ')}`);
  if (v.default !== undefined && !VERDICTS.includes(v.default as Verdict)) throw bad('default must be "allow", "require" or "deny"');
  if (v.store !== undefined && (typeof v.store !== 'string' || v.store === '')) throw bad('store must be a file path');
  if (v.timeoutMs !== undefined && !(Number.isInteger(v.timeoutMs) && (v.timeoutMs as number) >= 1 && (v.timeoutMs as number) <= 2 ** 31 - 1)) {
    throw bad('timeoutMs must be a positive integer (milliseconds)');
  }
  for (const k of ['maxQuestionsPerCall', 'maxOpenQuestionsPerSession'] as const) {
    if (v[k] !== undefined && !(Number.isInteger(v[k]) && (v[k] as number) >= 1 && (v[k] as number) <= 10_000)) throw bad(`${k} must be an integer from 1 to 10000`);
  }
  const rawRules = v.rules ?? [];
  if (!Array.isArray(rawRules)) throw bad('rules must be a list of tables ([[approvals.rules]])');
  const rules = rawRules.map((r, i): ApprovalRule => {
    const where = `rules[${i}]`;
    if (!isTable(r)) throw bad(`${where} must be a table`);
    for (const k of Object.keys(r)) if (!RULE_KEYS.includes(k)) throw bad(`${where} has an unknown key "${k}" (${RULE_KEYS.join(', ')})`);
    const list = (k: string): string[] | undefined => {
      const x = r[k];
      if (x === undefined) return undefined;
      const xs = typeof x === 'string' ? [x] : x;
      if (!Array.isArray(xs) || xs.length === 0 || !xs.every((e) => typeof e === 'string' && e !== '')) throw bad(`${where}.${k} must be a string or a non-empty list of strings`);
      return xs as string[];
    };
    if (!VERDICTS.includes(r.verdict as Verdict)) throw bad(`${where}.verdict must be "allow", "require" or "deny"`);
    if (r.id !== undefined && (typeof r.id !== 'string' || r.id === '')) throw bad(`${where}.id must be a string`);
    const op = list('op');
    for (const o of op ?? []) if (!APPROVAL_OPS.includes(o as ApprovalOp)) throw bad(`${where}.op: "${o}" is not an operation (${APPROVAL_OPS.join(', ')})`);
    const host = list('host');
    for (const h of host ?? []) {
      try {
        parsePattern(h);
      } catch (e) {
        throw bad(`${where}.host: ${(e as Error).message}`);
      }
    }
    const size = (k: 'minSize' | 'maxSize') => {
      const x = r[k];
      if (x !== undefined && !(Number.isSafeInteger(x) && (x as number) >= 0)) throw bad(`${where}.${k} must be a non-negative integer (bytes)`);
      return x as number | undefined;
    };
    const rule: ApprovalRule = { verdict: r.verdict as Verdict };
    if (r.id !== undefined) rule.id = r.id as string;
    if (op) rule.op = op as ApprovalOp[];
    const tool = list('tool');
    if (tool) rule.tool = tool;
    const ext = list('extension');
    if (ext) rule.extension = ext.map(extensionKey);
    const path = list('path');
    if (path) rule.path = path;
    if (host) rule.host = host;
    const command = list('command');
    if (command) rule.command = command;
    const minSize = size('minSize'), maxSize = size('maxSize');
    if (minSize !== undefined) rule.minSize = minSize;
    if (maxSize !== undefined) rule.maxSize = maxSize;
    return rule;
  });
  return {
    preset: (v.preset as Preset | undefined) ?? DEFAULT_APPROVALS.preset,
    rules,
    default: (v.default as Verdict | undefined) ?? DEFAULT_APPROVALS.default,
    store: v.store === undefined ? undefined : resolvePath(v.store as string),
    timeoutMs: (v.timeoutMs as number | undefined) ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    maxQuestionsPerCall: (v.maxQuestionsPerCall as number | undefined) ?? DEFAULT_QUESTIONS_PER_CALL,
    maxOpenQuestionsPerSession: (v.maxOpenQuestionsPerSession as number | undefined) ?? DEFAULT_OPEN_QUESTIONS_PER_SESSION,
  };
}
