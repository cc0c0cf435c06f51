// One MCP server's host: the registry's tools, the sessions they run in, and kiln's own tools (kiln_extensions,
// kiln_close_session, run_script), as the MCP side sees them: listTools (by pages), callTool (never throws: a
// failure is an error result) and kiln's notices. Every transport (stdio, HTTP), protocol revision and protocol
// feature (lean calls, watching, config changes) works on this one object; none of them is imported here.
//
// Invariants:
//  - Tools are listed in one stable order (kiln's own, then the rest by advertised name) and paged by a cursor
//    naming the last tool of the page before, so a client walking the pages while the tools change never sees
//    one twice; a cursor kiln did not make is refused (InvalidCursorError).
//  - A tool is called by the name it is advertised as ([mcp] toolNames: extensions/tool-names.ts), or by its
//    own name when it is advertised at all; a tool whose advertised name collides is not served to clients.
//  - A call names its kiln session in `_meta.session`; one that names none runs in the transport's default
//    session, or, where there is none (a 2026-07-28 HTTP request), in a session of its own that ends with it.
import { randomUUID } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/server';
import { CallStoppedError, KilnError, ToolError } from '../errors.js';
import { DEFAULT_MCP, type McpSettings } from '../config/config.js';
import type { Registry } from '../extensions/registry.js';
import type { ToolEntry } from '../extensions/loaded.js';
import { SCRIPT_UNIT, Sessions, validSessionName } from '../sessions/sessions.js';
import { ScriptRunner } from '../sessions/scripts.js';
import type { Session } from '../sessions/session.js';
import { callTool } from '../sessions/call.js';
import { GuestInstance } from '../engine/instance.js';
import { withinReach, type Authority } from '../policy/authority.js';
import { reachableTools, toolsByFile } from '../capabilities/tools/tools.js';
import type { AskVia } from '../policy/approvals/gate.js';
import { annotations } from './annotations.js';
import type { CallerLimits } from '../policy/limits.js';
import { STDIO_PRINCIPAL, type Principal } from './principals.js';
import type { ServerLog } from './log.js';
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

/** kiln's own tools, listed first, in this order. */
const OWN_TOOLS = [AUDIT_TOOL, CLOSE_SESSION_TOOL, RUN_SCRIPT_TOOL];

/** A tools/list cursor kiln did not make. */
export class InvalidCursorError extends KilnError {
  override name = 'InvalidCursorError';
}

/** The `_meta` key of an advertised tool naming the tool it stands for, when the two differ. */
export const TOOL_NAME_META = 'kiln/name';

/** What the transport says about one call. */
export interface CallOptions {
  /** Aborted when the client cancels the call or goes away; the call's guest is then stopped. */
  signal?: AbortSignal;
  /** Sends a notification about this request (progress, when `_meta` carries a progressToken). */
  notify?: (n: { method: 'notifications/progress'; params: ProgressParams }) => Promise<void>;
  /** The session of a call that names none in `_meta.session`; null: a session of its own, ended with the call. */
  session?: string | null;
  /** How to ask this request's client for approvals (mcp/elicit.ts, mcp/approval-round.ts). */
  via?: AskVia;
  /** Also told the log lines of the call's session while the call runs (2026-07-28: logs go with a request). */
  log?: (source: string, level: string, message: string) => void;
  /** Who calls (mcp/principals.ts): its sessions are its own, it sees only its tools, its limits apply. */
  principal?: Principal;
}

/** Whether `name` is one of the tools a principal's patterns name (`*`: any run of characters). */
export function principalMayCall(p: Principal | undefined, name: string): boolean {
  const patterns = p?.settings.tools;
  if (!patterns || name === CLOSE_SESSION_TOOL.name) return true;
  return patterns.some((pat) => new RegExp(`^${pat.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(name));
}

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
  /** The log sink of the call running now in each guest, by session and queue unit (CallOptions.log): calls to
   *  one guest run one at a time, so what it logs meanwhile is that call's. */
  private readonly callLogs = new Map<string, NonNullable<CallOptions['log']>>();
  /** Also told every message of kiln's own (`notice`): the transports send it to their clients. */
  onNotice: ((level: NoticeLevel, text: string) => void) | undefined;

  /** A message of kiln's own: on stderr as "kiln: text", and to every client as notifications/message from
   *  logger "kiln" (at or above the level the client chose; `sendNotice`). `detail`, when given, is what stderr
   *  gets instead: what only the operator may read (sessions' names, which are their clients' own). */
  notice(level: NoticeLevel, text: string, detail?: string): void {
    this.log.kiln(detail ?? text, level);
    this.onNotice?.(level, text);
  }

  /** What a client that has just connected is told: the files that failed to load, and the loader's warnings. */
  startupNotices(): { level: NoticeLevel; text: string }[] {
    return [
      ...this.registry.failures.map((f) => ({ level: 'error' as const, text: `not loaded: ${f.error}` })),
      ...this.registry.warnings.map((w) => ({ level: 'warning' as const, text: w })),
    ];
  }

  constructor(readonly registry: Registry, readonly log: ServerLog) {
    this.sessions = new Sessions(
      registry.engine, 'mcp',
      (session, ext, level, message) => {
        const source = ext.artifact.manifest.source.name;
        this.log.guest(session, source, level, message);
        this.onGuestLog?.(session, source, level, message);
        this.callLogs.get(logKey(session, ext.hostKind === 'script' ? SCRIPT_UNIT : ext.file))?.(source, level, message);
      },
      registry.policy, registry.policy.sessions,
    );
    // A server keeps a blank engine instance ready, so a new session's guest costs its load only (with
    // worker isolation, each worker keeps its own: engine/worker.ts).
    if (registry.policy.sessions.isolation === 'inline') GuestInstance.keepSpares(registry.engine);
    this.scripts = new ScriptRunner(registry);
  }

  /** [mcp]: page size, tool names, cache hints, tasks (applied live by mcp/config-watch.ts). */
  get settings(): McpSettings {
    return this.mcp;
  }
  set settings(next: McpSettings) {
    this.mcp = next;
    this.registry.setNaming(next.toolNames);
  }
  private mcp: McpSettings = DEFAULT_MCP;

  /** One page of the tools `principal` may call (`pageSize` of them: [mcp] pageSize; 0, all), from after `cursor`. */
  listTools(cursor?: string, pageSize = this.mcp.pageSize, principal?: Principal): { tools: Tool[]; nextCursor?: string } {
    const all = this.allTools().filter((t) => principalMayCall(principal, t.name) || principalMayCall(principal, (t._meta?.[TOOL_NAME_META] as string | undefined) ?? t.name));
    let start = 0;
    if (cursor !== undefined) {
      const after = readCursor(cursor);
      const owns = all.filter((t) => OWN_TOOLS.some((o) => o.name === t.name));
      const own = owns.findIndex((t) => t.name === after);
      // kiln's own first, in their order; then by name: the first tool past the cursor's name.
      start = own >= 0 ? own + 1 : owns.length + countBelow(all.slice(owns.length), after);
    }
    if (pageSize === 0) return { tools: all.slice(start) };
    const tools = all.slice(start, start + pageSize);
    const more = start + pageSize < all.length;
    return more ? { tools, nextCursor: makeCursor(tools[tools.length - 1].name) } : { tools };
  }

  /** Every tool, as listed: kiln's own, then the exposed tools by advertised name. */
  allTools(): Tool[] {
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
    const { asShown } = this.registry.advertised();
    const tools = [...this.registry.tools.values()]
      .filter((t) => t.manifest.exposeAsTool && asShown.has(t.manifest.name))
      .map(({ manifest: m }): Tool => ({
        name: asShown.get(m.name)!,
        ...(asShown.get(m.name) !== m.name ? { _meta: { [TOOL_NAME_META]: m.name } } : {}),
        ...(m.title !== undefined ? { title: m.title } : {}),
        description: m.description,
        inputSchema: (m.inputSchema ?? { type: 'object' }) as Tool['inputSchema'],
        ...(m.outputSchema ? { outputSchema: m.outputSchema as Tool['outputSchema'] } : {}),
        annotations: {
          ...(m.title !== undefined ? { title: m.title } : {}),
          ...annotations(m, reachOf(m.name)),
        },
      }));
    tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...OWN_TOOLS, ...tools];
  }

  /** Refuses a session `principal` may not open: past its [principals.<name>.limits] maxSessions. */
  private checkSessions(principal: Principal | undefined, session: string): void {
    const max = principal?.settings.limits?.maxSessions;
    if (max === undefined || this.sessions.has(session)) return;
    const held = this.sessions.count(`${principal!.key}:`);
    if (held >= max) {
      throw new KilnError(`this client holds ${held} sessions, the most [principals."${principal!.id}".limits] maxSessions allows; close one (kiln_close_session) or raise maxSessions`);
    }
  }

  /** Why a client's `name` calls nothing: a name that several tools would be advertised as, or no such tool
   *  (and the files that did not load, which may have held it). */
  private notExposed(name: string): string {
    const { collisions } = this.registry.advertised();
    for (const [shown, tools] of collisions) {
      if (shown === name || tools.includes(name)) {
        return `tool "${name}" is not served over MCP: under [mcp] toolNames = "${this.registry.naming}" ${tools.map((t) => `"${t}"`).join(' and ')} would all be advertised as "${shown}"; rename one, or set [mcp] toolNames = "declared"`;
      }
    }
    const failed = this.registry.failures.length;
    return `no tool named "${name}" is exposed by this server${failed ? ` (${failed} extension file(s) did not load: kiln_extensions lists them under "failures")` : ''}`;
  }

  /** The loaded tool a client's `name` stands for: its advertised name, or its own name when it is advertised. */
  private toolNamed(name: string): string | undefined {
    const { toTool, asShown } = this.registry.advertised();
    return toTool.get(name) ?? (asShown.has(name) ? name : undefined);
  }

  /** Each running call's own signal, with its principal (stopCalls aborts them all, stopCallsOf some);
   *  `stopped`: why calls are stopped from now on. */
  private readonly running = new Map<AbortController, Principal | undefined>();
  private stopped: CallStoppedError | undefined;

  /** Calls running now. */
  get callsInFlight(): number {
    return this.running.size;
  }

  /** Resolves true once no call runs, false when `ms` pass first. */
  async idle(ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (this.running.size > 0) {
      if (Date.now() >= end) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
    return true;
  }

  /** Stop every call now (the server is stopping): each, and every call after, is answered with `reason`
   *  (CallStoppedError). */
  stopCalls(reason: string): void {
    this.stopped = new CallStoppedError(reason);
    for (const c of this.running.keys()) c.abort(this.stopped);
  }

  /** Stop the calls of the principals `which` picks (one was revoked), answered with `reason`. */
  stopCallsOf(which: (p: Principal | undefined) => boolean, reason: string): number {
    let n = 0;
    for (const [c, p] of this.running) if (which(p)) n++, c.abort(new CallStoppedError(reason));
    return n;
  }

  /** Call tool `name` (as the client names it) with `args`; `meta`: the request's `_meta` (session, progressToken). */
  async callTool(name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, opts: CallOptions = {}): Promise<ToolResult> {
    const { notify, via } = opts;
    // The call's signal: the transport's (the client cancelled, or went away), or stopCalls'.
    const both = new AbortController();
    const cancel = both.signal;
    const clientSignal = opts.signal;
    const fromClient = () => both.abort(clientSignal?.reason);
    if (clientSignal?.aborted) fromClient();
    else if (this.stopped) both.abort(this.stopped);
    clientSignal?.addEventListener('abort', fromClient, { once: true });
    this.running.set(both, opts.principal);
    const token = meta?.progressToken;
    const progress = notify && (typeof token === 'string' || typeof token === 'number')
      ? progressSink(token, (params) => void notify({ method: 'notifications/progress', params }).catch(() => {}))
      : undefined;
    const principal = opts.principal;
    const named = typeof meta?.session === 'string' ? meta.session : opts.session === undefined ? 'default' : opts.session;
    // A principal's sessions are its own: the names it gives are in its own space (stdio has one client).
    const remote = principal !== undefined && principal !== STDIO_PRINCIPAL;
    const own = (n: string) => (remote ? `${principal.key}:${n}` : n);
    const sessionName = own(named ?? `call:${randomUUID()}`);
    // Who calls, for everything the call starts: its limits, the tools its scripts may call (by either name a
    // tool has), the principal its "always" approvals are kept for.
    const caller: CallerLimits | undefined = remote ? {
      ...principal.settings.limits, setting: `[principals."${principal.id}".limits]`, principal: principal.id,
      mayCall: (tool: string) => principalMayCall(principal, tool) || principalMayCall(principal, this.registry.advertised().asShown.get(tool) ?? tool),
      mayCallSetting: `[principals."${principal.id}"] tools`,
    } : undefined;
    // While it runs (not while it waits its turn), the call's guest's log lines go with it.
    const logged = <T>(unit: string, run: () => Promise<T>, session = sessionName): Promise<T> => {
      const sink = opts.log;
      if (!sink) return run();
      const key = logKey(session, unit);
      this.callLogs.set(key, sink);
      return run().finally(() => {
        if (this.callLogs.get(key) === sink) this.callLogs.delete(key);
      });
    };
    // A call is answered once what it wrote to its session's vars is in the shared store (sessions/store.ts).
    const stored = async <T>(session: Session, run: () => Promise<T>): Promise<T> => {
      try {
        return await run();
      } finally {
        await session.flushVars();
      }
    };
    try {
      if (OWN_TOOLS.some((t) => t.name === name) && !principalMayCall(principal, name)) return errorResult(new KilnError(this.notExposed(name)));
      if (named !== null && !validSessionName(named)) throw new KilnError(`session name ${JSON.stringify(named.slice(0, 140))} must be 1-128 characters of letters, digits and . _ : @ -`);
      if (!OWN_TOOLS.some((t) => t.name === name)) this.checkSessions(principal, sessionName); // run_script checks its own target
      if (name === AUDIT_TOOL.name) return this.ok(auditReport(this.registry, args?.include_schema === true, principal?.settings.tools && ((t) => principalMayCall(principal, t))));
      if (name === RUN_SCRIPT_TOOL.name) {
        // Always a protocol-level success: the script's own outcome is in `status`.
        const a = args ?? {};
        const bad = typeof a.code !== 'string' ? 'code must be a string'
          : a.session !== undefined && typeof a.session !== 'string' ? 'session must be a string'
          : a.timeoutMs !== undefined && !(Number.isInteger(a.timeoutMs) && (a.timeoutMs as number) > 0) ? 'timeoutMs must be a positive integer' : undefined;
        if (bad) return this.ok({ status: 'error', result: null, logs: [], error: { name: 'InvalidArgumentsError', message: bad, stack: '' } });
        if (a.session !== undefined && !validSessionName(a.session as string)) throw new KilnError(`session name ${JSON.stringify((a.session as string).slice(0, 140))} must be 1-128 characters of letters, digits and . _ : @ -`);
        const target = a.session !== undefined ? own(a.session as string) : sessionName;
        this.checkSessions(principal, target);
        return this.ok(await this.sessions.run(target, SCRIPT_UNIT, (s) => logged(SCRIPT_UNIT, () => stored(s, () => this.scripts.run(s, a.code as string, { timeoutMs: a.timeoutMs as number | undefined, signal: cancel, via, caller })), target), cancel));
      }
      if (name === CLOSE_SESSION_TOOL.name) {
        const given = typeof args?.session === 'string' ? args.session : undefined;
        return this.ok({ session: given ?? named ?? sessionName, closed: this.sessions.close(given !== undefined ? own(given) : sessionName, true) });
      }
      const tool = this.toolNamed(name);
      const entry = tool === undefined ? undefined : this.registry.tools.get(tool);
      if (!entry || !entry.manifest.exposeAsTool) return errorResult(new KilnError(this.notExposed(name)));
      const unit = entry.extension.file;
      if (!principalMayCall(principal, name) && !principalMayCall(principal, tool!)) return errorResult(new KilnError(this.notExposed(name)));
      return this.ok(await this.sessions.run(sessionName, unit, (session) => logged(unit, () => stored(session, () => callTool(this.registry, session, tool!, args ?? {}, cancel, progress, via, caller))), cancel), `tool "${name}"`);
    } catch (e) {
      return errorResult(e);
    } finally {
      progress?.close();
      clientSignal?.removeEventListener('abort', fromClient);
      this.running.delete(both);
      if (named === null) this.sessions.close(sessionName, true); // a call's own session ends with it
    }
  }

  /** Keep sessions' vars in the shared store [sessions] store names, when it names one (sessions/store.ts). */
  async openStore(): Promise<void> {
    const { store, idleTtlMs } = this.registry.policy.sessions;
    if (!store) return;
    this.sessions.store = await (await import('../sessions/store.js')).openStore(store, idleTtlMs, (ready, where, why) => {
      if (ready) this.log.kiln(`the session store [sessions] store = "${where}" answers`, 'info');
      else this.log.kiln(`the session store [sessions] store = "${where}" cannot be reached (${why}): calls that need it fail, and /readyz answers 503, until it answers`, 'warning');
    });
  }

  close(): void {
    this.sessions.closeAll();
  }
}


const logKey = (session: string, unit: string) => `${session}\u0000${unit}`;

/** A cursor naming the last tool of a page: base64url JSON, so a client treats it as opaque. */
function makeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after })).toString('base64url');
}

function readCursor(cursor: string): string {
  try {
    const after = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))?.after;
    if (typeof after === 'string' && makeCursor(after) === cursor) return after;
  } catch {
    // below
  }
  throw new InvalidCursorError(`tools/list: the cursor ${JSON.stringify(cursor.slice(0, 80))} is not one kiln gave (start again without a cursor)`);
}

/** How many of `sorted` (tools by name) have a name up to and including `name`. */
function countBelow(sorted: Tool[], name: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid].name <= name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
