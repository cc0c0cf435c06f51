// `kiln mcp`: the loaded tools as an MCP server over stdio. stdout carries only the protocol; everything
// else (guest logs, load failures) goes to stderr. The server exits when stdin closes or on SIGTERM/SIGINT.
import { Server, type Tool } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { CancelledError, KilnError, ToolError } from '../errors.js';
import { LogLimiter } from '../log-limiter.js';
import { guestLog, stderrText } from '../terminal.js';
import type { Registry, ToolEntry } from '../registry.js';
import { SCRIPT_UNIT } from '../sessions.js';
import type { ConfigWatch } from './config-watch.js';
import { ScriptRunner } from '../scripts.js';
import { GuestInstance } from '../engine/instance.js';
import { Sessions } from '../sessions.js';
import { withinReach, type Authority } from '../grants.js';
import { reachableTools, toolsByFile } from '../capabilities/tools.js';
import { annotations } from './annotations.js';
import { AUDIT_TOOL, auditReport } from './audit.js';
import { progressSink, type ProgressParams } from './progress.js';
import { toolResult, type ToolResult } from './result.js';
import { leanToolCalls } from './lean-call.js';
import { MAX_REQUEST_BYTES, RequestLineLimit } from './request-limit.js';
import type { AskVia } from '../approval-gate.js';
import { askVia } from './elicit.js';

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

/** Guest console levels as MCP logging levels. */
const MCP_LEVEL: Record<string, 'debug' | 'info' | 'warning' | 'error'> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };
export type NoticeLevel = 'info' | 'warning' | 'error';
/** The logger name of kiln's own notifications/message; a guest's logger is its source file's name. */
const KILN_LOGGER = 'kiln';

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
    // its allow.tools names, transitively: capabilities/tools.ts) may come to use (grants.ts withinReach).
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
      return this.ok(await this.sessions.run(sessionName, entry.extension.file, (session) => this.registry.call(session, name, args ?? {}, cancel, progress, via), cancel), `tool "${name}"`);
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

/** Bytes of log lines (stderr) or log notifications (stdout) that may wait for a slow reader; past it, lines
 *  are dropped and counted, never queued in front of later answers. */
export const MAX_QUEUED_LOG_BYTES = 1 << 20;

/** The server's stderr: bounded (so a flood of guest logs cannot queue up in memory, nor a reader who does not
 *  keep up make the server wait), never fatal. */
export function stderrLog(): (line: string) => void {
  process.stderr.on('error', () => {}); // EPIPE/ENOBUFS: a log line is lost, the server goes on
  let dropped = 0;
  const limiter = new LogLimiter<null>({ windowMs: 1000, lines: 5000, chars: 4 << 20, lineChars: 64 * 1024 }, (_l, line) => {
    if (process.stderr.writableLength > MAX_QUEUED_LOG_BYTES) {
      dropped++;
      return;
    }
    if (dropped) {
      process.stderr.write(`kiln: ${dropped} line(s) dropped: stderr was not read as fast as they came\n`);
      dropped = 0;
    }
    process.stderr.write(`${stderrText(line)}\n`); // guest logs and names are untrusted (terminal.ts)
  }, null);
  return (line) => limiter.write(null, line);
}

/** Answer a request line that was too large to read (see request-limit.ts). */
function refuseOversize(id: string | number | null, bytes: number): void {
  const error = { code: -32600, message: `request of ${bytes} bytes refused: kiln reads MCP messages of at most ${MAX_REQUEST_BYTES} bytes` };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, error }) + '\n');
}

/** One MCP server (the protocol side of one connection) on `host`'s tools. A call that names no
 *  `_meta.session` runs in session `defaultSession()`: "default" over stdio, the MCP session over HTTP. */
export function mcpServer(host: McpHost, version: string, defaultSession: () => string = () => 'default', listChanged = false): Server {
  // With nothing loaded, the client's first answer says why (the same text reaches it as a notice).
  const instructions = host.registry.extensions.length === 0
    ? host.startupNotices().map((n) => stderrText(n.text)).join('\n') || undefined
    : undefined;
  const server = new Server({ name: 'kiln', version }, { capabilities: { tools: listChanged ? { listChanged: true } : {}, logging: {} }, instructions });
  // A client learns at once what did not load (it has no other way to see the server's stderr).
  server.oninitialized = () => {
    for (const n of host.startupNotices()) sendNotice(server, n.level, n.text);
  };
  server.setRequestHandler('tools/list', async () => ({ tools: host.listTools() }));
  server.setRequestHandler('tools/call', async (req, ctx) =>
    host.callTool(req.params.name, req.params.arguments as Record<string, unknown> | undefined, req.params._meta as Record<string, unknown> | undefined,
      ctx.mcpReq.signal, (n) => ctx.mcpReq.notify(n), defaultSession(), askVia(server, ctx.mcpReq.id)),
  );
  return server;
}

/** A guest's log line as notifications/message on `server`, at or above the level its client set (the SDK
 *  filters; until the client sets one, everything goes). The logger is the extension's source file. While
 *  `queued()` (bytes written to the client and not yet taken) is past MAX_QUEUED_LOG_BYTES, log lines are
 *  dropped and counted, not queued in front of other sessions' answers; the next one sent is preceded by a
 *  notice with the count. */
export function guestLogSender(server: Server, queued: () => number): (logger: string, level: string, data: string) => void {
  let dropped = 0;
  return (logger, level, data) => {
    if (queued() > MAX_QUEUED_LOG_BYTES) {
      dropped++;
      return;
    }
    if (dropped) {
      sendNotice(server, 'warning', `${dropped} log message(s) of guests dropped: the client did not read them as fast as they came`);
      dropped = 0;
    }
    // A source file named "kiln" must not pass for the server itself.
    const name = logger === KILN_LOGGER ? `./${logger}` : logger;
    void server.sendLoggingMessage({ level: MCP_LEVEL[level] ?? 'info', logger: name, data }).catch(() => {});
  };
}

/** A message of kiln's own as notifications/message (McpHost.notice), as stderr shows it (terminal.ts
 *  `stderrText`: its later lines indented, so a value it quotes cannot pass for a message of its own). */
export function sendNotice(server: Server, level: NoticeLevel, text: string): void {
  void server.sendLoggingMessage({ level, logger: KILN_LOGGER, data: stderrText(text) }).catch(() => {});
}

/** What `kiln mcp` watches: the extension files with --watch (mcp/watch.ts), and the config file, always,
 *  when there is one (mcp/config-watch.ts). */
export interface WatchOptions {
  /** --watch: the extension files and directories. */
  files?: { paths: string[]; exclude: string[] };
  config?: ConfigWatch;
}

/** Start the watchers `watch` asks for; `toolsChanged` tells the clients. */
export async function startWatching(host: McpHost, watch: WatchOptions, toolsChanged: () => void): Promise<void> {
  const { config, files } = watch;
  if (files) {
    const { watchExtensions } = await import('./watch.js');
    const current = () => (config
      ? { paths: [...config.positionals, ...config.current.extensions], exclude: config.current.exclude }
      : files);
    watchExtensions(host, files.paths, current, toolsChanged);
  }
  if (config) {
    const { watchConfig } = await import('./config-watch.js');
    watchConfig(host, config, toolsChanged);
  }
}

export async function serveStdio(registry: Registry, version: string, watch?: WatchOptions): Promise<void> {
  const log = stderrLog();
  const host = new McpHost(registry, log);
  const server = mcpServer(host, version, undefined, watch !== undefined);
  const sendGuestLog = guestLogSender(server, () => process.stdout.writableLength);
  host.onGuestLog = (_session, logger, level, data) => sendGuestLog(logger, level, data);
  host.onNotice = (level, text) => sendNotice(server, level, text);
  if (watch) await startWatching(host, watch, () => void server.sendToolListChanged().catch(() => {}));
  let closing = false;
  const shutdown = (code: number) => {
    if (closing) return;
    closing = true;
    host.close();
    process.exit(code);
  };
  process.stdin.on('end', () => shutdown(0));
  process.stdin.on('close', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  process.on('SIGINT', () => shutdown(0));
  process.on('exit', () => host.close()); // last resort: no process group outlives the server
  const input = process.stdin.pipe(new RequestLineLimit(MAX_REQUEST_BYTES, refuseOversize));
  const transport = new StdioServerTransport(input, process.stdout);
  await server.connect(transport);
  leanToolCalls(server, transport, host); // plain tools/call without the SDK's per-request work (lean-call.ts)
}
