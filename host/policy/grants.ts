// Operator grants: `[policy] mode` and `[grants."<extension>"]`, the operator's last word on every authority an
// extension declares. Pure functions: capability checks (capabilities/*.ts) call them after the declared check,
// `kiln inspect`, `kiln_extensions` and the audit log show their results, and tests call them directly.
//
// Rules (docs/security.md, "Grants"):
//  - An extension is named by what the operator controls: the file kiln found on disk (its real path), or
//    `sha256:<artifact hash>` for exact bytes (policy/extension-identity.ts). Never a name an artifact records.
//  - mode "declared": a tool gets what it declares; a grant that lists a kind (commands, net, ...) narrows
//    that kind to the declared ∩ granted; a kind the grant does not list is not narrowed.
//  - mode "granted": a tool gets only what it declares AND its extension's grant lists; no grant, nothing.
//  - mode "ask": as "granted", but a use that is declared and not granted is put to a human (approvals) instead
//    of refused outright. What cannot be asked at the moment of use (the environment, read when a guest
//    starts or passed through to a command; a secret, a standing credential: NOT_ASKED) is as in "granted".
//    What a tool may come to use there is what it declares (withinReach: its annotations follow it).
//  - Secrets are declared ∩ granted in EVERY mode, "declared" included: a [secrets.<name>] names no extension,
//    so only a grant's `secrets = ["<name>"]` says who may use it (`grantedSecrets`).
//  - A refusal names the missing grant and the exact line to add, in the operator's own spelling of the key.
//  - Nothing a guest or a client sends can change a grant: there is no tool that grants (docs/security.md).
import { dirname, relative, sep } from 'node:path';
import { PermissionError } from '../errors.js';
import { extensionKeys, type ExtensionIdentity } from './extension-identity.js';
import { parsePattern, type HostPattern } from '../capabilities/net/net.js';
import { intersectPrefixes as intersectFsPrefixes } from '../capabilities/fs/prefix.js';
import { escaped } from './approvals/escaping.js';
import type { ApprovalRequest } from './approvals/request.js';
import { OP_GRANT_KINDS, operation } from '../capabilities/operations.js';

export type PolicyMode = 'declared' | 'granted' | 'ask';

/** The kinds of authority a grant can list; each is a list of names, host patterns or path prefixes: those the
 *  operations are judged by (capabilities/operations.ts), then those no operation has. */
export const GRANT_KINDS = [...OP_GRANT_KINDS, 'env', 'secrets'] as const;
export type GrantKind = (typeof GRANT_KINDS)[number];

/** One extension's grant, as `[grants."<key>"]` writes it. */
export interface Grant {
  commands?: string[];
  net?: string[];
  browser?: string[];
  tools?: string[];
  /** Names of the operator's [secrets.<name>] this extension's tools may use (when they declare them). */
  secrets?: string[];
  fs?: { read?: string[]; write?: string[] };
  /** Explicit values the extension's process.env shows (for the names its tools declare): never a pass-through. */
  env?: Record<string, string>;
  /** Server environment names passed through to this extension (for the names its tools declare). */
  allowEnv?: string[];
}

export interface Grants {
  mode: PolicyMode;
  /** Operator key (a real path, or sha256:<hex>) → its grant. */
  extensions: Record<string, Grant>;
  /** Operator key → the key as the config file spells it, for refusals. */
  spelled: Record<string, string>;
  /** The config file refusals tell the operator to edit. */
  file?: string;
}

export const NO_GRANTS: Grants = { mode: 'declared', extensions: {}, spelled: {} };

/** A use that is declared and not granted. `askable`: mode "ask", so approvals may put it to a human. */
export class NotGrantedError extends PermissionError {
  override name = 'PermissionError';
  constructor(message: string, readonly kind: GrantKind, readonly item: string, readonly askable: boolean) {
    super(message);
  }
}

/** The extension's grant and the key that found it, or none. */
export function grantOf(grants: Grants, ext: ExtensionIdentity): { grant?: Grant; key?: string } {
  if (grants === NO_GRANTS || Object.keys(grants.extensions).length === 0) return {}; // no file system lookup
  for (const key of extensionKeys(ext)) {
    if (Object.hasOwn(grants.extensions, key)) return { grant: grants.extensions[key], key };
  }
  return {};
}

function listOf(grant: Grant, kind: GrantKind): string[] | undefined {
  switch (kind) {
    case 'fs.read': return grant.fs?.read;
    case 'fs.write': return grant.fs?.write;
    case 'env': return grant.env || grant.allowEnv ? [...Object.keys(grant.env ?? {}), ...(grant.allowEnv ?? [])] : undefined;
    default: return grant[kind];
  }
}

/** What the operator grants `ext` of `kind`: a list (names, host patterns or path prefixes), or undefined when
 *  grants do not narrow that kind (mode "declared" with no entry for it). */
export function granted(grants: Grants, ext: ExtensionIdentity, kind: GrantKind): string[] | undefined {
  return grantedOf(grants, ext, kind);
}

function grantedOf(grants: Grants, ext: ExtensionIdentity, kind: GrantKind): string[] | undefined {
  const { grant } = grantOf(grants, ext);
  const list = grant ? listOf(grant, kind) : undefined;
  if (list) return list;
  return grants.mode === 'declared' && kind !== 'secrets' ? undefined : []; // secrets: granted in every mode
}

/** How the config names `ext`: its own spelling when it has a grant, else the file relative to the config. */
export function keyFor(grants: Grants, ext: ExtensionIdentity): string {
  const { key } = grantOf(grants, ext);
  if (key) return grants.spelled[key] ?? key;
  if (!grants.file) return ext.file;
  const rel = relative(dirname(grants.file), ext.file).split(sep).join('/');
  return rel.startsWith('../') ? ext.file : rel;
}

const TOML_KEY: Record<GrantKind, string> = {
  commands: 'commands', net: 'net', browser: 'browser', tools: 'tools', 'fs.read': 'fs.read', 'fs.write': 'fs.write', env: 'allowEnv', secrets: 'secrets',
};

/** What the operator adds to grant `item` of `kind` to `ext`: the line, in their own spelling of the key. */
export function howToGrant(grants: Grants, ext: ExtensionIdentity, kind: GrantKind, item: string): string {
  const key = keyFor(grants, ext);
  const where = grants.file ? ` of ${grants.file}` : '';
  const { grant } = grantOf(grants, ext);
  const line = `${TOML_KEY[kind]} = ["${item}"]`;
  const listed = kind === 'env' ? grant?.allowEnv : grant && listOf(grant, kind);
  const add = !NOT_ASKED.includes(kind) || listed ? `add "${item}" to ${TOML_KEY[kind]} in [grants."${key}"]`
    : grant ? `add the line ${line} to [grants."${key}"]`
      : `add the table [grants."${key}"] with the line ${line}`;
  return `${add}${where}`;
}

/** The refusal of a declared `item` of `kind` that `ext`'s grant does not cover (a NotGrantedError). */
export function notGranted(grants: Grants, ext: ExtensionIdentity, tool: string, kind: GrantKind, item: string): NotGrantedError {
  const key = keyFor(grants, ext);
  const why = kind === 'secrets'
    ? `a secret is used only by the extensions whose grant lists it, in every [policy] mode, and [grants."${key}"] does not list it`
    : grants.mode === 'declared'
      ? `its [grants."${key}"] lists ${TOML_KEY[kind]} without it`
      : `[policy] mode is "${grants.mode}" and [grants."${key}"] does not list it`;
  return new NotGrantedError(
    `tool "${tool}" declares ${kind} "${item}", but the operator has not granted it to ${key} (${why}); ` +
      `to allow it, ${howToGrant(grants, ext, kind, item)}`,
    kind, item, grants.mode === 'ask' && !NOT_ASKED.includes(kind),
  );
}

/** The kinds mode "ask" never puts to a human (see the header): a secret, and the server's environment (a
 *  guest's process.env, a command's `env` pass-through). Their use is as in mode "granted". */
export const NOT_ASKED: readonly GrantKind[] = ['env', 'secrets'];

// ---- effective authority, for inspect / kiln_extensions / the audit log -----------------------------------

/** A [grants] `tools` entry names a tool by its name alone ("x.tool": whichever loaded file serves that name,
 *  which is at most one: extensions/registry.ts serves no contested name), or by file and name ("<key>#x.tool", the key as
 *  [grants] keys are written: the extension file relative to kiln.toml, or sha256:<artifact hash>), which holds
 *  only for that file's tool. config/config.ts stores the key resolved (an operator key). Tool names have no "#". */
export const TOOL_QUALIFIER = '#';

/** The tool name an entry of a grant's `tools` names. */
export function grantedToolName(entry: string): string {
  return entry.slice(entry.lastIndexOf(TOOL_QUALIFIER) + 1);
}

/** Whether a grant's `tools` list covers tool `name` of the extension `callee`. */
export function toolGranted(list: string[], name: string, callee: ExtensionIdentity): boolean {
  if (list.includes(name)) return true;
  const qualified = list.filter((e) => e.includes(TOOL_QUALIFIER) && grantedToolName(e) === name);
  if (qualified.length === 0) return false;
  const keys = extensionKeys(callee);
  return qualified.some((e) => keys.includes(e.slice(0, e.lastIndexOf(TOOL_QUALIFIER))));
}

/** The names both lists hold. */
export function intersectNames(declared: string[], grant: string[] | undefined): string[] {
  return grant ? declared.filter((n) => grant.includes(n)) : declared;
}

function formatPattern(p: HostPattern): string {
  const host = p.host.includes(':') ? `[${p.host}]` : p.host;
  return `${p.wildcard ? '*.' : ''}${host}${p.port !== undefined ? `:${p.port}` : ''}`;
}

/** The one pattern matching exactly what both `a` and `b` match, or null when they share nothing. */
function intersectPattern(a: HostPattern, b: HostPattern): HostPattern | null {
  if (a.port !== undefined && b.port !== undefined && a.port !== b.port) return null;
  const port = a.port ?? b.port;
  if (a.host === b.host) return { host: a.host, wildcard: a.wildcard && b.wildcard, port };
  if (a.wildcard && b.host.endsWith('.' + a.host)) return { ...b, port };
  if (b.wildcard && a.host.endsWith('.' + b.host)) return { ...a, port };
  return null;
}

/** Host patterns (allow.net's grammar) matching exactly what both lists allow. */
export function intersectPatterns(declared: string[], grant: string[] | undefined): string[] {
  if (!grant) return declared;
  const out = new Set<string>();
  for (const d of declared) {
    for (const g of grant) {
      const p = intersectPattern(parsePattern(d), parsePattern(g));
      if (p) out.add(formatPattern(p));
    }
  }
  return [...out];
}

/** Path prefixes covering exactly what both lists cover (capabilities/fs/prefix.ts's rule). */
export function intersectPrefixes(declared: string[], grant: string[] | undefined): string[] {
  return grant ? intersectFsPrefixes(declared, grant) : declared;
}

/** What a capability check needs of a grant: its list, and the refusal naming the line to add. */
export interface GrantCheck {
  list: string[];
  refuse(item: string): NotGrantedError;
  /** What the operator adds to grant `item` (howToGrant). */
  howToGrant(item: string): string;
  /** Mode "ask": put `item` (refused as `refuse` says) to a human as `request` instead; resolves if they allow it. */
  ask?(item: string, request: ApprovalRequest): Promise<void>;
}

/** Asks a human about a use that is declared and not granted (policy/approvals/gate.ts, forced to "require"). */
export type GrantAsker = (refusal: NotGrantedError, request: ApprovalRequest) => Promise<void>;

/** The check of `kind` for `ext`'s tool `tool`, or undefined when grants do not narrow that kind. `asker`: how
 *  mode "ask" asks (without one, "ask" refuses like "granted"). */
export function grantCheck(grants: Grants, ext: ExtensionIdentity, tool: string, kind: GrantKind, asker?: GrantAsker): GrantCheck | undefined {
  const list = granted(grants, ext, kind);
  if (!list) return undefined;
  const refuse = (item: string) => notGranted(grants, ext, tool, kind, item);
  return { list, refuse, howToGrant: (item: string) => howToGrant(grants, ext, kind, item), ...(grants.mode === 'ask' && asker ? { ask: (item: string, request: ApprovalRequest) => asker(refuse(item), request) } : {}) };
}

/** The secrets a tool of `ext` may use: every name it declares in allow.secrets, each granted to `ext` by
 *  `secrets = [...]` in its [grants."<key>"] (in every mode). Refused (a NotGrantedError naming the line to
 *  add) when one it declares is not granted; the code that adds secrets to requests takes only this list. */
export function grantedSecrets(grants: Grants, ext: ExtensionIdentity, tool: { name: string; allow: { secrets?: string[] } }): string[] {
  const declared = tool.allow.secrets ?? [];
  if (declared.length === 0) return [];
  const list = granted(grants, ext, 'secrets') ?? [];
  for (const name of declared) if (!list.includes(name)) throw notGranted(grants, ext, tool.name, 'secrets', name);
  return [...declared];
}

/** What the approvals gate needs to put a refused grant to a human: the rule that asks, and the hint when
 *  nobody can be asked (the grant's own line to add). */
export function askFor(refusal: NotGrantedError): { rule: string; hint: string } {
  const at = refusal.message.indexOf('to allow it');
  return { rule: `[policy] mode = "ask" (${refusal.kind} "${escaped(refusal.item)}" is declared, not granted)`, hint: at >= 0 ? refusal.message.slice(at) : refusal.message };
}

/** The grant kind an operation of the guest is judged by (capabilities/operations.ts); none for a name that is
 *  no operation or one no grant narrows (http.read). */
export function grantKindOf(op: string): GrantKind | undefined {
  return operation(op)?.grant ?? undefined;
}

/** What decided an operation, for the audit log: the grant that narrowed it (`[grants."<key>"] net`), the
 *  policy mode that left it ungranted, or the declaration alone ("declared": grants do not narrow it). */
export function decidedBy(grants: Grants, ext: ExtensionIdentity, op: string, refused = false): string {
  const kind = grantKindOf(op);
  if (!kind) return 'declared';
  const { key } = grantOf(grants, ext);
  const where = key ? `[grants."${grants.spelled[key] ?? key}"] ${TOML_KEY[kind]}` : `[policy] mode = "${grants.mode}" (no grant)`;
  if (refused) return where;
  return granted(grants, ext, kind) ? where : 'declared';
}
