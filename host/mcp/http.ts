// `kiln mcp --http HOST:PORT`: the MCP server over Streamable HTTP at /mcp, both protocol eras on one
// endpoint. A request carrying an `Mcp-Session-Id`, or none and no 2026-07-28 envelope (`initialize`, 2025
// GET/DELETE), is 2025-era: one MCP server object per MCP session (the SDK's web-standard transport, with an
// event store so a broken stream resumes from `Last-Event-ID`). A request carrying the envelope is 2026-07-28:
// answered by a server object made for it alone (the SDK's createMcpHandler), no transport session. All on
// one McpHost (one registry, one set of sessions).
//
// Invariants (each checked before the SDK sees the request):
//  - The Host header names the address kiln listens on (for a loopback address also localhost, 127.0.0.1 and
//    [::1]) or a host the operator lists in [http] allowedHosts: a DNS-rebinding page cannot reach it (403).
//  - An Origin, which browsers send, must be listed in [http] allowedOrigins (403).
//  - Every request carries `Authorization: Bearer <token>`, compared in constant time (401). The token comes
//    from KILN_TOKEN or [http] token; on a loopback address without one, kiln makes one for this run and
//    prints it; on any other address it refuses to start.
//  - A request body is at most MAX_BODY_BYTES, however it is sent (413); at most [sessions] maxSessions MCP
//    sessions are open (503); an MCP session idle for [sessions] idleTtlMs is closed, and with it its kiln
//    session. A 2026-07-28 request opens no MCP session.
//  - A 2025 call naming no `_meta.session` runs in the kiln session named by its MCP session's id; a 2026 call
//    naming none, in a session of its own that ends with the call.
//  - SIGTERM/SIGINT: the listener closes, every MCP session closes, every child process is killed, exit.
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { createHash } from 'node:crypto';
import { createMcpHandler, isLegacyRequest, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { DEFAULT_MCP, type McpSettings } from '../config/config.js';
import { KilnError, UsageError } from '../errors.js';
import type { Registry } from '../extensions/registry.js';
import { SessionEvents } from './event-store.js';
import { McpHost } from './host.js';
import { readStateKeys, RequestStates } from './request-state.js';
import { guestLogSender, mcpServer, sendNotice, startWatching, stderrLog, type ServerSetup, type WatchOptions } from './server.js';
import { Tasks } from './tasks.js';
import { WaitingCalls } from './approval-round.js';

export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface HttpSettings {
  token?: string;
  allowedHosts: string[];
  allowedOrigins: string[];
}

export const DEFAULT_HTTP: HttpSettings = { allowedHosts: [], allowedOrigins: [] };

/** HOST:PORT as `--http` takes it: 127.0.0.1:8080, localhost:0, [::1]:8080, 0.0.0.0:8080. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--http takes HOST:PORT (e.g. 127.0.0.1:8080), not ${JSON.stringify(text).slice(0, 80)}`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

export const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

/** The Host header values a request may carry: the listening address, its loopback aliases, the operator's. */
export function allowedHostHeaders(host: string, port: number, extra: string[]): Set<string> {
  const names = isLoopback(host) ? ['localhost', '127.0.0.1', '[::1]'] : [isIP(host) === 6 ? `[${host}]` : host];
  const out = new Set<string>();
  for (const n of names) out.add(`${n}:${port}`.toLowerCase());
  for (const e of extra) out.add(e.toLowerCase());
  return out;
}

/** Whether `header` is "Bearer <token>" (constant time in the token's length). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (\S+)$/.exec(header ?? '');
  if (!m) return false;
  const given = Buffer.from(m[1]), want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** A request whose Authorization is not this server's token: 401, saying which of the three it was (RFC 6750's
 *  `invalid_token` for a token that does not match). */
function refuseToken(res: ServerResponse, authorization: string | undefined): void {
  if (authorization === undefined) return refuse(res, 401, 'a bearer token is required (Authorization: Bearer <token>)', { 'www-authenticate': 'Bearer' });
  if (!/^Bearer \S+$/.test(authorization)) return refuse(res, 401, 'the Authorization header must be "Bearer <token>"', { 'www-authenticate': 'Bearer' });
  refuse(res, 401, "the bearer token is not this server's (KILN_TOKEN or [http] token)", { 'www-authenticate': 'Bearer error="invalid_token"' });
}

/** A request's body, at most `max` bytes however it is sent (a length, or chunks); undefined past it. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        return resolve(undefined);
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** The web Request the SDK's transports take: `body` (read already, bounded), and a signal aborted when the
 *  client goes away (a 2026 call is cancelled so; a 2025 stream just closes). */
function toWebRequest(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const init: RequestInit = { method: req.method, headers, signal: ac.signal };
  if (body !== undefined && req.method !== 'GET' && req.method !== 'HEAD') init.body = body as unknown as BodyInit;
  return new Request(new URL(req.url ?? '/', 'http://kiln'), init);
}

/** Who holds a bearer token, as requestState and tasks name them: a digest, never the token. */
export const principalOf = (token: string): string => createHash('sha256').update(`bearer:${token}`).digest('hex').slice(0, 16);

async function writeWebResponse(res: ServerResponse, r: Response): Promise<void> {
  res.writeHead(r.status, Object.fromEntries(r.headers));
  if (!r.body) return void res.end();
  res.flushHeaders();
  const reader = r.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

interface Connection {
  transport: WebStandardStreamableHTTPServerTransport;
  server: ReturnType<typeof mcpServer>;
  /** Its session's guest log lines to its client (each MCP session is a connection of its own, so one
   *  session's log lines never wait in front of another's answers; the per-session budget bounds them). */
  sendLog: ReturnType<typeof guestLogSender>;
  lastSeen: number;
}

export async function serveHttp(registry: Registry, version: string, listen: string, settings: HttpSettings = DEFAULT_HTTP, mcpSettings: McpSettings = DEFAULT_MCP, watch?: WatchOptions): Promise<void> {
  const { host: address, port } = parseListen(listen);
  let token = process.env.KILN_TOKEN || settings.token;
  if (!token && !isLoopback(address)) {
    throw new KilnError(`kiln mcp --http ${listen}: a non-loopback address needs a bearer token: set KILN_TOKEN or [http] token in kiln.toml`);
  }
  const log = stderrLog();
  if (!token) {
    token = randomBytes(24).toString('base64url');
    log(`kiln: no token configured (KILN_TOKEN or [http] token); this run's token: ${token}`);
  }
  const mcp = new McpHost(registry, log);
  mcp.settings = mcpSettings;
  const keys = readStateKeys(process.env.KILN_STATE_KEY, mcpSettings.stateKeyFile);
  if (!keys) log('kiln: no requestState key (KILN_STATE_KEY or [mcp] stateKeyFile): approvals asked of 2026-07-28 clients are honoured by this process only, not by another replica or after a restart');
  const setup: ServerSetup = {
    host: mcp, version, listChanged: watch !== undefined, states: new RequestStates(keys), tasks: new Tasks(), waiting: new WaitingCalls(() => mcp.settings.maxWaitingCalls),
    stateRefused: (reason, tool) => registry.audit?.write({ type: 'approval', event: 'state-refused', tool, reason }),
  };
  const principal = principalOf(token);
  const connections = new Map<string, Connection>();
  mcp.onGuestLog = (session, logger, level, data) => {
    const c = connections.get(session);
    if (c) c.sendLog(logger, level, data);
  };
  mcp.onNotice = (level, text) => {
    for (const c of connections.values()) sendNotice(c.server, level, text);
  };
  // 2026-07-28: one server object per request, made here (mcp/server.ts), on no transport session.
  const modern = createMcpHandler(({ authInfo }) => mcpServer(setup, { era: 'modern', principal: authInfo?.clientId ?? principal, defaultSession: () => null }), {
    legacy: 'reject', maxRequestBodySize: MAX_BODY_BYTES, onerror: (e) => log(`kiln: mcp: ${e.message}`),
  });
  if (watch) {
    await startWatching(mcp, watch, () => {
      for (const c of connections.values()) void c.server.sendToolListChanged().catch(() => {});
      modern.notify.toolsChanged(); // to 2026-07-28 clients' subscriptions/listen streams
    });
  }
  const origins = new Set(settings.allowedOrigins);
  let hosts = new Set<string>();
  const { maxSessions, idleTtlMs } = registry.policy.sessions;

  const open = async (): Promise<Connection> => {
    let id: string | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      maxRequestBodySize: MAX_BODY_BYTES,
      eventStore: new SessionEvents(), // every event has an id; a broken stream resumes with Last-Event-ID
      retryInterval: 1000,
      onsessioninitialized: (sid) => {
        id = sid;
        connections.set(sid, c);
      },
    });
    const server = mcpServer(setup, { era: 'legacy', principal, defaultSession: () => id ?? 'default' });
    const c: Connection = { transport, server, sendLog: guestLogSender(server, () => 0), lastSeen: Date.now() };
    transport.onclose = () => {
      if (id === undefined) return;
      connections.delete(id);
      mcp.sessions.close(id); // its guests, vars, processes and cookies
    };
    await server.connect(transport);
    return c;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!hosts.has(String(req.headers.host ?? '').toLowerCase())) return refuse(res, 403, 'this Host is not one kiln serves (add it to [http] allowedHosts)');
    if (req.headers.origin !== undefined && !origins.has(req.headers.origin)) return refuse(res, 403, 'this Origin is not allowed (add it to [http] allowedOrigins)');
    if (!bearerMatches(req.headers.authorization, token!)) return refuseToken(res, req.headers.authorization);
    if (new URL(req.url ?? '/', 'http://kiln').pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return refuse(res, 413, `requests are limited to ${MAX_BODY_BYTES} bytes`);
    const body = req.method === 'POST' ? await readBody(req, MAX_BODY_BYTES) : undefined;
    if (req.method === 'POST' && body === undefined) return refuse(res, 413, `requests are limited to ${MAX_BODY_BYTES} bytes`);
    let parsedBody: unknown;
    try {
      parsedBody = body?.length ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      // not JSON: the transport answers it
    }
    const web = toWebRequest(req, res, body);
    const sid = req.headers['mcp-session-id'];
    let c = typeof sid === 'string' ? connections.get(sid) : undefined;
    if (!c) {
      if (sid !== undefined) return refuse(res, 404, 'no such MCP session (it ended, or the server restarted): initialize again');
      if (!(await isLegacyRequest(web, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES }))) {
        return writeWebResponse(res, await modern.fetch(web, { parsedBody, authInfo: { token: '', clientId: principal, scopes: [] } }));
      }
      if (connections.size >= maxSessions) return refuse(res, 503, `the server holds ${maxSessions} MCP sessions; retry later or raise [sessions] maxSessions`);
      c = await open();
    }
    c.lastSeen = Date.now();
    await writeWebResponse(res, await c.transport.handleRequest(web, { parsedBody }));
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((e) => {
      mcp.notice('error', `http: ${(e as Error)?.message ?? e}`);
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (e) => reject(new KilnError(`kiln mcp --http ${listen}: ${e.message}`)));
    http.listen(port, address, () => resolve());
  });
  const actual = (http.address() as { port: number }).port;
  hosts = allowedHostHeaders(address, actual, settings.allowedHosts);
  const shown = isIP(address) === 6 ? `[${address}]` : address;
  log(`kiln: MCP over HTTP at http://${shown}:${actual}/mcp (Authorization: Bearer <token>)`);

  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const c of [...connections.values()]) if (now - c.lastSeen > idleTtlMs) void c.transport.close();
  }, Math.max(10, Math.min(60_000, idleTtlMs / 4)));
  sweeper.unref();

  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    http.close();
    http.closeAllConnections();
    for (const c of connections.values()) void c.transport.close();
    void modern.close();
    setup.tasks.closeAll();
    mcp.close();
    process.exit(0);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.on('exit', () => mcp.close());
}
