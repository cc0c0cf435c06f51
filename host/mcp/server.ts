// One MCP server object (the SDK's low-level Server) on McpHost's tools, for one protocol era: "legacy" speaks
// 2024-11-05 to 2025-11-25 (initialize, sessions, server-to-client requests), "modern" speaks 2026-07-28 (no
// handshake: protocol version and client capabilities in every request's `_meta`, server/discover, results
// with `resultType`, approvals as multi round-trip requests, the Tasks extension). The serving entries
// (mcp/stdio.ts, mcp/http.ts) choose the era per connection or request; this module never guesses it. Also
// what both transports write besides answers: stderr, guest logs and kiln's notices as notifications.
//
// Invariants:
//  - A kiln session is a handle the client carries (`_meta.session`), never the transport's: a call naming none
//    runs in the connection's default session (stdio: "default"; 2025 HTTP: its MCP session), and a 2026 HTTP
//    call naming none in a session of its own that ends with it.
//  - On modern, an approval is a round (mcp/approval-round.ts): asked only of a client whose request declares
//    elicitation, bound by a signed state to the principal, session, tool and arguments of the call.
//  - A modern call becomes a task (mcp/tasks.ts) only for a client whose request declares the Tasks extension,
//    only while it has not asked a question as a round, and then runs under the task's signal, not the request's.
import { CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY, ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type LoggingLevel, type ServerContext, type StandardSchemaV1 } from '@modelcontextprotocol/server';
import { DEFAULT_LIST_TTL_MS } from '../config/config.js';
import { stderrText } from '../untrusted/terminal.js';
import { MAX_QUEUED_LOG_BYTES } from './log.js';
import type { AskVia } from '../policy/approvals/gate.js';
import type { ConfigWatch } from './config-watch.js';
import { InvalidCursorError, type McpHost, type NoticeLevel } from './host.js';
import { leanToolCalls } from './lean-call.js';
import { askVia } from './elicit.js';
import { answerOf, invalidState, LiveCall, Round, WaitingCalls, type Leg } from './approval-round.js';
import { argumentsDigest, StateRefusedError, type RequestStates, type StateAnswer, type StateBinding } from './request-state.js';
import { TASKS_EXTENSION, type Tasks } from './tasks.js';
import type { Principal } from './principals.js';
import type { CallLine } from './log.js';

/** The header a request's id reaches the MCP handlers in (mcp/http.ts sets it on every request it serves). */
export const REQUEST_ID_HEADER = 'x-kiln-request-id';

/** The protocol revision of the modern era. */
export const MODERN_REVISION = '2026-07-28';
export type Era = 'legacy' | 'modern';

/** Guest console levels as MCP logging levels. */
const MCP_LEVEL: Record<string, LoggingLevel> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };
/** The logger name of kiln's own notifications/message; a guest's logger is its source file's name. */
const KILN_LOGGER = 'kiln';

/** What every server object of one `kiln mcp` shares. */
export interface ServerSetup {
  host: McpHost;
  version: string;
  /** Whether clients are told when the tools change (kiln watches sources or its config). */
  listChanged: boolean;
  /** The requestState codec of modern approvals. */
  states: RequestStates;
  /** The tasks of modern calls. */
  tasks: Tasks;
  /** The modern calls waiting for a retry's answer. */
  waiting: WaitingCalls;
  /** Told why a requestState was refused (the audit log). */
  stateRefused?: (reason: string, tool: string) => void;
  /** Told every answered tools/call request (HTTP: its log line and metrics). */
  answered?: (line: CallLine) => void;
}

/** What one connection (stdio) or request (modern HTTP) brings. */
export interface Connection {
  era: Era;
  /** Who is calling (mcp/principals.ts): its sessions, tasks and approval states are its own. */
  principal: Principal;
  /** The session of a call that names none; null: a session of its own, ended with the call. */
  defaultSession: () => string | null;
  /** The lean tools/call path (lean-call.ts), on a legacy stdio connection. */
  lean?: boolean;
  /** Aborted when the connection's input ends: questions put to its client can no longer be answered. */
  gone?: AbortSignal;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A Server that may install kiln's lean tools/call path on the transport it is connected to. */
class KilnServer extends Server {
  afterConnect?: (transport: Parameters<Server['connect']>[0]) => void;

  override async connect(transport: Parameters<Server['connect']>[0]): Promise<void> {
    await super.connect(transport);
    this.afterConnect?.(transport);
  }
}

/** A params schema (Standard Schema) for the tasks/* requests: `{ taskId: string }` and anything else. */
const TASK_PARAMS: StandardSchemaV1<unknown, { taskId: string }> = {
  '~standard': {
    version: 1, vendor: 'kiln',
    validate: (v) => (isRecord(v) && typeof v.taskId === 'string' ? { value: v as { taskId: string } } : { issues: [{ message: 'taskId must be a string' }] }),
  },
};

/** The client capabilities a modern request declares. */
function declared(ctx: ServerContext): Record<string, unknown> | undefined {
  const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as keyof NonNullable<ServerContext['mcpReq']['envelope']>];
  return isRecord(caps) ? caps : undefined;
}

const declaresTasks = (ctx: ServerContext) => isRecord(declared(ctx)?.extensions) && isRecord((declared(ctx)!.extensions as Record<string, unknown>)[TASKS_EXTENSION]);

/** The MCP server of one connection, in one era. */
export function mcpServer(setup: ServerSetup, c: Connection): Server {
  const { host } = setup;
  // With nothing loaded, the client's first answer says why (the same text reaches it as a notice).
  const instructions = host.registry.extensions.length === 0
    ? host.startupNotices().map((n) => stderrText(n.text)).join('\n') || undefined
    : undefined;
  const modern = c.era === 'modern';
  // A list that may change under a client's cache (kiln watches) is not cached unless the operator says so.
  const ttl = { ttlMs: host.settings.listTtlMs ?? (setup.listChanged ? 0 : DEFAULT_LIST_TTL_MS), cacheScope: 'private' as const };
  const server = new KilnServer({ name: 'kiln', version: setup.version }, {
    capabilities: {
      tools: setup.listChanged ? { listChanged: true } : {},
      logging: {},
      ...(modern && host.settings.tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
    },
    instructions,
    cacheHints: { 'tools/list': ttl, 'server/discover': ttl },
    // A kiln bug that answered a 2025 request with input_required must fail loudly: the SDK's shim would run
    // the handler again, and with it everything before the approval.
    inputRequired: { legacyShim: false },
  });
  if (c.lean) server.afterConnect = (transport) => leanToolCalls(server, transport as never, host, c.gone);
  // A client learns at once what did not load (2025: it has no other way to see the server's stderr).
  server.oninitialized = () => {
    for (const n of host.startupNotices()) sendNotice(server, n.level, n.text);
  };
  server.setRequestHandler('tools/list', async (req) => {
    try {
      return host.listTools(req.params?.cursor, undefined, c.principal);
    } catch (e) {
      if (e instanceof InvalidCursorError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, e.message);
      throw e;
    }
  });
  server.setRequestHandler('tools/call', async (req, ctx) => {
    const args = req.params.arguments as Record<string, unknown> | undefined;
    const meta = req.params._meta as Record<string, unknown> | undefined;
    const notify = (n: { method: 'notifications/progress'; params: unknown }) => ctx.mcpReq.notify(n as never);
    const started = performance.now();
    const result: CallToolResult = modern
      ? await modernCall(setup, c, req.params.name, args, meta, ctx)
      : await host.callTool(req.params.name, args, meta, { signal: ctx.mcpReq.signal, notify, session: c.defaultSession(), via: askVia(server, ctx.mcpReq.id, c.gone), principal: c.principal }) as CallToolResult;
    if (setup.answered) {
      const session = typeof meta?.session === 'string' ? meta.session : c.defaultSession() ?? undefined; // none: the call's own
      setup.answered({
        requestId: ctx.http?.req?.headers.get(REQUEST_ID_HEADER) ?? String(ctx.mcpReq.id), principal: c.principal.id, session, tool: req.params.name,
        ...outcomeOf(result), durationMs: Math.round(performance.now() - started), revision: modern ? MODERN_REVISION : (server.getNegotiatedProtocolVersion() ?? 'legacy'),
      });
    }
    return result;
  });
  if (modern && host.settings.tasks) {
    const own = (ctx: ServerContext) => {
      if (!declaresTasks(ctx)) {
        throw new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, 'Missing required client capability', { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
      }
    };
    server.setRequestHandler('tasks/get', { params: TASK_PARAMS }, async (p, ctx) => (own(ctx), setup.tasks.get(p.taskId, c.principal.key)) as never);
    server.setRequestHandler('tasks/update', { params: TASK_PARAMS }, async (p, ctx) => (own(ctx), setup.tasks.update(p.taskId, c.principal.key, ctx.mcpReq.inputResponses)) as never);
    server.setRequestHandler('tasks/cancel', { params: TASK_PARAMS }, async (p, ctx) => (own(ctx), setup.tasks.cancel(p.taskId, c.principal.key)) as never);
  }
  return server;
}

/** A tools/call on 2026-07-28: its session handle, its approvals as round trips (a retry resumes the call that
 *  waits for its answer, or runs it again where that call is not held), its logs and progress with the request
 *  serving it, and, for a client declaring the Tasks extension, a task when it runs longer than [mcp] taskAfterMs. */
async function modernCall(setup: ServerSetup, c: Connection, name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, ctx: ServerContext): Promise<CallToolResult> {
  const { host } = setup;
  const named = typeof meta?.session === 'string' ? meta.session : undefined;
  const session = named ?? c.defaultSession();
  const binding: StateBinding = { principal: c.principal.key, session: session ?? '', tool: name, args: argumentsDigest(args) };
  const ttlMs = host.registry.approvals.settings.timeoutMs;
  // Logs and progress go with the request that serves the call now (2026-07-28 has no logging/setLevel: only
  // a request whose envelope asks for logs gets them).
  const level = ctx.mcpReq.envelope?.[LOG_LEVEL_META_KEY as keyof NonNullable<ServerContext['mcpReq']['envelope']>];
  const leg: Leg = {
    notify: (n) => ctx.mcpReq.notify(n as never),
    log: level === undefined ? undefined : (source, lvl, message) => void ctx.mcpReq.log(MCP_LEVEL[lvl] ?? 'info', message, source === KILN_LOGGER ? `./${source}` : source).catch(() => {}),
  };
  // A retry: a state that opens for exactly this call, and its answer.
  let answers: [string, StateAnswer][] = [];
  const state = ctx.mcpReq.requestState();
  if (state !== undefined) {
    let opened;
    try {
      opened = await setup.states.open(state, binding, (p) => answerOf(ctx.mcpReq.inputResponses, p.ask));
    } catch (e) {
      if (!(e instanceof StateRefusedError)) throw e;
      setup.stateRefused?.(e.reason, name);
      throw invalidState();
    }
    const { payload, checked: { elicit, answer } } = opened;
    const waiting = setup.waiting.take(payload.jti);
    if (waiting) {
      const { call: held, question } = waiting;
      return serveLeg(held, leg, ctx, () => held.answer(question, elicit, answer), () => held.next(undefined, setup.states, binding, ttlMs));
    }
    // This process asked, and the call is no longer waiting (its question timed out, was cancelled, or its
    // session closed): the call is over, and is never run again here.
    if (payload.px === setup.states.process) {
      setup.stateRefused?.('ended', name);
      throw invalidState();
    }
    // The call that asked is not held here (another replica, a restart): it runs again with every answer.
    answers = [...payload.ok, [payload.ask.key, answer]];
  }
  const stop = new AbortController();
  // A connection that has ended (stdin closed) can retry nothing: its calls waiting for an answer stop.
  const gone = c.gone;
  const onGone = () => stop.abort(gone!.reason);
  if (gone?.aborted) onGone();
  else gone?.addEventListener('abort', onGone, { once: true });
  const live = new LiveCall(setup.waiting, stop, c.principal.key);
  const round = answers.length ? new Round(answers) : undefined;
  const via: AskVia = isRecord(declared(ctx)?.elicitation)
    ? { ask: live.ask, rounds: true, round, sessionOutlivesCall: session !== null }
    : { cannotAsk: 'this MCP client cannot be asked (its request does not declare the elicitation capability)', round };
  const call = host.callTool(name, args, meta, {
    signal: stop.signal, session, via, principal: c.principal,
    notify: (n) => live.leg?.notify?.(n) ?? Promise.resolve(),
    log: (source, lvl, message) => live.leg?.log?.(source, lvl, message),
  }) as Promise<CallToolResult>;
  call.finally(() => gone?.removeEventListener('abort', onGone)).catch(() => {});
  const next = live.next(call, setup.states, binding, ttlMs);
  // A task: a first call (not a retry) of a client that declares the extension, still running past [mcp]
  // taskAfterMs and not waiting on a question.
  const settings = host.settings;
  if (settings.tasks && declaresTasks(ctx) && state === undefined) {
    let timer: NodeJS.Timeout | undefined;
    const later = new Promise<typeof TASK>((resolve) => (timer = setTimeout(() => resolve(TASK), settings.taskAfterMs)));
    const wait: Promise<CallToolResult | typeof TASK> = Promise.race([next, later.then((t): Promise<CallToolResult | typeof TASK> | typeof TASK => (live.asking() || stop.signal.aborted ? next : t))]);
    const first = await serveLeg(live, leg, ctx, () => {}, () => wait);
    clearTimeout(timer);
    if (first !== TASK) return first;
    const task = setup.tasks.create(c.principal.key, settings.taskTtlMs, stop);
    if (task) {
      // The request is over: a task's progress and logs are not sent; its questions go through the task
      // (tasks/get shows them, tasks/update answers them).
      if (via.ask) via.ask = setup.tasks.asker(task.task);
      call.then((result) => setup.tasks.settle(task.task, { result }), (error) => setup.tasks.settle(task.task, { error }));
      return task.handle;
    }
  }
  return serveLeg(live, leg, ctx, () => {}, () => next);
}

/** What a result says of how its call ended, for the log and the metrics. */
function outcomeOf(r: CallToolResult): { outcome: string; error?: string } {
  const kind = (r as { resultType?: string }).resultType;
  if (kind === 'input_required' || kind === 'task') return { outcome: kind };
  if (!r.isError) return { outcome: 'ok' };
  const first = r.content?.[0];
  const name = first?.type === 'text' ? /^([A-Z][A-Za-z]{0,63}Error):/.exec(first.text)?.[1] : undefined;
  return { outcome: 'error', error: name ?? 'Error' };
}

/** What serveLeg's wait resolves with when a call becomes a task. */
const TASK = Symbol('task');

/** Serve `live` for one request (`ctx`) until `next()` settles: the request gets the call's progress and logs,
 *  and its going away (cancelled, disconnected) stops the call. `resume` runs once the leg is in place (a
 *  retry's answer given to the waiting call), before `next` is asked for. */
async function serveLeg<T>(live: LiveCall, leg: Leg, ctx: ServerContext, resume: () => void, next: () => Promise<T>): Promise<T> {
  const onGone = () => live.stop.abort(ctx.mcpReq.signal.reason);
  if (ctx.mcpReq.signal.aborted) onGone();
  else ctx.mcpReq.signal.addEventListener('abort', onGone, { once: true });
  live.leg = leg;
  resume();
  try {
    return await next();
  } finally {
    ctx.mcpReq.signal.removeEventListener('abort', onGone);
    if (live.leg === leg) live.leg = undefined;
  }
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

/** A message of kiln's own as notifications/message (McpHost.notice), as stderr shows it (untrusted/terminal.ts
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

/** Start the watchers `watch` asks for; `toolsChanged` tells the clients. `reload` reads the config file again
 *  now (SIGHUP), when there is one. */
export async function startWatching(host: McpHost, watch: WatchOptions, toolsChanged: () => void): Promise<{ reload?: () => void }> {
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
    return { reload: watchConfig(host, config, toolsChanged).reload };
  }
  return {};
}
