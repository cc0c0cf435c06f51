// One MCP server's host: the registry's tools, the sessions they run in, and kiln's own tools (kiln_extensions,
// kiln_close_session, run_script), as the MCP side sees them: listTools, callTool (never throws: a failure is an
// error result) and kiln's notices. Every transport (stdio, HTTP) and every protocol feature (lean calls,
// watching, config changes) works on this one object; none of them is imported here.
import type { Tool } from '@modelcontextprotocol/server';
import { KilnError, ToolError } from '../errors.js';
import { guestLog } from '../untrusted/terminal.js';
import type { Registry } from '../extensions/registry.js';
import type { ToolEntry } from '../extensions/loaded.js';
import { SCRIPT_UNIT, Sessions } from '../sessions/sessions.js';
import { ScriptRunner } from '../sessions/scripts.js';
import { callTool } from '../sessions/call.js';
import { GuestInstance } from '../engine/instance.js';
import { withinReach, type Authority } from '../policy/authority.js';
import { reachableTools, toolsByFile } from '../capabilities/tools/tools.js';
import type { AskVia } from '../policy/approvals/gate.js';
import { annotations } from './annotations.js';
import { AUDIT_TOOL, auditReport } from './audit.js';
import { progressSink, type ProgressParams } from './progress.js';
import { toolResult, type ToolResult } from './result.js';

export const CLOSE_SESSION_TOOL = {
  name: 'kiln_close_session',
  description: 'End a session now: its guests, vars, persistent processes and cookies. Default: the session of this call.',
  inputSchema: {
    type: 'object' as const,
    properties: { session: { type: 'string', description: 'the session to close' } },
    additionalProperties: false,
  },
};


/** An error's text is cut here: its message and the start of its stack are what a reader needs. */
const MAX_ERROR_CHARS = 64 * 1024;

export function errorResult(e: unknown): ToolResult {
  let text = e instanceof ToolError
    ? (e.detail.startsWith(e.message) ? e.detail : `${e.message}\n\n${e.detail}`)
    : e instanceof KilnError ? `${e.name}: ${e.message}` : `internal error: ${(e as Error)?.message ?? e}`;
  if (text.length > MAX_ERROR_CHARS) text = `${text.slice(0, MAX_ERROR_CHARS)}\n… [${text.length - MAX_ERROR_CHARS} more characters cut]`;
  return { isError: true, content: [{ type: 'text', text: text.trimEnd() }] };
}

export const RUN_SCRIPT_TOOL = {
  name: 'run_script',
  description: "Run JavaScript or TypeScript in a session's sandbox. The value of its last expression (awaited) is the result; it can call any loaded tool as plugins[name](args) and use vars. Always returns {status, result, logs, error}.",
  inputSchema: {
    type: 'object' as const,
    properties: {
      code: { type: 'string', description: 'the script' },
      session: { type: 'string', description: 'the session to run in (default "default")' },
      timeoutMs: { type: 'integer', minimum: 1, description: "time limit (default: the server's)" },
    },
    required: ['code'],
    additionalProperties: false,
  },
};

export type NoticeLevel = 'info' | 'warning' | 'error';

/** The queue of a session's scripts (they run in a guest of their own). */


export class McpHost {
  readonly sessions: Sessions;
  private readonly scripts: ScriptRunner;
  /** A tool's result as MCP content (mcp/result.ts), or an error result when it cannot be sent. */
  private readonly ok = (value: unknown, name = 'the call'): ToolResult => {
    try {
      return toolResult(value, this.registry.policy.limits.maxResultBytes, name);
    } catch (e) {
      return errorResult(e);
    }
  };
  /** Also told every guest log line, with its session (the MCP logging capability). */
  onGuestLog: ((session: string, source: string, level: string, message: string) => void) | undefined;
  /** Also told every message of kiln's own (`notice`): the transports send it to their clients. */
  onNotice: ((level: NoticeLevel, text: string) => void) | undefined;

  /** A message of kiln's own: on stderr as "kiln: text", and to every client as notifications/message from
   *  logger "kiln" (at or above the level the client chose; `sendNotice`). */
  notice(level: NoticeLevel, text: string): void {
    this.log(`kiln: ${text}`);
    this.onNotice?.(level, text);
  }

  /** What a client that has just connected is told: the files that failed to load, and the loader's warnings. */
  startupNotices(): { level: NoticeLevel; text: string }[] {
    return [
      ...this.registry.failures.map((f) => ({ level: 'error' as const, text: `not loaded: ${f.error}` })),
      ...this.registry.warnings.map((w) => ({ level: 'warning' as const, text: w })),
    ];
  }

  constructor(readonly registry: Registry, private readonly log: (line: string) => void) {
    this.sessions = new Sessions(
      registry.engine, 'mcp',
      (session, ext, level, message) => {
        const source = ext.artifact.manifest.source.name;
        for (const line of guestLog([session, source], level, message)) this.log(line);
        this.onGuestLog?.(session, source, level, message);
      },
      registry.policy, registry.policy.sessions,
    );
    // A server keeps a blank engine instance ready, so a new session's guest costs its load only (with
    // worker isolation, each worker keeps its own: engine/worker.ts).
    if (registry.policy.sessions.isolation === 'inline') GuestInstance.keepSpares(registry.engine);
    this.scripts = new ScriptRunner(registry);
  }

  listTools(): Tool[] {
    // What a tool can reach is what it and the tools it may call through plugins[...] (its file's, and those
    // its allow.tools names, transitively: capabilities/tools/tools.ts) may come to use (policy/grants.ts withinReach).
    const memo = new Map<ToolEntry, Authority>();
    const effective = (e: ToolEntry) => {
      let a = memo.get(e);
      if (!a) memo.set(e, (a = withinReach(e.manifest.allow, { file: e.extension.file, sha256: e.extension.artifact.sha256 }, this.registry.policy)));
      return a;
    };
    const loaded = new Map([...this.registry.tools].map(([name, e]) => [name, { manifest: e.manifest, file: e.extension.file }]));
    const byFile = toolsByFile(loaded);
    const reachOf = (name: string) => {
      const reachable = [...reachableTools(name, loaded, byFile)].map((n) => this.registry.tools.get(n)!);
      const all = reachable.map(effective);
      return {
        commands: all.some((a) => a.commands.length > 0),
        net: all.some((a) => a.net.length > 0),
        secrets: reachable.some((e) => (e.manifest.allow.secrets ?? []).length > 0),
        browser: all.some((a) => a.browser.length > 0),
        fsWrite: all.some((a) => a['fs.write'].length > 0),
      };
    };
    const tools = [...this.registry.tools.values()]
      .filter((t) => t.manifest.exposeAsTool)
      .map(({ manifest: m }): Tool => ({
        name: m.name,
        ...(m.title !== undefined ? { title: m.title } : {}),
        description: m.description,
        inputSchema: (m.inputSchema ?? { type: 'object' }) as Tool['inputSchema'],
        ...(m.outputSchema ? { outputSchema: m.outputSchema as Tool['outputSchema'] } : {}),
        annotations: {
          ...(m.title !== undefined ? { title: m.title } : {}),
          ...annotations(m, reachOf(m.name)),
        },
      }));
    return [AUDIT_TOOL, CLOSE_SESSION_TOOL, RUN_SCRIPT_TOOL, ...tools];
  }

  /** `signal`: aborted when the client cancels the call or goes away; the call's guest is then stopped.
   *  `notify`: sends a notification about this request (progress, when `meta` carries a progressToken).
   *  `via`: how to ask this request's client for approvals (`askVia`). */
  async callTool(
    name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined,
    signal?: AbortSignal, notify?: (n: { method: 'notifications/progress'; params: ProgressParams }) => Promise<void>,
    defaultSession = 'default', via?: AskVia,
  ): Promise<ToolResult> {
    const cancel = signal; // the SDK's: aborted when the client cancels the call or goes away
    const token = meta?.progressToken;
    const progress = notify && (typeof token === 'string' || typeof token === 'number')
      ? progressSink(token, (params) => void notify({ method: 'notifications/progress', params }).catch(() => {}))
      : undefined;
    try {
      const sessionName = typeof meta?.session === 'string' ? meta.session : defaultSession;
      if (name === AUDIT_TOOL.name) return this.ok(auditReport(this.registry, args?.include_schema === true));
      if (name === RUN_SCRIPT_TOOL.name) {
        // Always a protocol-level success: the script's own outcome is in `status`.
        const a = args ?? {};
        const bad = typeof a.code !== 'string' ? 'code must be a string'
          : a.session !== undefined && typeof a.session !== 'string' ? 'session must be a string'
          : a.timeoutMs !== undefined && !(Number.isInteger(a.timeoutMs) && (a.timeoutMs as number) > 0) ? 'timeoutMs must be a positive integer' : undefined;
        if (bad) return this.ok({ status: 'error', result: null, logs: [], error: { name: 'InvalidArgumentsError', message: bad, stack: '' } });
        const target = (a.session as string | undefined) ?? sessionName;
        return this.ok(await this.sessions.run(target, SCRIPT_UNIT, (s) => this.scripts.run(s, a.code as string, { timeoutMs: a.timeoutMs as number | undefined, signal: cancel, via }), cancel));
      }
      if (name === CLOSE_SESSION_TOOL.name) {
        const target = typeof args?.session === 'string' ? args.session : sessionName;
        return this.ok({ session: target, closed: this.sessions.close(target) });
      }
      const entry = this.registry.tools.get(name);
      if (!entry || !entry.manifest.exposeAsTool) return errorResult(new KilnError(`no tool named "${name}" is exposed by this server`));
      return this.ok(await this.sessions.run(sessionName, entry.extension.file, (session) => callTool(this.registry, session, name, args ?? {}, cancel, progress, via), cancel), `tool "${name}"`);
    } catch (e) {
      return errorResult(e);
    } finally {
      progress?.close();
    }
  }

  close(): void {
    this.sessions.closeAll();
  }
}

