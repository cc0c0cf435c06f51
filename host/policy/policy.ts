// The operator's settings (kiln.toml): ceilings on what extensions may declare, and the server's limits.
import { OPEN_CEILING, type CommandCeiling } from '../capabilities/commands/commands.js';
import { DEFAULT_NET_POLICY, type NetPolicy } from '../capabilities/net/net.js';
import { operatorEntry, type ExtensionIdentity } from './extension-identity.js';
import { DEFAULT_AUDIT, type AuditSettings } from './audit-log.js';
import { NO_GRANTS, type Grants } from './grants.js';
import type { SecretsConfig } from '../capabilities/secrets/secrets.js';
import { DEFAULT_APPROVALS, type ApprovalSettings } from './approvals/settings.js';
import { DEFAULT_FS, type FsSettings } from '../capabilities/fs/settings.js';

export { extensionKeys, operatorEntry, type ExtensionIdentity } from './extension-identity.js';

export interface Limits {
  /** A call's time limit when its tool declares no timeoutMs (and for scripts). */
  timeoutMs: number;
  /** QuickJS heap limit of each extension's guest, in bytes. */
  memoryLimitBytes: number;
  /** Per extension (an operator key, see `operatorEntry`): its own heap limit. */
  memory: Record<string, number>;
  /** The largest tool result (as JSON) sent to a client; a larger one is a ResultTooLargeError. */
  maxResultBytes: number;
  /** The server's ceiling on guest memory: live guests' heap limits (plus overhead) never add up past it. */
  totalMemoryBytes: number;
  /** CPU time a call may spend running guest code (policy/limits.ts: the lower of this and the tool's cpuMs). */
  cpuMs?: number;
}

export interface SessionSettings {
  /** A session unused this long ends. */
  idleTtlMs: number;
  /** Live guests across all sessions before idle sessions' guests are freed. */
  maxInstances: number;
  /** Sessions a server holds; a new one past it closes the least recently used idle session, or is refused. */
  maxSessions: number;
  /** "worker": each session's guests run on its own thread, so a guest that spins until its deadline holds
   *  no one else up; "inline": on the caller's thread (cheaper; for embedding and benchmarks). */
  isolation: 'worker' | 'inline';
  /** A Redis or Valkey URL: sessions' vars are kept there, shared by the deployment's replicas
   *  (sessions/store.ts); none: each process keeps its own. */
  store?: string;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = { idleTtlMs: 30 * 60 * 1000, maxInstances: 256, maxSessions: 1024, isolation: 'worker' };

export interface OperatorPolicy {
  /** [policy] mode and [grants]: what the operator grants each extension (policy/grants.ts). */
  grants: Grants;
  commands: CommandCeiling;
  net: NetPolicy;
  /** [scripting] allowEnv: server environment variables scripts' `process.env` shows (when they are set), and,
   *  in mode "declared", every extension's (for the names its tools declare; capabilities/env/env.ts). */
  allowEnv: string[];
  limits: Limits;
  sessions: SessionSettings;
  browser: BrowserSettings;
  /** [audit]: the audit log (policy/audit-log.ts). */
  audit: AuditSettings;
  /** [secrets.*]: headers the host adds to the requests of tools that declare them (capabilities/secrets/secrets.ts). */
  secrets?: SecretsConfig;
  /** [approvals]: which operations ask a human first (policy/approvals/settings.ts, policy/approvals/gate.ts). */
  approvals: ApprovalSettings;
  /** [fs]: the workspace root and size caps of allow.fs (capabilities/fs/settings.ts). */
  fs: FsSettings;
}

/** [browser]: the one browser of a server (capabilities/browser/chromium.ts). */
export interface BrowserSettings {
  /** false: no tool gets a page or a context, whatever it declares. */
  enabled: boolean;
  /** Debian's chromium by default; Playwright's own download is never used. */
  executablePath: string;
  headless: boolean;
}

export const DEFAULT_BROWSER: BrowserSettings = { enabled: true, executablePath: '/usr/bin/chromium', headless: true };

export const DEFAULT_LIMITS: Limits = { timeoutMs: 30_000, memoryLimitBytes: 64 * 1024 * 1024, memory: {}, maxResultBytes: 4 * 1024 * 1024, totalMemoryBytes: 4 * 1024 * 1024 * 1024 };

export const DEFAULT_POLICY: OperatorPolicy = {
  grants: NO_GRANTS, commands: OPEN_CEILING, net: DEFAULT_NET_POLICY, allowEnv: [], limits: DEFAULT_LIMITS, sessions: DEFAULT_SESSION_SETTINGS, browser: DEFAULT_BROWSER, audit: DEFAULT_AUDIT,
  approvals: DEFAULT_APPROVALS,
  fs: DEFAULT_FS,
};

export function memoryLimit(policy: OperatorPolicy, ext: ExtensionIdentity): number {
  return operatorEntry(policy.limits.memory, ext) ?? policy.limits.memoryLimitBytes;
}
