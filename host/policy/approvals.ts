// [approvals]: which capability operations need a human's approval at the moment they are used. Pure
// functions — `decide` is what tests call directly; capability code asks through CapabilityContext.approve
// (policy/approval-gate.ts), which consults `decide` and, when the verdict is "require", asks a human.
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
//  - A path is judged exactly as the file operation will touch it: `path`/`to` are what `lexicalPath` made of the
//    guest's string (capabilities/fs/policy.ts parses it once, for approvals and the operation alike), and
//    nothing here reads them another way (a "\\" is a character of a name, never a separator); when a directory
//    symlink inside the workspace leads it elsewhere, `realPath`/`realTo` say where (capabilities/fs/policy.ts),
//    and a path rule matches either (and what lies below either). An operation that removes or moves a directory
//    (rm -r, rename) carries `inside`, every entry below it as capabilities/fs/operations.ts listed it, and a
//    path rule matches when it matches any of them: a rule on a name covers every operation that would remove,
//    move or overwrite a matching file.
//  - What an audit line or an error message shows of a target (`safeTarget`) never holds argument values:
//    a command's name (not its argv), a URL's method, origin and path (no query), a file path and size.
//  - Every value the guest controls is shown to a human (the question, an error) quoted, with quotes,
//    backslashes and every character outside printable ASCII escaped (`escaped`), so it stays on its own line
//    inside its quotes and cannot imitate the question's fixed lines, nor fake a closing quote with a look-alike
//    or pad fake text with blank-looking letters. A question shows every value whole (`question`); one longer
//    than QUESTION_MAX_CHARS is not put (the gate refuses the operation, unasked). Error messages may cut.
import { createHash } from 'node:crypto';
import { globRegExp } from '../extensions/discovery.js';
import { extensionKeys, type ExtensionIdentity } from './extension-identity.js';
import { hostAllowed, parsePattern } from '../capabilities/net/net.js';
import { approvalKindsOf, OP_APPROVAL_KINDS, type OpApprovalKind } from '../capabilities/operations.js';

/** The operations [approvals] rules name (`op`), as capabilities/operations.ts gives each capability operation. */
export const APPROVAL_OPS = OP_APPROVAL_KINDS;
export type ApprovalOp = OpApprovalKind;
export type Verdict = 'allow' | 'require' | 'deny';
export const PRESETS = ['permissive', 'balanced', 'strict'] as const;
export type Preset = (typeof PRESETS)[number];

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

export interface ApprovalRule {
  /** The operator's name for the rule (shown in messages and the audit log). */
  id?: string;
  op?: ApprovalOp[];
  /** Tool names; `*` and `?` are globs. */
  tool?: string[];
  /** Extension keys as config/config.ts resolves them: a file's real path, or sha256:<hex>. */
  extension?: string[];
  /** Path patterns (see `pathMatches`); fs ops only. */
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

function urlOf(r: ApprovalRequest): URL | undefined {
  try {
    return r.url === undefined ? undefined : new URL(r.url);
  } catch {
    return undefined;
  }
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

// ---- what is shown ---------------------------------------------------------------------------------------

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** The characters a guest value is shown with as they are: printable ASCII. Everything else — controls, bidi and
 *  other invisible characters, blank-looking letters and symbols (U+3164, U+2800, U+115F, U+FFA0), quote and
 *  colon look-alikes (U+02BA, U+FF02, U+201D, U+02D0), every other script's letters too — is escaped: no Unicode
 *  property tells which of them look blank or like kiln's own quotes, so none is shown raw. */
const SHOWN_RAW = /^[\x20-\x7e]$/;

/** `s` with `\\`, `"` and every character outside printable ASCII escaped as in JSON (\\n, \\u001b, \\u3164,
 *  \\u{1f3f4}). */
export function escaped(s: string): string {
  return escapeText(s, true);
}

/** `s` with every character outside printable ASCII escaped as `escaped` does, its quotes and backslashes as they
 *  are: for kiln's own text that quotes values already escaped (a rule's name, `[policy] mode = "ask" (...)`). */
export function visible(s: string): string {
  return escapeText(s, false);
}

function escapeText(s: string, quoted: boolean): string {
  let out = '';
  for (const ch of s) {
    if (quoted && (ch === '\\' || ch === '"')) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (!SHOWN_RAW.test(ch)) {
      const cp = ch.codePointAt(0)!;
      out += cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return out;
}

/** A value the guest controls, as an error message shows it: escaped and in double quotes, cut at `max`
 *  characters (never in a question: see `question`). */
export function shown(s: string, max = 500): string {
  return `"${escaped(clip(s, max))}"`;
}

/** A value the guest controls, as a question shows it: escaped, in double quotes, whole. */
const whole = (s: string) => `"${escaped(s)}"`;

type Show = (s: string) => string;

/** What lies below a directory an operation removes or moves, in words: how many entries, and the first few. */
function insideText(r: ApprovalRequest, show: Show): string {
  const n = r.inside?.length ?? 0;
  if (!n) return '';
  const first = r.inside!.slice(0, 5).map(show).join(', ');
  return ` and the ${n} ${n === 1 ? 'entry' : 'entries'} below it (${first}${n > 5 ? `, and ${n - 5} more` : ''})`;
}

/** The target as the audit log and error messages may show it: no argument values, no query strings. */
export function safeTarget(r: ApprovalRequest): string {
  switch (r.op) {
    case 'command': return clip(r.command ?? '', 200);
    case 'net':
    case 'browser.navigate': {
      const u = urlOf(r);
      const where = u ? clip(`${u.origin}${u.pathname}`, 500) : 'an invalid URL';
      return r.op === 'net' ? `${(r.method ?? 'GET').toUpperCase()} ${where}` : where;
    }
    default: {
      const path = clip(normalisePath(r.path ?? ''), 500);
      if (r.op === 'fs.rename') return `${path} -> ${clip(normalisePath(r.to ?? ''), 500)}`;
      return typeof r.size === 'number' ? `${path} (${r.size} bytes)` : path;
    }
  }
}

/** A file operation's target in words: its path(s), shown, where a directory symlink really leads them, and a
 *  write's size. */
function fsTarget(r: ApprovalRequest, show: Show = (x) => shown(x)): string {
  const one = (p: string | undefined, really: string | undefined) =>
    `${show(normalisePath(p ?? '') || '.')}${really !== undefined ? ` (really ${show(really || '.')})` : ''}`;
  const path = one(r.path, r.realPath);
  if (r.op === 'fs.rename') return `${path} to ${one(r.to, r.realTo)}`;
  return typeof r.size === 'number' && r.op === 'fs.write' ? `${path} (${r.size} bytes)` : path;
}

/** "run command \"deploy\"", "send GET \"https://x/y\"", ...: the operation in words, with its safe target
 *  (no argv, no query), every guest value shown. */
export function describe(r: ApprovalRequest): string {
  const u = urlOf(r);
  const where = u ? shown(`${u.origin}${u.pathname}`) : 'an invalid URL';
  switch (r.op) {
    case 'command': return `run command ${shown(r.command ?? '', 200)}`;
    case 'net': return `send ${escaped((r.method ?? 'GET').toUpperCase()).slice(0, 32)} ${where}`;
    case 'browser.navigate': return `load ${where} in its browser`;
    case 'fs.read': return `read ${fsTarget(r)}`;
    case 'fs.write': return `write ${fsTarget(r)}`;
    case 'fs.delete': return `delete ${fsTarget(r)}${insideText(r, (x) => shown(x, 200))}`;
    case 'fs.rename': return `rename ${fsTarget(r)}${insideText(r, (x) => shown(x, 200))}`;
  }
}

/** The longest question kiln puts to a human (characters, as shown: escapes included). */
export const QUESTION_MAX_CHARS = 16 * 1024;

/** A question to put to a human, or why none may be put: a question never hides part of what it asks about. */
export type Question = { text: string } | { tooLong: number };

/** What the human is asked (one line): the operation and its whole target, argv and query included (they are
 *  the client's own user, who sees the arguments anyway), every guest value shown whole: quoted and escaped.
 *  Nothing is cut: a question longer than QUESTION_MAX_CHARS is not put at all (`tooLong`, its length). */
export function question(tool: string, r: ApprovalRequest): Question {
  const what = (() => {
    switch (r.op) {
      case 'command': {
        const argv = (r.argv ?? []).map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : whole(a))).join(' ');
        return `run command ${whole(r.command ?? '')}: ${argv}`;
      }
      case 'net': {
        const method = (r.method ?? 'GET').toUpperCase();
        return `send an HTTP request: ${/^[A-Z]+$/.test(method) ? method : whole(method)} ${whole(r.url ?? '')}`;
      }
      case 'browser.navigate': return `load a page in its browser: ${whole(r.url ?? '')}`;
      case 'fs.read': return `read the file ${fsTarget(r, whole)}`;
      case 'fs.write': return `write the file ${fsTarget(r, whole)}`;
      case 'fs.delete': return `delete ${fsTarget(r, whole)}${insideText(r, whole)}`;
      case 'fs.rename': return `rename ${fsTarget(r, whole)}${insideText(r, whole)}`;
    }
  })();
  const text = `Tool ${whole(tool)} wants to ${what}`;
  return text.length > QUESTION_MAX_CHARS ? { tooLong: text.length } : { text };
}

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

/** A TOML basic string of `s`, every hidden character escaped (the hint is shown to a human too). */
const tomlString = (s: string) => `"${escaped(s).replace(/\\u\{([0-9a-f]+)\}/g, (_, h: string) => `\\U${h.padStart(8, '0')}`)}"`;

/**
 * How the operator would let `input` through without asking: a rule to put first, and, when the verdict
 * came from the preset or the default, the setting that would not require it. One line (it ends up in an
 * error's first line), valid TOML: an inline table for `[approvals] rules = [...]`.
 */
export function allowHint(input: DecisionInput, settings: ApprovalSettings, decided: Decision): string {
  const keys: string[] = [`op = [${tomlString(input.op)}]`, `tool = ${tomlString(input.tool)}`];
  if (input.op === 'command' && input.command !== undefined) keys.push(`command = ${tomlString(input.command)}`);
  const u = urlOf(input);
  if ((input.op === 'net' || input.op === 'browser.navigate') && u) keys.push(`host = [${tomlString(u.host)}]`);
  if (input.op.startsWith('fs.') && input.path !== undefined) keys.push(`path = [${tomlString(normalisePath(input.path))}]`);
  keys.push('verdict = "allow"');
  let hint = `to allow it without asking, make { ${keys.join(', ')} } the first of the [approvals] rules in kiln.toml`;
  if (decided.rule.startsWith('preset ')) {
    const lighter = PRESETS.slice(0, PRESETS.indexOf(settings.preset)).reverse()
      .find((p) => decide(input, { ...settings, preset: p }).verdict === 'allow');
    if (lighter) hint += `, or set [approvals] preset = "${lighter}"`;
  } else if (decided.rule === 'default') {
    hint += ', or set [approvals] default = "allow"';
  }
  return hint;
}

// ---- kiln.toml ---------------------------------------------------------------------------------------------

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
