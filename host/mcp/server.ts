// `kiln mcp`: the loaded tools as an MCP server over stdio. stdout carries only the protocol; everything
// else (guest logs, load failures) goes to stderr. The server exits when stdin closes or on SIGTERM/SIGINT.
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { LogLimiter } from '../untrusted/log-limiter.js';
import { stderrText } from '../untrusted/terminal.js';
import type { Registry } from '../extensions/registry.js';
import type { ConfigWatch } from './config-watch.js';
import { McpHost, type NoticeLevel } from './host.js';
import { leanToolCalls } from './lean-call.js';
import { MAX_REQUEST_BYTES, RequestLineLimit } from './request-limit.js';
import { askVia } from './elicit.js';

/** Guest console levels as MCP logging levels. */
const MCP_LEVEL: Record<string, 'debug' | 'info' | 'warning' | 'error'> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };
/** The logger name of kiln's own notifications/message; a guest's logger is its source file's name. */
const KILN_LOGGER = 'kiln';

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
    process.stderr.write(`${stderrText(line)}\n`); // guest logs and names are untrusted (untrusted/terminal.ts)
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
