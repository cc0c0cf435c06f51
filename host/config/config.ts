// kiln.toml: which extensions to load, and the operator's settings.
//
//   extensions = ["./extensions", "./tools/box-login.ts"]   # files or directories (scanned recursively)
//
//   [policy]
//   mode = "declared"           # "declared": what a tool declares, narrowed by the kinds its [grants] lists
//                               # "granted": only what it declares AND its [grants] lists; "ask": like
//                               # "granted", a declared use not granted is put to a human (policy/grants.ts)
//   [grants."extensions/notes.ts"]   # the file as found on disk (relative to this file), or "sha256:<hash>"
//   commands = ["add"]          # names; net/browser: hosts in allow.net's grammar
//   tools = ["extensions/lib.ts#lib.search"]  # tools it may call: "<file or sha256:hash>#<tool>", or a bare tool name
//   net = ["api.github.com"]
//   fs = { read = ["./data"], write = ["./out"] }
//   secrets = ["github"]        # the [secrets.*] its tools may use, in EVERY mode (a secret no grant lists: nobody)
//   env = { SESSION_ID = "abc" } # explicit values for names its tools declare in allow.env
//   allowEnv = ["TZ"]           # server environment names passed through, for this extension only
//
//   [commands]                  # the operator's switch on allow.commands
//   enabled = true              # false: no extension runs any command, whatever it declares
//   maxProcesses = 64           # commands (one-shot and persistent) running at once in the server, all sessions
//   [commands.extensions]       # the older spelling of [grants."<file>"] commands (one or the other per file)
//   "extensions/git-sha.ts" = ["headSha"]
//
//   [net]                       # outbound HTTP (allow.net)
//   emptyMeansUnrestricted = false   # true: a tool that declares no net may reach any host (compat)
//   denyPrivate = false              # true: refuse private/loopback/link-local addresses after DNS
//   maxResponseBytes = 134217728     # per response body
//   timeoutMs = 30000                # waiting for headers, and between body chunks
//   maxConcurrent = 16               # requests in flight per session
//
//   [scripting]
//   allowEnv = ["TZ"]           # server env names scripts' process.env shows, and (mode "declared") every
//                               # extension's, for the names its tools declare in allow.env
//
//   [limits]
//   timeoutMs = 30000           # a call's limit when its tool declares no timeoutMs
//   cpuMs = 5000                # CPU time a call may spend running guest code (default: none; a tool's cpuMs may be lower)
//   memoryLimitBytes = 67108864 # each extension's guest heap
//   maxResultBytes = 4194304    # the largest tool result (JSON) sent to a client
//   totalMemoryBytes = 4294967296 # all live guests' heap limits (+8 MiB each) together
//   [limits.memory]             # per extension (keys as in [commands.extensions])
//   "extensions/big.ts" = 268435456
//
//   [sessions]
//   idleTtlMs = 1800000         # a session idle this long ends (guests, vars, processes, cookies)
//   maxInstances = 256          # live guests across sessions; past it, idle sessions' guests are freed
//   maxSessions = 1024          # sessions held; past it the least recently used idle one is closed
//   isolation = "worker"        # "worker": a thread per session; "inline": guests on the server's thread
//   store = "redis://127.0.0.1:6379"  # vars in a shared Redis/Valkey: any replica serves a session (default: memory)
//
//   [browser]                   # the browser tools declaring allow.browser drive (Playwright + Debian's chromium)
//   enabled = true              # false: no tool gets page/context, whatever it declares
//   executablePath = "/usr/bin/chromium"
//   headless = true
//
//   [secrets.github]            # allow.secrets: a header the host adds, never shown to the guest (capabilities/secrets/secrets.ts)
//   env = "GITHUB_TOKEN"        # kiln's environment variable holding the value (taken out of kiln's environment)
//   hosts = ["api.github.com"]  # allow.net's grammar: the only hosts it is sent to
//   header = "authorization"
//   format = "Bearer {}"        # exactly one {}
//
//   [audit]                     # one JSON line per tool call and capability decision (policy/audit-log.ts)
//   path = "kiln-audit.jsonl"   # relative to this file; no path: no audit log
//   maxBytes = 10485760         # rotate to <path>.1 past this size
//   keep = 5                    # rotated files kept: <path>.1 … <path>.5
//
//   [approvals]                 # human approvals at the moment a capability is used (policy/approvals/)
//   preset = "balanced"         # "permissive" (default) | "balanced" | "strict"
//   default = "allow"           # the verdict when no rule matches: "allow" | "require" | "deny"
//   store = "kiln-approvals.json"  # relative to this file: where "always" answers are kept
//   timeoutMs = 300000          # how long a human is waited for
//   maxQuestionsPerCall = 16    # questions one call may put; more are refused without asking
//   maxOpenQuestionsPerSession = 1  # questions of one session open at once; more wait their turn
//   [[approvals.rules]]         # in order, before the preset's; the first that matches decides
//   op = ["command"]            # and/or tool, extension, path, host, command, minSize, maxSize
//   verdict = "require"         # "allow" | "require" | "deny"
//   [fs]                        # allow.fs (capabilities/fs/settings.ts, which reads this section)
//   root = "."                  # the workspace root, relative to this file (default: the server's working directory)
//   maxWriteBytesPerCall = 67108864       # bytes one call may write; also maxWriteBytesPerSession, maxWriteBytes, ...
//
//   [engine]                    # what runs the guests (engine/engine.ts)
//   backend = "wasmtime"        # "wasmtime" (default where kiln's addon is built) | "v8"; KILN_ENGINE wins
//
//   [mcp]                       # the MCP protocol side (mcp/)
//   pageSize = 100              # tools per tools/list page (0: one page)
//   toolNames = "declared"      # "portable": names advertised as ^[a-zA-Z0-9_-]{1,64}$ (dots as underscores)
//   listTtlMs = 60000           # how long 2026-07-28 clients may cache tools/list and server/discover (default
//                               # 60000; 0 when kiln watches its sources or config, whose changes clients then see)
//   tasks = true                # 2026-07-28 clients declaring the Tasks extension may get a long call as a task
//   taskAfterMs = 1000          # a call still running this long becomes a task (0: every call at once)
//   taskTtlMs = 3600000         # a task (and its result) is kept this long after it was created
//   maxWaitingCalls = 16        # 2026-07-28 calls of one client waiting for a human's answer at once
//   stateKeyFile = "state.key"  # relative to this file: the key signing requestState (KILN_STATE_KEY wins)
//
//   [http]                      # kiln mcp --http HOST:PORT
//   token = "..."               # the bearer token clients send (KILN_TOKEN in the environment wins): principal "default"
//   allowedHosts = ["kiln.internal:8080"]   # Host headers besides the listening address
//   allowedOrigins = ["https://app.example"] # Origins browsers may call from (none by default)
//   replica = "r1"              # this replica's name, at the start of the MCP session ids it makes (routing)
//   drainMs = 10000             # on SIGTERM, how long calls in flight may take to finish
//   drainNoticeMs = 2000        # on SIGTERM, how long requests are still taken (/readyz 503) before the listener closes
//   [http.oauth]                # OAuth 2.1 bearer tokens (JWT), checked as a resource server: principal "oauth:<sub>"
//   issuer = "https://auth.example.com"
//   jwksUri = "https://auth.example.com/.well-known/jwks.json"
//   audience = "https://kiln.example.com/mcp"   # this server: the tokens' aud, the metadata's resource
//   scopes = ["mcp"]            # scopes a token must hold
//
//   [principals.alice]          # one client over HTTP ("default": the shared token's; "oauth:<sub>": a subject's)
//   tokenSha256 = "9f86d0..."   # sha256 (hex) of its bearer token: kiln never stores the token
//   tools = ["notes.*"]         # the tools it may list and call, its scripts' plugins[...] too (default: all)
//   metrics = true              # may read /metrics
//   [principals.alice.limits]
//   timeoutMs = 10000           # its calls' time limit (the lower of this and the tool's)
//   cpuMs = 2000
//   maxSessions = 16            # kiln sessions it may hold at once
//
// The same settings may be written as kiln.yaml (or .yml) or kiln.json: one schema, the same messages
// (config/document.ts reads the three formats; this module reads the settings from the document).
//
// Invariants: every section and key is checked (an unknown one is an error that names it, a value of the wrong
// type or out of range one that names the setting); every error is a ConfigError naming the file; a key of a
// per-extension table is an operator key (`operatorKey`: a real path or sha256:<hex>), never a name an artifact
// gives itself, and two spellings of one file are an error.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DEFAULT_NET_POLICY, parsePattern, type NetPolicy } from '../capabilities/net/net.js';
import { readSecrets, SECRET_NAME } from '../capabilities/secrets/secrets.js';
import { DEFAULT_MAX_PROCESSES, MAX_PROCESSES_CEILING } from '../capabilities/commands/commands.js';
import { KilnError } from '../errors.js';
import { BACKENDS, type Backend } from '../engine/backends.js';
import { parseDocument } from './document.js';
import { AUDIT_KEEP_RANGE, DEFAULT_AUDIT, type AuditSettings } from '../policy/audit-log.js';
import { grantedToolName, NO_GRANTS, TOOL_QUALIFIER, type Grant, type Grants } from '../policy/grants.js';
import { ENV_NAME, TOOL_NAME } from '../extensions/manifest.js';
import { STORE_SCHEMES } from '../sessions/store.js';
import { TOOL_NAMINGS, type ToolNaming } from '../extensions/tool-names.js';
import { ApprovalsConfigError, parseApprovals, type ApprovalSettings } from '../policy/approvals/settings.js';
import { normalisePrefix } from '../capabilities/fs/prefix.js';
import { readFsSettings } from '../capabilities/fs/settings.js';
import { DEFAULT_BROWSER, DEFAULT_LIMITS, DEFAULT_SESSION_SETTINGS, type BrowserSettings, type Limits, type OperatorPolicy, type SessionSettings } from '../policy/policy.js';

export interface KilnConfig {
  /** Absolute paths of the files and directories to load. */
  extensions: string[];
  /** Glob patterns of files not to load from those directories (extensions/discovery.ts), besides test files. */
  exclude: string[];
  policy: OperatorPolicy;
  /** [test] steps: globs of kiln bdd's step files, relative to the config file (bdd/cli.ts has the defaults). */
  test: { steps?: string[] };
  /** [http]: the HTTP transport's settings (mcp/http.ts). */
  http: { token?: string; allowedHosts: string[]; allowedOrigins: string[]; oauth?: OAuthSettings; replica?: string; drainMs?: number; drainNoticeMs?: number };
  /** [principals.*]: the clients kiln tells apart over HTTP, by name (mcp/principals.ts). */
  principals: Record<string, PrincipalSettings & { tokenSha256?: string }>;
  /** [mcp]: the protocol side (mcp/). */
  mcp: McpSettings;
  /** [engine]: the backend that runs guests (engine/engine.ts); none: wasmtime where it can run, else V8. */
  engine: { backend?: Backend };
}

/** What one principal may do (mcp/principals.ts). */
export interface PrincipalSettings {
  /** Glob patterns (`*`: any run of characters) of the tools it may list and call; unset: every tool. */
  tools?: string[];
  /** Whether it may read /metrics. */
  metrics?: boolean;
  /** Its own limits, each the lower of it and what the tool and the operator's [limits] say. */
  limits?: { timeoutMs?: number; cpuMs?: number; maxSessions?: number };
}

/** [http.oauth]: the authorization server whose JWTs kiln takes. */
export interface OAuthSettings {
  issuer: string;
  jwksUri: string;
  audience: string;
  scopes: string[];
}

/** [mcp]: what kiln's MCP servers do on either transport. */
export interface McpSettings {
  /** Tools per tools/list page; 0: every tool on one page. */
  pageSize: number;
  /** How tool names are advertised (extensions/tool-names.ts). */
  toolNames: ToolNaming;
  /** The cache hint (ttlMs) of tools/list and server/discover results on 2026-07-28; unset: 60 s, or 0 while
   *  kiln watches its sources or its config (a client caching the list would miss what changed). */
  listTtlMs?: number;
  /** Whether a 2026-07-28 call from a client declaring the Tasks extension may be answered as a task. */
  tasks: boolean;
  /** How long such a call runs before it becomes a task; 0: at once. */
  taskAfterMs: number;
  /** How long a task and its result are kept after it was created. */
  taskTtlMs: number;
  /** How many of one client's 2026-07-28 calls may wait for a human's answer at once (each holds its guest). */
  maxWaitingCalls: number;
  /** The file holding the requestState key(s), one a line, the first signing (KILN_STATE_KEY wins). */
  stateKeyFile?: string;
}

export const DEFAULT_MCP: McpSettings = { pageSize: 100, toolNames: 'declared', tasks: true, taskAfterMs: 1000, taskTtlMs: 3_600_000, maxWaitingCalls: 16 };

/** tools/list's cache hint when [mcp] listTtlMs is not set and nothing is watched. */
export const DEFAULT_LIST_TTL_MS = 60_000;

/** The largest tools/list page and the longest cache hint a setting may ask for. */
const MAX_PAGE_SIZE = 10_000;
const MAX_LIST_TTL_MS = 86_400_000;

export class ConfigError extends KilnError {
  override name = 'ConfigError';
}

export function readConfig(file: string): KilnConfig {
  if (!existsSync(file)) throw new ConfigError(`${file}: no such config file`);
  const parsed = parseDocument(file, readFileSync(file, 'utf8'), (message) => new ConfigError(message));
  if (!isTable(parsed)) throw new ConfigError(`${file}: the settings must be a table (an object), not ${parsed === null ? 'null' : Array.isArray(parsed) ? 'a list' : typeof parsed}`);
  const doc = parsed;
  const ext = doc.extensions ?? [];
  if (!Array.isArray(ext) || !ext.every((e) => typeof e === 'string')) {
    throw new ConfigError(`${file}: \`extensions\` must be a list of paths`);
  }
  const exclude = doc.exclude ?? [];
  if (!Array.isArray(exclude) || !exclude.every((e) => typeof e === 'string' && e.length > 0)) {
    throw new ConfigError(`${file}: \`exclude\` must be a list of glob patterns`);
  }
  for (const k of Object.keys(doc)) {
    if (!['extensions', 'exclude', 'policy', 'grants', 'commands', 'net', 'scripting', 'limits', 'sessions', 'test', 'http', 'mcp', 'engine', 'principals', 'browser', 'audit', 'secrets', 'approvals', 'fs'].includes(k)) throw new ConfigError(`${file}: unknown setting "${k}"`);
  }
  const commands = readCeiling(file, doc.commands);
  return {
    extensions: ext.map((e) => resolve(dirname(file), e)),
    exclude,
    policy: {
      commands: { enabled: commands.enabled, maxProcesses: commands.maxProcesses },
      grants: readGrants(file, doc.policy, doc.grants, commands.extensions),
      net: readNet(file, doc.net),
      allowEnv: readAllowEnv(file, doc.scripting),
      limits: readLimits(file, doc.limits),
      sessions: readSessions(file, doc.sessions),
      browser: readBrowser(file, doc.browser),
      audit: readAudit(file, doc.audit),
      secrets: readSecrets(doc.secrets, (message) => new ConfigError(`${file}: ${message}`)),
      approvals: readApprovals(file, doc.approvals),
      fs: readFsSettings(file, doc.fs, (message) => new ConfigError(message)),
    },
    http: readHttp(file, doc.http),
    principals: readPrincipals(file, doc.principals),
    mcp: readMcp(file, doc.mcp),
    engine: readEngine(file, doc.engine),
    test: readTest(file, doc.test),
  };
}

function readEngine(file: string, v: unknown): KilnConfig['engine'] {
  if (v === undefined) return {};
  if (!isTable(v)) throw new ConfigError(`${file}: [engine] must be a table`);
  for (const k of Object.keys(v)) if (k !== 'backend') throw new ConfigError(`${file}: [engine] has an unknown key "${k}" (backend)`);
  if (v.backend === undefined) return {};
  if (!(BACKENDS as readonly unknown[]).includes(v.backend)) {
    throw new ConfigError(`${file}: [engine] backend must be ${BACKENDS.map((b) => `"${b}"`).join(' or ')} (found ${JSON.stringify(v.backend)})`);
  }
  return { backend: v.backend as Backend };
}

const GRANT_KEYS = ['commands', 'net', 'browser', 'tools', 'secrets', 'fs', 'env', 'allowEnv'];

/** [policy] mode and [grants."<key>"] tables (policy/grants.ts); [commands.extensions] lists fold in as grants'
 *  commands (a file named in both is an error: one place says what it may run). */
function readGrants(file: string, policy: unknown, grants: unknown, legacyCommands: Record<string, string[]>): Grants {
  let mode: Grants['mode'] = 'declared';
  if (policy !== undefined) {
    if (!isTable(policy)) throw new ConfigError(`${file}: [policy] must be a table`);
    for (const k of Object.keys(policy)) if (k !== 'mode') throw new ConfigError(`${file}: [policy] has an unknown key "${k}" (mode)`);
    if (policy.mode !== undefined && !['declared', 'granted', 'ask'].includes(policy.mode as string)) {
      throw new ConfigError(`${file}: [policy] mode must be "declared", "granted" or "ask" (found ${JSON.stringify(policy.mode)})`);
    }
    mode = (policy.mode as Grants['mode'] | undefined) ?? 'declared';
  }
  if (grants !== undefined && !isTable(grants)) throw new ConfigError(`${file}: [grants] must be a table of extension → grant`);
  const written: Record<string, Grant> = {};
  for (const [key, g] of Object.entries(grants ?? {})) written[key] = readGrant(file, key, g);
  for (const [key, names] of Object.entries(legacyCommands)) {
    const same = Object.keys(written).find((k) => operatorKey(file, k) === operatorKey(file, key));
    if (same && written[same].commands) throw new ConfigError(`${file}: [commands.extensions] and [grants."${same}"] both say which commands ${key} may run; keep one (the grant)`);
    if (same) written[same] = { ...written[same], commands: names };
    else written[key] = { commands: names };
  }
  const extensions = keyed(file, '[grants]', written);
  const spelled: Record<string, string> = {};
  for (const key of Object.keys(written)) spelled[operatorKey(file, key)] = key;
  return mode === 'declared' && Object.keys(extensions).length === 0 ? { ...NO_GRANTS, file } : { mode, extensions, spelled, file };
}

function readGrant(file: string, key: string, g: unknown): Grant {
  const where = `[grants."${key}"]`;
  if (!isTable(g)) throw new ConfigError(`${file}: ${where} must be a table`);
  const list = (k: string, x: unknown, check?: (s: string) => string | undefined): string[] => {
    if (!Array.isArray(x) || !x.every((e) => typeof e === 'string' && e.length > 0)) throw new ConfigError(`${file}: ${where} ${k} must be a list of strings`);
    for (const e of x) {
      const bad = check?.(e);
      if (bad) throw new ConfigError(`${file}: ${where} ${k}: ${bad}`);
    }
    return x;
  };
  const hostPattern = (e: string) => {
    try {
      parsePattern(e);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };
  const prefix = (e: string) => {
    try {
      normalisePrefix(e);
      return undefined;
    } catch (err) {
      return `"${e}": ${(err as Error).message}`;
    }
  };
  const toolEntry = (e: string) => (TOOL_NAME.test(grantedToolName(e)) && (!e.includes(TOOL_QUALIFIER) || e.lastIndexOf(TOOL_QUALIFIER) > 0)
    ? undefined : `"${e}" is neither a tool name nor "<extension file or sha256:hash>${TOOL_QUALIFIER}<tool name>"`);
  const envName = (e: string) => (ENV_NAME.test(e) ? undefined : `"${e}" is not an environment variable name`);
  const out: Grant = {};
  for (const [k, x] of Object.entries(g)) {
    if (k === 'commands') out[k] = list(k, x);
    else if (k === 'tools') out.tools = list(k, x, toolEntry).map((e) => qualifiedTool(file, e));
    else if (k === 'net' || k === 'browser') out[k] = list(k, x, hostPattern);
    else if (k === 'allowEnv') out.allowEnv = list(k, x, envName);
    else if (k === 'secrets') out.secrets = list(k, x, (e) => (SECRET_NAME.test(e) ? undefined : `"${e.slice(0, 64)}" is not a secret name (the <name> of a [secrets.<name>])`));
    else if (k === 'fs') {
      if (!isTable(x)) throw new ConfigError(`${file}: ${where} fs must be a table { read = [...], write = [...] }`);
      for (const fk of Object.keys(x)) if (fk !== 'read' && fk !== 'write') throw new ConfigError(`${file}: ${where} fs has an unknown key "${fk}" (read, write)`);
      out.fs = {};
      if (x.read !== undefined) out.fs.read = list('fs.read', x.read, prefix).map(normalisePrefix);
      if (x.write !== undefined) out.fs.write = list('fs.write', x.write, prefix).map(normalisePrefix);
    } else if (k === 'env') {
      if (!isTable(x) || !Object.values(x).every((v) => typeof v === 'string')) throw new ConfigError(`${file}: ${where} env must be a table of NAME = "value"`);
      for (const name of Object.keys(x)) {
        const bad = envName(name);
        if (bad) throw new ConfigError(`${file}: ${where} env: ${bad}`);
      }
      out.env = { ...(x as Record<string, string>) };
    } else throw new ConfigError(`${file}: ${where} has an unknown key "${k}" (${GRANT_KEYS.join(', ')})`);
  }
  return out;
}

/** A [grants] tools entry with its extension key (if any) resolved as [grants] keys are (policy/grants.ts TOOL_QUALIFIER). */
function qualifiedTool(file: string, entry: string): string {
  const at = entry.lastIndexOf(TOOL_QUALIFIER);
  return at < 0 ? entry : `${operatorKey(file, entry.slice(0, at))}${TOOL_QUALIFIER}${entry.slice(at + 1)}`;
}

function readTest(file: string, v: unknown): KilnConfig['test'] {
  if (v === undefined) return {};
  if (!isTable(v)) throw new ConfigError(`${file}: [test] must be a table`);
  for (const k of Object.keys(v)) if (k !== 'steps') throw new ConfigError(`${file}: [test] has an unknown key "${k}" (steps)`);
  if (v.steps !== undefined && (!Array.isArray(v.steps) || !v.steps.every((s) => typeof s === 'string' && s.length > 0))) {
    throw new ConfigError(`${file}: [test] steps must be a list of glob patterns`);
  }
  return { steps: v.steps as string[] | undefined };
}

function readAudit(file: string, v: unknown): AuditSettings {
  if (v === undefined) return DEFAULT_AUDIT;
  if (!isTable(v)) throw new ConfigError(`${file}: [audit] must be a table`);
  for (const k of Object.keys(v)) {
    if (!['path', 'maxBytes', 'keep'].includes(k)) throw new ConfigError(`${file}: [audit] has an unknown key "${k}"`);
  }
  if (v.path !== undefined && (typeof v.path !== 'string' || !v.path)) throw new ConfigError(`${file}: [audit] path must be a file path`);
  if (v.maxBytes !== undefined && !(Number.isInteger(v.maxBytes) && (v.maxBytes as number) >= 4096)) throw new ConfigError(`${file}: [audit] maxBytes must be an integer of at least 4096`);
  const { min, max } = AUDIT_KEEP_RANGE;
  if (v.keep !== undefined && !(Number.isInteger(v.keep) && (v.keep as number) >= min && (v.keep as number) <= max)) throw new ConfigError(`${file}: [audit] keep must be an integer from ${min} to ${max} (rotated files kept)`);
  return {
    path: v.path === undefined ? undefined : resolve(dirname(file), v.path as string),
    maxBytes: (v.maxBytes as number | undefined) ?? DEFAULT_AUDIT.maxBytes,
    keep: (v.keep as number | undefined) ?? DEFAULT_AUDIT.keep,
  };
}

/** [approvals] (policy/approvals/settings.ts parses it; extension keys and the store path are resolved here, like
 *  the rest). */
function readApprovals(file: string, v: unknown): ApprovalSettings {
  try {
    return parseApprovals(v, (key) => operatorKey(file, key), (p) => resolve(dirname(file), p));
  } catch (e) {
    if (e instanceof ApprovalsConfigError) throw new ConfigError(`${file}: ${e.message}`);
    throw e;
  }
}

function readBrowser(file: string, v: unknown): BrowserSettings {
  if (v === undefined) return DEFAULT_BROWSER;
  if (!isTable(v)) throw new ConfigError(`${file}: [browser] must be a table`);
  for (const k of Object.keys(v)) {
    if (!['enabled', 'executablePath', 'headless'].includes(k)) throw new ConfigError(`${file}: [browser] has an unknown key "${k}"`);
  }
  for (const k of ['enabled', 'headless']) {
    if (v[k] !== undefined && typeof v[k] !== 'boolean') throw new ConfigError(`${file}: [browser] ${k} must be true or false`);
  }
  if (v.executablePath !== undefined && (typeof v.executablePath !== 'string' || !v.executablePath)) throw new ConfigError(`${file}: [browser] executablePath must be a path`);
  return {
    enabled: (v.enabled as boolean | undefined) ?? DEFAULT_BROWSER.enabled,
    executablePath: v.executablePath === undefined ? DEFAULT_BROWSER.executablePath : resolve(dirname(file), v.executablePath as string),
    headless: (v.headless as boolean | undefined) ?? DEFAULT_BROWSER.headless,
  };
}

function readHttp(file: string, v: unknown): KilnConfig['http'] {
  if (v === undefined) return { allowedHosts: [], allowedOrigins: [] };
  if (!isTable(v)) throw new ConfigError(`${file}: [http] must be a table`);
  const list = (k: string) => {
    const x = v[k] ?? [];
    if (!Array.isArray(x) || !x.every((e) => typeof e === 'string' && e.length > 0)) throw new ConfigError(`${file}: [http] ${k} must be a list of strings`);
    return x as string[];
  };
  for (const k of Object.keys(v)) {
    if (!['token', 'allowedHosts', 'allowedOrigins', 'oauth', 'replica', 'drainMs', 'drainNoticeMs'].includes(k)) throw new ConfigError(`${file}: [http] has an unknown key "${k}" (token, allowedHosts, allowedOrigins, oauth, replica, drainMs, drainNoticeMs)`);
  }
  if (v.token !== undefined && (typeof v.token !== 'string' || v.token.length < 16)) throw new ConfigError(`${file}: [http] token must be a string of at least 16 characters`);
  if (v.replica !== undefined && (typeof v.replica !== 'string' || !/^[A-Za-z0-9_-]{1,32}$/.test(v.replica))) throw new ConfigError(`${file}: [http] replica must be 1 to 32 letters, digits, _ or -`);
  for (const k of ['drainMs', 'drainNoticeMs']) {
    if (v[k] !== undefined && !(Number.isInteger(v[k]) && (v[k] as number) >= 0 && (v[k] as number) <= 2 ** 31 - 1)) throw new ConfigError(`${file}: [http] ${k} must be a non-negative integer`);
  }
  return {
    token: v.token as string | undefined, allowedHosts: list('allowedHosts'), allowedOrigins: list('allowedOrigins'),
    ...(v.oauth !== undefined ? { oauth: readOAuth(file, v.oauth) } : {}),
    ...(v.replica !== undefined ? { replica: v.replica as string } : {}), ...(v.drainMs !== undefined ? { drainMs: v.drainMs as number } : {}),
    ...(v.drainNoticeMs !== undefined ? { drainNoticeMs: v.drainNoticeMs as number } : {}),
  };
}

function readOAuth(file: string, v: unknown): OAuthSettings {
  if (!isTable(v)) throw new ConfigError(`${file}: [http.oauth] must be a table`);
  for (const k of Object.keys(v)) if (!['issuer', 'jwksUri', 'audience', 'scopes'].includes(k)) throw new ConfigError(`${file}: [http.oauth] has an unknown key "${k}" (issuer, jwksUri, audience, scopes)`);
  const url = (k: string) => {
    if (typeof v[k] !== 'string' || !URL.canParse(v[k] as string) || !/^https?:/.test(v[k] as string)) throw new ConfigError(`${file}: [http.oauth] ${k} must be an http(s) URL`);
    return v[k] as string;
  };
  const scopes = v.scopes ?? [];
  if (!Array.isArray(scopes) || !scopes.every((x) => typeof x === 'string' && /^\S+$/.test(x))) throw new ConfigError(`${file}: [http.oauth] scopes must be a list of scope names`);
  return { issuer: url('issuer'), jwksUri: url('jwksUri'), audience: url('audience'), scopes };
}

/** [principals.<name>]: each client's token digest, tools, metrics and limits. */
function readPrincipals(file: string, v: unknown): KilnConfig['principals'] {
  if (v === undefined) return {};
  if (!isTable(v)) throw new ConfigError(`${file}: [principals] must be a table of name → settings`);
  const out: KilnConfig['principals'] = {};
  const digests = new Set<string>();
  for (const [name, p] of Object.entries(v)) {
    const where = `[principals."${name}"]`;
    if (!/^[^\s\u0000-\u001f]{1,128}$/.test(name)) throw new ConfigError(`${file}: ${where}: a principal's name is 1 to 128 characters, no spaces or controls`);
    if (!isTable(p)) throw new ConfigError(`${file}: ${where} must be a table`);
    if (name === 'stdio') throw new ConfigError(`${file}: ${where}: "stdio" is the name of kiln's local client; choose another name`);
    const settings: PrincipalSettings & { tokenSha256?: string } = {};
    for (const [k, x] of Object.entries(p)) {
      if (k === 'tokenSha256') {
        if (typeof x !== 'string' || !/^[0-9a-fA-F]{64}$/.test(x)) throw new ConfigError(`${file}: ${where} tokenSha256 must be the sha256 of the token, 64 hex digits (printf %s "$TOKEN" | sha256sum)`);
        if (name === 'default' || name.startsWith('oauth:')) throw new ConfigError(`${file}: ${where} names the ${name === 'default' ? 'shared token' : 'OAuth subject'}'s principal, which takes no tokenSha256`);
        if (digests.has(x.toLowerCase())) throw new ConfigError(`${file}: ${where}: its tokenSha256 is another principal's too`);
        digests.add(x.toLowerCase());
        settings.tokenSha256 = x.toLowerCase();
      } else if (k === 'tools') {
        if (!Array.isArray(x) || !x.every((e) => typeof e === 'string' && /^[A-Za-z0-9_.*-]{1,64}$/.test(e))) throw new ConfigError(`${file}: ${where} tools must be a list of tool names or patterns (* for any run of characters)`);
        settings.tools = x as string[];
      } else if (k === 'metrics') {
        if (typeof x !== 'boolean') throw new ConfigError(`${file}: ${where} metrics must be true or false`);
        settings.metrics = x;
      } else if (k === 'limits') {
        if (!isTable(x)) throw new ConfigError(`${file}: ${where}.limits must be a table`);
        settings.limits = {};
        for (const [lk, lx] of Object.entries(x)) {
          if (!['timeoutMs', 'cpuMs', 'maxSessions'].includes(lk)) throw new ConfigError(`${file}: ${where}.limits has an unknown key "${lk}" (timeoutMs, cpuMs, maxSessions)`);
          if (typeof lx !== 'number' || !Number.isInteger(lx) || lx < 1 || lx > 2 ** 31 - 1) throw new ConfigError(`${file}: ${where}.limits ${lk} must be a positive integer`);
          settings.limits[lk as 'timeoutMs'] = lx;
        }
      } else throw new ConfigError(`${file}: ${where} has an unknown key "${k}" (tokenSha256, tools, metrics, limits)`);
    }
    out[name] = settings;
  }
  return out;
}

function readMcp(file: string, v: unknown): McpSettings {
  if (v === undefined) return DEFAULT_MCP;
  if (!isTable(v)) throw new ConfigError(`${file}: [mcp] must be a table`);
  const out: McpSettings = { ...DEFAULT_MCP };
  const integer = (k: string, x: unknown, max: number, min = 0) => {
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) throw new ConfigError(`${file}: [mcp] ${k} must be an integer from ${min} to ${max}`);
    return x;
  };
  for (const [k, x] of Object.entries(v)) {
    if (k === 'pageSize') out.pageSize = integer(k, x, MAX_PAGE_SIZE);
    else if (k === 'listTtlMs') out.listTtlMs = integer(k, x, MAX_LIST_TTL_MS);
    else if (k === 'taskAfterMs') out.taskAfterMs = integer(k, x, 2 ** 31 - 1);
    else if (k === 'taskTtlMs') out.taskTtlMs = integer(k, x, 2 ** 31 - 1, 1000);
    else if (k === 'maxWaitingCalls') out.maxWaitingCalls = integer(k, x, 10_000, 1);
    else if (k === 'toolNames') {
      if (!TOOL_NAMINGS.includes(x as ToolNaming)) throw new ConfigError(`${file}: [mcp] toolNames must be ${TOOL_NAMINGS.map((n) => `"${n}"`).join(' or ')} (found ${JSON.stringify(x)})`);
      out.toolNames = x as ToolNaming;
    } else if (k === 'tasks') {
      if (typeof x !== 'boolean') throw new ConfigError(`${file}: [mcp] tasks must be true or false`);
      out.tasks = x;
    } else if (k === 'stateKeyFile') {
      if (typeof x !== 'string' || !x) throw new ConfigError(`${file}: [mcp] stateKeyFile must be a file path`);
      out.stateKeyFile = resolve(dirname(file), x);
    } else throw new ConfigError(`${file}: [mcp] has an unknown key "${k}" (pageSize, toolNames, listTtlMs, tasks, taskAfterMs, taskTtlMs, maxWaitingCalls, stateKeyFile)`);
  }
  return out;
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A key of a per-extension table as kiln compares it (policy/policy.ts `extensionKeys`): `sha256:<hex>` names an
 * artifact's exact bytes; anything else is a path to the extension file, relative to the config file, compared
 * after resolving symlinks. Never a name an artifact records about itself.
 */
export function operatorKey(configFile: string, key: string): string {
  if (/^sha256:[0-9a-fA-F]{64}$/.test(key)) return key.toLowerCase();
  const path = resolve(dirname(configFile), key);
  try {
    return realpathSync(path);
  } catch {
    return path; // no such file (yet): it will match nothing, and the registry warns
  }
}

/** A per-extension table with its keys made operator keys; two spellings of one file are an error. */
function keyed<T>(file: string, section: string, table: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [key, value] of Object.entries(table)) {
    const k = operatorKey(file, key);
    if (Object.hasOwn(out, k)) throw new ConfigError(`${file}: ${section} names ${k} twice`);
    out[k] = value;
  }
  return out;
}

function readNet(file: string, v: unknown): NetPolicy {
  if (v === undefined) return DEFAULT_NET_POLICY;
  if (!isTable(v)) throw new ConfigError(`${file}: [net] must be a table`);
  const out: NetPolicy = { ...DEFAULT_NET_POLICY };
  for (const [k, x] of Object.entries(v)) {
    if (k === 'emptyMeansUnrestricted' || k === 'denyPrivate') {
      if (typeof x !== 'boolean') throw new ConfigError(`${file}: [net] ${k} must be true or false`);
      out[k] = x;
    } else if (k === 'maxResponseBytes' || k === 'timeoutMs' || k === 'maxConcurrent' || k === 'maxRedirects') {
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new ConfigError(`${file}: [net] ${k} must be a positive integer`);
      out[k] = x;
    } else {
      throw new ConfigError(`${file}: [net] has an unknown key "${k}"`);
    }
  }
  return out;
}

const MAX_MEMORY = 512 * 1024 * 1024; // the engine's hard ceiling on linear memory
const MAX_RESULT_BYTES = 64 * 1024 * 1024; // clients disconnect on messages much larger than this

function readLimits(file: string, v: unknown): Limits {
  if (v === undefined) return DEFAULT_LIMITS;
  if (!isTable(v)) throw new ConfigError(`${file}: [limits] must be a table`);
  const positive = (k: string, x: unknown, max = Infinity) => {
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 1 || x > max) throw new ConfigError(`${file}: [limits] ${k} must be a positive integer${max < Infinity ? ` up to ${max}` : ''}`);
    return x;
  };
  const out: Limits = { ...DEFAULT_LIMITS, memory: {} };
  for (const [k, x] of Object.entries(v)) {
    if (k === 'timeoutMs') out.timeoutMs = positive(k, x, 2 ** 31 - 1);
    else if (k === 'cpuMs') out.cpuMs = positive(k, x, 2 ** 31 - 1);
    else if (k === 'maxResultBytes') out.maxResultBytes = positive(k, x, MAX_RESULT_BYTES);
    else if (k === 'totalMemoryBytes') out.totalMemoryBytes = positive(k, x, Number.MAX_SAFE_INTEGER);
    else if (k === 'memoryLimitBytes') out.memoryLimitBytes = positive(k, x, MAX_MEMORY);
    else if (k === 'memory') {
      if (!isTable(x)) throw new ConfigError(`${file}: [limits.memory] must be a table of file name → bytes`);
      for (const [name, n] of Object.entries(x)) out.memory[name] = positive(`memory."${name}"`, n, MAX_MEMORY);
      out.memory = keyed(file, '[limits.memory]', out.memory);
    } else throw new ConfigError(`${file}: [limits] has an unknown key "${k}"`);
  }
  return out;
}

function readSessions(file: string, v: unknown): SessionSettings {
  if (v === undefined) return DEFAULT_SESSION_SETTINGS;
  if (!isTable(v)) throw new ConfigError(`${file}: [sessions] must be a table`);
  const out = { ...DEFAULT_SESSION_SETTINGS };
  for (const [k, x] of Object.entries(v)) {
    if (k === 'isolation') {
      if (x !== 'worker' && x !== 'inline') throw new ConfigError(`${file}: [sessions] isolation must be "worker" or "inline"`);
      out.isolation = x;
      continue;
    }
    if (k === 'store') {
      if (typeof x !== 'string' || !URL.canParse(x) || !STORE_SCHEMES.includes(new URL(x).protocol)) throw new ConfigError(`${file}: [sessions] store must be a redis://, rediss://, valkey:// or valkeys:// URL (for example "redis://127.0.0.1:6379")`);
      out.store = x;
      continue;
    }
    if (k !== 'idleTtlMs' && k !== 'maxInstances' && k !== 'maxSessions') throw new ConfigError(`${file}: [sessions] has an unknown key "${k}" (idleTtlMs, maxInstances, maxSessions, isolation, store)`);
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new ConfigError(`${file}: [sessions] ${k} must be a positive integer`);
    out[k] = x;
  }
  return out;
}

function readAllowEnv(file: string, v: unknown): string[] {
  if (v === undefined) return [];
  if (!isTable(v)) throw new ConfigError(`${file}: [scripting] must be a table`);
  const list = v.allowEnv ?? [];
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) throw new ConfigError(`${file}: [scripting] allowEnv must be a list of names`);
  return list;
}

function readCeiling(file: string, v: unknown): { enabled: boolean; maxProcesses: number; extensions: Record<string, string[]> } {
  if (v === undefined) return { enabled: true, maxProcesses: DEFAULT_MAX_PROCESSES, extensions: {} };
  const bad = (msg: string) => new ConfigError(`${file}: [commands] ${msg}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('must be a table');
  const t = v as Record<string, unknown>;
  for (const k of Object.keys(t)) if (k !== 'enabled' && k !== 'extensions' && k !== 'maxProcesses') throw bad(`has an unknown key "${k}" (enabled, maxProcesses, extensions)`);
  if (t.enabled !== undefined && typeof t.enabled !== 'boolean') throw bad('enabled must be true or false');
  const max = t.maxProcesses ?? DEFAULT_MAX_PROCESSES;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_PROCESSES_CEILING) throw bad(`maxProcesses must be an integer from 1 to ${MAX_PROCESSES_CEILING}`);
  const exts = t.extensions ?? {};
  if (typeof exts !== 'object' || exts === null || Array.isArray(exts)) throw bad('extensions must be a table of file name → [command names]');
  for (const [name, list] of Object.entries(exts)) {
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) throw bad(`extensions."${name}" must be a list of command names`);
  }
  keyed(file, '[commands.extensions]', exts as Record<string, string[]>); // two spellings of one file: an error
  return { enabled: t.enabled !== false, maxProcesses: max, extensions: exts as Record<string, string[]> };
}
