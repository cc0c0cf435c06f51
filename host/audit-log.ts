// The audit log ([audit] path in kiln.toml): one JSON line per tool call (start and end) and per capability
// decision, appended and flushed line by line so it is readable after a crash or SIGTERM, and rotated by size
// (the full file becomes `<path>.1`, replacing an older one).
//
// Invariants:
//  - Never written: environment values, request or response bodies, command output, URL query strings or
//    fragments (they carry tokens), argument values. A target is a command name, a URL's origin and path, a
//    browser method, a tool name, a workspace path (fs.*: never the file's content).
//  - A failure to write (disk full, the file removed) never fails a call: the server says so once on stderr.
import { appendFileSync, renameSync, statSync } from 'node:fs';

export interface AuditSettings {
  /** Absolute path of the log; undefined: no audit log. */
  path?: string;
  /** Rotate once the file is this large. */
  maxBytes: number;
}

export const DEFAULT_AUDIT: AuditSettings = { maxBytes: 10 * 1024 * 1024 };

/** Who did it: the call's session, the extension file and artifact hash, the tool. */
export interface AuditSubject {
  session: string;
  extension: string;
  sha256: string;
  tool: string;
}

export type AuditRecord =
  | (AuditSubject & { type: 'call'; phase: 'start' })
  | (AuditSubject & { type: 'call'; phase: 'end'; durationMs: number; outcome: 'ok' | 'error'; error?: string })
  | (AuditSubject & { type: 'decision'; op: string; target: string; verdict: 'allow' | 'deny'; by: string; reason?: string; durationMs: number })
  /** [approvals] (approval-gate.ts): the rules' verdict and the rule that decided ("decision"); a human asked
   *  ("asked") and their answer ("answered": once, session, always, decline, cancel, timeout, cancelled,
   *  error); an earlier answer that covered it ("remembered"); a required approval nobody could be asked for
   *  ("unasked"). `target` is approvals.ts `safeTarget`: no argument values. */
  /** A source whose (re)build would read a file a guest wrote through allow.fs was refused (registry.ts):
   *  `input` that file, `writtenBy` and `tool` who wrote it. */
  | { type: 'build'; extension: string; verdict: 'deny'; input: string; writtenBy: string; tool: string; reason: string }
  | (AuditSubject & {
    type: 'approval'; event: 'decision' | 'asked' | 'answered' | 'remembered' | 'unasked'; op: string; target: string;
    verdict?: 'allow' | 'require' | 'deny'; rule?: string; answer?: string; durationMs?: number;
  });

/** What a capability call is aimed at, as the log may show it (see the invariants above). */
export function auditTarget(kind: string, request: unknown): string {
  const r = (typeof request === 'object' && request !== null ? request : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v.slice(0, 300) : '');
  switch (kind) {
    case 'http.fetch': {
      try {
        const u = new URL(str(r.url));
        return `${str(r.method) || 'GET'} ${u.origin}${u.pathname}`.slice(0, 500);
      } catch {
        return 'invalid URL';
      }
    }
    case 'browser.call': {
      const method = `${str(r.target)}.${str(r.method)}`;
      if (r.method !== 'goto' || !Array.isArray(r.args)) return method;
      try {
        const u = new URL(str(r.args[0]));
        return `${method} ${u.origin}${u.pathname}`.slice(0, 500);
      } catch {
        return method;
      }
    }
    case 'plugins.call': return str(r.tool);
    case 'fs.rename': return `${str(r.from)} -> ${str(r.to)}`;
    case 'fs.readFile': case 'fs.writeFile': case 'fs.appendFile': case 'fs.readdir': case 'fs.stat': case 'fs.mkdir': case 'fs.rm':
      return str(r.path); // the path as the guest gave it; never the data
    case 'http.read': return 'response body';
    default: return str(r.name); // commands.*
  }
}

export class AuditLog {
  private failed = false;
  private size: number;

  constructor(private readonly settings: Required<AuditSettings>, private readonly warn: (line: string) => void = (l) => process.stderr.write(l + '\n')) {
    this.size = statSync(settings.path, { throwIfNoEntry: false })?.size ?? 0;
  }

  write(record: AuditRecord): void {
    const line = JSON.stringify({ time: new Date().toISOString(), ...record }) + '\n';
    try {
      if (this.size + line.length > this.settings.maxBytes && this.size > 0) {
        renameSync(this.settings.path, `${this.settings.path}.1`);
        this.size = 0;
      }
      appendFileSync(this.settings.path, line, { mode: 0o600 });
      this.size += Buffer.byteLength(line);
      this.failed = false;
    } catch (e) {
      if (!this.failed) this.warn(`kiln: the audit log ${this.settings.path} cannot be written: ${(e as Error).message}`);
      this.failed = true;
    }
  }
}
