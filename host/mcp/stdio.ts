// `kiln mcp` over stdio: both protocol eras on one pipe, the opening message choosing (the SDK's serveStdio:
// `initialize` pins a 2025 server object, a request carrying the 2026-07-28 envelope pins a modern one, and a
// `server/discover` probe followed by `initialize` falls back). stdout carries only the protocol; everything
// else (guest logs, load failures) goes to stderr.
//
// Invariants:
//  - Closing stdin ends the server only after every request it had read is answered (at most [limits]
//    timeoutMs later: calls still running then are stopped) and stdout has taken every byte written, so a
//    client that writes its requests and closes its end gets all its answers. Questions put to the client
//    (2025 elicitation) end at once: their answers can no longer come. With nothing pending it exits at once.
//  - SIGTERM/SIGINT: exit now; every session closes and every child process is killed.
import { setMaxListeners } from 'node:events';
import { isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type Server, type Transport } from '@modelcontextprotocol/server';
import { serveStdio as serveEras, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { DEFAULT_MCP, type McpSettings } from '../config/config.js';
import type { Registry } from '../extensions/registry.js';
import { McpHost } from './host.js';
import { MAX_REQUEST_BYTES, RequestLineLimit } from './request-limit.js';
import { readStateKeys, RequestStates } from './request-state.js';
import { guestLogSender, mcpServer, sendNotice, startWatching, type ServerSetup, type WatchOptions } from './server.js';
import { textLog } from './log.js';
import { Tasks } from './tasks.js';
import { STDIO_PRINCIPAL } from './principals.js';
import { WaitingCalls } from './approval-round.js';

/** How long stopped calls have to be answered, and stdout to be taken, once stdin has closed. */
const STOP_GRACE_MS = 5000;

/** Whether `p` settles within `ms`. */
function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.then(() => true, () => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))])
    .finally(() => clearTimeout(timer));
}

/** Answer a request line that was too large to read (see request-limit.ts). */
function refuseOversize(id: string | number | null, bytes: number): void {
  const error = { code: -32600, message: `request of ${bytes} bytes refused: kiln reads MCP messages of at most ${MAX_REQUEST_BYTES} bytes` };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, error }) + '\n');
}

/** The stdio wire, counting the requests it delivered and has not answered yet. */
class CountingWire implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly pending = new Set<string | number>();
  private idle: (() => void)[] = [];

  constructor(private readonly inner: StdioServerTransport) {}

  async start(): Promise<void> {
    this.inner.onmessage = (m: JSONRPCMessage) => {
      if (isJSONRPCRequest(m)) this.pending.add(m.id);
      // A cancelled request is never answered (MCP's cancellation): it is not waited for.
      else if (isJSONRPCNotification(m) && m.method === 'notifications/cancelled') this.settle((m.params as { requestId?: string | number } | undefined)?.requestId);
      this.onmessage?.(m as never);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (e) => this.onerror?.(e);
    await this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: Parameters<Transport['send']>[1]): Promise<void> {
    try {
      await this.inner.send(message);
    } finally {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) this.settle(message.id);
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Resolves when every request delivered has been answered (or cancelled). */
  answered(): Promise<void> {
    return this.pending.size === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  private settle(id: unknown): void {
    if (!this.pending.delete(id as string | number) || this.pending.size > 0) return;
    const waiting = this.idle;
    this.idle = [];
    for (const w of waiting) w();
  }
}

export async function serveStdio(registry: Registry, version: string, settings: McpSettings = DEFAULT_MCP, watch?: WatchOptions): Promise<void> {
  const log = textLog(); // stdio's stderr is for people (a client may show it)
  const host = new McpHost(registry, log);
  host.settings = settings;
  await host.openStore();
  const gone = new AbortController();
  setMaxListeners(0, gone.signal); // every call waiting for an answer listens to it
  const setup: ServerSetup = {
    host, version, listChanged: watch !== undefined,
    states: new RequestStates(readStateKeys(process.env.KILN_STATE_KEY, settings.stateKeyFile)),
    tasks: new Tasks(), waiting: new WaitingCalls(() => host.settings.maxWaitingCalls),
    stateRefused: (reason, tool) => registry.audit?.write({ type: 'approval', event: 'state-refused', tool, reason }),
  };
  // The server objects alive on this connection: the pinned one (and, briefly, a discarded discover probe).
  const servers = new Set<Server>();
  const legacy = new Set<Server>();
  const sendGuestLog = new WeakMap<Server, ReturnType<typeof guestLogSender>>();
  host.onGuestLog = (_session, logger, level, data) => {
    for (const s of legacy) sendGuestLog.get(s)?.(logger, level, data);
  };
  host.onNotice = (level, text) => {
    for (const s of legacy) sendNotice(s, level, text);
  };
  if (watch) await startWatching(host, watch, () => {
    for (const s of servers) void s.sendToolListChanged().catch(() => {}); // modern: to its subscriptions/listen streams
  });

  let closing = false;
  const shutdown = (code: number) => {
    if (closing) return;
    closing = true;
    setup.tasks.closeAll();
    host.close();
    process.exit(code);
  };
  process.on('SIGTERM', () => shutdown(0));
  process.on('SIGINT', () => shutdown(0));
  process.on('exit', () => host.close()); // last resort: no process group outlives the server

  // The SDK's transport reads a stream that never ends (stdin's end is handled below, after the answers).
  const input = process.stdin.pipe(new RequestLineLimit(MAX_REQUEST_BYTES, refuseOversize), { end: false });
  const wire = new CountingWire(new StdioServerTransport(input, process.stdout));
  serveEras(({ era }) => {
    const server = mcpServer(setup, { era, principal: STDIO_PRINCIPAL, defaultSession: () => 'default', lean: era === 'legacy', gone: gone.signal });
    servers.add(server);
    if (era === 'legacy') {
      legacy.add(server);
      sendGuestLog.set(server, guestLogSender(server, () => process.stdout.writableLength));
    }
    server.onclose = () => {
      servers.delete(server);
      legacy.delete(server);
    };
    return server;
  }, { transport: wire, legacy: 'serve', onerror: (e) => log.kiln(`mcp: ${e.message}`, 'warning') });

  let ended = false;
  const inputEnded = async () => {
    if (ended) return;
    ended = true;
    gone.abort(new Error('the client closed its input'));
    setup.tasks.closeAll(); // nobody can fetch a task's result any more
    const bound = registry.policy.limits.timeoutMs;
    if (!(await within(wire.answered(), bound))) {
      // Calls still running are stopped, and answered with why.
      host.stopCalls(`the client closed kiln's stdin, and the call had not finished ${bound} ms later ([limits] timeoutMs)`);
      await within(wire.answered(), STOP_GRACE_MS);
    }
    // Every byte taken by the pipe (a reader that stopped reading has its bound too).
    await within(new Promise<void>((resolve) => process.stdout.write('', () => resolve())), STOP_GRACE_MS);
    shutdown(0);
  };
  process.stdin.on('end', () => void inputEnded());
  process.stdin.on('close', () => void inputEnded());
}
