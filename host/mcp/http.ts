// `kiln mcp --http HOST:PORT`: the MCP server over Streamable HTTP at /mcp, both protocol eras on one
// endpoint, for many clients (principals: mcp/principals.ts), as a service: health and readiness, metrics,
// structured logs, draining on SIGTERM, reloading on SIGHUP. A request carrying an `Mcp-Session-Id`, or none and
// no 2026-07-28 envelope (`initialize`, 2025 GET/DELETE), is 2025-era: one MCP server object per MCP session
// (the SDK's web-standard transport, with an event store so a broken stream resumes from `Last-Event-ID`). A
// request carrying the envelope is 2026-07-28: answered by a server object made for it alone (the SDK's
// createMcpHandler), no transport session. All on one McpHost (one registry, one set of sessions).
//
// Invariants (each checked before the SDK sees the request):
//  - /healthz and /readyz answer without a token or a Host check and say nothing but "ok" or why not ready;
//    /readyz is 503 from the moment the server drains. Everything else checks the Host header first: it names
//    the address kiln listens on (for a loopback address also localhost, 127.0.0.1 and [::1]) or a host listed
//    in [http] allowedHosts, so a DNS-rebinding page cannot reach it (403).
//  - An Origin, which browsers send, must be listed in [http] allowedOrigins (403).
//  - Every other request carries `Authorization: Bearer <token>` naming a principal (401, saying which of
//    missing, wrong scheme or unknown token it was; with OAuth, `resource_metadata` names the metadata). The
//    Protected Resource Metadata (RFC 9728) is public, when OAuth is configured.
//  - /metrics is for the operator's shared token and principals with `metrics = true` (403 otherwise).
//  - A request body is at most MAX_BODY_BYTES, however it is sent (413); at most [sessions] maxSessions MCP
//    sessions are open (503); an MCP session idle for [sessions] idleTtlMs is closed, and with it its kiln
//    session. An MCP session is its principal's: another principal naming its id gets 404, as for no session.
//    A 2026-07-28 request opens no MCP session.
//  - A 2025 call naming no `_meta.session` runs in the kiln session named by its MCP session's id; a 2026 call
//    naming none, in a session of its own that ends with the call; every name is in its principal's own space.
//  - SIGTERM/SIGINT drain: /readyz says so at once, the listener closes [http] drainNoticeMs later (for a load
//    balancer to see it first); calls in flight have [http] drainMs to finish, then are stopped and answered; every MCP session closes, every child process is killed, exit 0.
//    SIGHUP applies the config file again, as a saved change does. A port in use exits 1, saying so.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { createMcpHandler, isLegacyRequest, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { DEFAULT_MCP, type KilnConfig, type McpSettings } from '../config/config.js';
import { KilnError, UsageError } from '../errors.js';
import type { Registry } from '../extensions/registry.js';
import { WaitingCalls } from './approval-round.js';
import { SessionEvents } from './event-store.js';
import { McpHost } from './host.js';
import { jsonLog, sessionDigest, textLog, type LogFormat, type ServerLog } from './log.js';
import type { Metrics } from './metrics.js';
import { bearerToken, MIN_TOKEN_CHARS, Principals, type Principal, type Refusal } from './principals.js';
import { readStateKeys, RequestStates } from './request-state.js';
import { guestLogSender, mcpServer, REQUEST_ID_HEADER, sendNotice, startWatching, type ServerSetup, type WatchOptions } from './server.js';
import { Tasks } from './tasks.js';

export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** How long calls in flight may take to finish once the server drains, unless [http] drainMs says otherwise. */
export const DEFAULT_DRAIN_MS = 10_000;
/** How long a draining server goes on taking requests, /readyz saying 503, for a load balancer to notice. */
export const DEFAULT_DRAIN_NOTICE_MS = 2000;
/** How long stopped calls have to be answered before the process exits anyway. */
const STOP_GRACE_MS = 5000;

export interface HttpSettings {
  token?: string;
  allowedHosts: string[];
  allowedOrigins: string[];
  oauth?: KilnConfig['http']['oauth'];
  /** Names this replica in the MCP session ids and task ids it makes (`<replica>.<id>`), for a load balancer to
   *  route by. */
  replica?: string;
  drainMs?: number;
  drainNoticeMs?: number;
}

export const DEFAULT_HTTP: HttpSettings = { allowedHosts: [], allowedOrigins: [] };

/** What `kiln mcp --http` is given besides the registry. */
export interface HttpOptions {
  http?: HttpSettings;
  principals?: KilnConfig['principals'];
  mcp?: McpSettings;
  logFormat?: LogFormat;
  watch?: WatchOptions;
}

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

/** A request whose Authorization names no principal: 401, saying which case it was (RFC 6750's `invalid_token`
 *  for a token that names none); with OAuth, where the metadata is (RFC 9728). */
function refuseToken(res: ServerResponse, why: Refusal, metadata: string | undefined): void {
  const more = metadata ? `, resource_metadata="${metadata}"` : '';
  if (why === 'missing') return refuse(res, 401, 'a bearer token is required (Authorization: Bearer <token>)', { 'www-authenticate': `Bearer${metadata ? ` resource_metadata="${metadata}"` : ''}` });
  if (why === 'scheme') return refuse(res, 401, 'the Authorization header must be "Bearer <token>"', { 'www-authenticate': `Bearer${metadata ? ` resource_metadata="${metadata}"` : ''}` });
  refuse(res, 401, "the bearer token is not one this server takes (KILN_TOKEN or [http] token, a [principals.*] token, or an OAuth token of [http.oauth]'s issuer)", { 'www-authenticate': `Bearer error="invalid_token"${more}` });
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
function toWebRequest(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined, requestId: string): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && k !== REQUEST_ID_HEADER) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  headers.set(REQUEST_ID_HEADER, requestId);
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const init: RequestInit = { method: req.method, headers, signal: ac.signal };
  if (body !== undefined && req.method !== 'GET' && req.method !== 'HEAD') init.body = body as unknown as BodyInit;
  return new Request(new URL(req.url ?? '/', 'http://kiln'), init);
}

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

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(value));
}

interface Connection {
  transport: WebStandardStreamableHTTPServerTransport;
  server: ReturnType<typeof mcpServer>;
  /** Whose MCP session it is: only this principal's requests reach it. */
  principal: Principal;
  /** Its session's guest log lines to its client (each MCP session is a connection of its own, so one
   *  session's log lines never wait in front of another's answers; the per-session budget bounds them). */
  sendLog: ReturnType<typeof guestLogSender>;
  lastSeen: number;
  /** Its POST requests being answered now: a busy session is never closed for room, and a revoked
   *  principal's ends once its answers are out. */
  busy: number;
  /** Its client ended it (DELETE): its vars and its record leave the shared store with it. */
  deleted?: boolean;
  /** When its record (adoptable by another replica) was last written to the shared store, and what it holds. */
  keptAt?: number;
  initialize?: Record<string, unknown>;
}

/** What another replica needs to carry on a 2025 MCP session: whose it is and how its client initialized it. */
interface SessionRecord {
  principal: string;
  initialize: Record<string, unknown>;
}

const recordName = (sid: string) => `mcp-session:${sid}`;
/** Kept once its client ended it (DELETE), for the sessions' idle time: a replica still holding it ends its
 *  copy at the next request, and none carries it on. Apart from the record, so that no renewal overwrites it. */
const endedName = (sid: string) => `mcp-session-ended:${sid}`;

/** The MCP session to close for room: the least recently seen idle one of the principal holding the most. */
function roomFrom(connections: Iterable<Connection>): Connection | undefined {
  const all = [...connections];
  const held = new Map<string, number>();
  for (const c of all) held.set(c.principal.key, (held.get(c.principal.key) ?? 0) + 1);
  let victim: Connection | undefined;
  for (const c of all) {
    if (c.busy > 0) continue;
    const [a, b] = [held.get(c.principal.key)!, victim ? held.get(victim.principal.key)! : -1];
    if (!victim || a > b || (a === b && c.lastSeen < victim.lastSeen)) victim = c;
  }
  return victim;
}

/** A request id: the client's `X-Request-Id` when it is a plain token, else a new one. */
const requestIdOf = (req: IncomingMessage) => {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[\w.:-]{1,64}$/.test(given) ? given : randomBytes(8).toString('hex');
};

/** What `kiln mcp --http` checks before anything loads (cli.ts calls it as soon as the config is read, so a
 *  bad setting fails in milliseconds, not after the extensions are built), and again when it starts: the
 *  listening address, the replica's name, the tokens, the requestState keys. */
export function checkHttpStart(listen: string, opts: Pick<HttpOptions, 'http' | 'principals' | 'mcp'> = {}): { replica?: string; token?: string; keys?: Buffer[] } {
  const replica = process.env.KILN_REPLICA || opts.http?.replica;
  if (replica !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(replica)) throw new UsageError('KILN_REPLICA must be 1 to 32 letters, digits, _ or -');
  const { host: address } = parseListen(listen);
  const token = process.env.KILN_TOKEN || opts.http?.token;
  if (token !== undefined && token.length < MIN_TOKEN_CHARS) {
    throw new KilnError(`the bearer token (KILN_TOKEN or [http] token) is ${token.length} characters; kiln takes tokens of at least ${MIN_TOKEN_CHARS} (make one with: openssl rand -base64 32)`);
  }
  if (!token && !isLoopback(address) && !Object.values(opts.principals ?? {}).some((p) => p.tokenSha256) && !opts.http?.oauth) {
    throw new KilnError(`kiln mcp --http ${listen}: a non-loopback address needs bearer tokens: set KILN_TOKEN or [http] token, [principals.*] tokenSha256, or [http.oauth] in kiln.toml`);
  }
  return { replica, token, keys: readStateKeys(process.env.KILN_STATE_KEY, opts.mcp?.stateKeyFile) };
}

export async function serveHttp(registry: Registry, version: string, listen: string, opts: HttpOptions = {}): Promise<void> {
  const checked = checkHttpStart(listen, opts);
  const replica = checked.replica;
  const settings = { ...(opts.http ?? DEFAULT_HTTP), replica };
  const mcpSettings = opts.mcp ?? DEFAULT_MCP;
  const { host: address, port } = parseListen(listen);
  let token = checked.token;
  const named = opts.principals ?? {};
  const tables = () => opts.watch?.config?.current.principals ?? named; // a saved change applies (principals.ts)
  const log: ServerLog = (opts.logFormat ?? 'json') === 'json' ? await jsonLog({ ...(replica ? { replica } : {}) }) : textLog();
  let principals: Principals;
  if (!token && !Object.values(named).some((p) => p.tokenSha256) && !settings.oauth) {
    token = randomBytes(24).toString('base64url');
    principals = new Principals(token, tables, settings.oauth);
    log.kiln(`no token configured (KILN_TOKEN or [http] token); this run's token: ${token}`);
  } else {
    principals = new Principals(token, tables, settings.oauth); // refuses a short token
  }

  // The port first: a port in use fails before anything that would keep the process alive starts.
  // Until the handler below is attached (the store opened, the server objects made: a bounded wait), a request
  // waits for it; /healthz and /readyz answer at once (ok; 503 "starting"). Start-up that fails ends the process.
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let started!: (h: (req: IncomingMessage, res: ServerResponse) => void) => void;
  const attached = new Promise<(req: IncomingMessage, res: ServerResponse) => void>((r) => (started = r));
  // Requests being answered (every one but a GET, which is a stream that waits for events): a drain waits for
  // them as for calls, so that none is cut off half answered.
  let answering = 0;
  const http = createServer((req, res) => {
    if (req.method !== 'GET') {
      answering++;
      res.once('close', () => void answering--);
    }
    if (handler) return handler(req, res);
    const path = new URL(req.url ?? '/', 'http://kiln').pathname;
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    if (path === '/readyz') return json(res, 503, { status: 'starting' });
    void attached.then((h) => h(req, res));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (e: NodeJS.ErrnoException) => reject(new KilnError(e.code === 'EADDRINUSE'
      ? `kiln mcp --http ${listen}: the address is in use (EADDRINUSE): another process listens on it; stop it or choose another port`
      : `kiln mcp --http ${listen}: ${e.message}`)));
    http.listen(port, address, () => resolve());
  });
  const actual = (http.address() as { port: number }).port;
  const hosts = allowedHostHeaders(address, actual, settings.allowedHosts);

  const mcp = new McpHost(registry, log);
  mcp.settings = mcpSettings;
  await mcp.openStore();
  const keys = checked.keys;
  if (!keys) log.kiln('no requestState key (KILN_STATE_KEY or [mcp] stateKeyFile): approvals asked of 2026-07-28 clients are honoured by this process only, not by another replica or after a restart', 'warning');
  const metrics: Metrics = await (await import('./metrics.js')).startMetrics(mcp);
  const setup: ServerSetup = {
    host: mcp, version, listChanged: opts.watch !== undefined, states: new RequestStates(keys), tasks: new Tasks(Date.now, undefined, replica ? `${replica}.` : ''), waiting: new WaitingCalls(() => mcp.settings.maxWaitingCalls),
    stateRefused: (reason, tool) => registry.audit?.write({ type: 'approval', event: 'state-refused', tool, reason }),
    answered: (line) => {
      log.call(line);
      metrics.call(line.tool, line.outcome, line.durationMs / 1000, line.error);
    },
  };
  const connections = new Map<string, Connection>();
  /** A principal the config no longer has: its calls are stopped and its MCP sessions end (its token is
   *  refused from the next request: principals.ts). */
  const dropRevoked = () => {
    const stopped = mcp.stopCallsOf((p) => p?.revoked === true, 'its principal was removed from the config ([principals])');
    let ended = 0;
    // The stopped calls' answers go out first: a busy session ends when its last request is answered (handle).
    for (const c of [...connections.values()]) if (c.principal.revoked && (ended++, c.busy === 0)) void c.transport.close().catch(() => {});
    if (stopped || ended) log.kiln(`[principals] changed: stopped ${stopped} call(s) and ended ${ended} MCP session(s) of removed principals`);
  };
  mcp.onGuestLog = (session, logger, level, data) => {
    for (const c of connections.values()) if (c.transport.sessionId !== undefined && session === `${c.principal.key}:${c.transport.sessionId}`) c.sendLog(logger, level, data);
  };
  mcp.onNotice = (level, text) => {
    for (const c of connections.values()) sendNotice(c.server, level, text);
  };
  // 2026-07-28: one server object per request, made here (mcp/server.ts), on no transport session.
  const modern = createMcpHandler(({ authInfo }) => mcpServer(setup, { era: 'modern', principal: principals.named(authInfo!.clientId), defaultSession: () => null }), {
    legacy: 'reject', maxRequestBodySize: MAX_BODY_BYTES, onerror: (e) => log.kiln(`mcp: ${e.message}`, 'warning'),
  });
  let reload: (() => void) | undefined;
  if (opts.watch) {
    reload = (await startWatching(mcp, opts.watch, () => {
      dropRevoked();
      for (const c of connections.values()) void c.server.sendToolListChanged().catch(() => {});
      modern.notify.toolsChanged(); // to 2026-07-28 clients' subscriptions/listen streams
    }))?.reload;
  }
  const origins = new Set(settings.allowedOrigins);
  const { maxSessions, idleTtlMs } = registry.policy.sessions;
  const metadataPath = '/.well-known/oauth-protected-resource';
  const metadataUrl = settings.oauth ? `${new URL(settings.oauth.audience).origin}${metadataPath}${new URL(settings.oauth.audience).pathname.replace(/\/$/, '')}` : undefined;
  let draining = false;
  let closing = false;

  /** A 2025 MCP session of `principal`'s: a new one, or (`adopt`) one another replica began, whose id it keeps. */
  const open = async (principal: Principal, adopt?: string): Promise<Connection> => {
    let id: string | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => adopt ?? (settings.replica ? `${settings.replica}.${randomUUID()}` : randomUUID()),
      maxRequestBodySize: MAX_BODY_BYTES,
      eventStore: new SessionEvents(), // every event has an id; a broken stream resumes with Last-Event-ID
      retryInterval: 1000,
      onsessioninitialized: (sid) => {
        id = sid;
        connections.set(sid, c);
      },
    });
    const server = mcpServer(setup, { era: 'legacy', principal, defaultSession: () => id ?? 'default' });
    const c: Connection = { transport, server, principal, sendLog: guestLogSender(server, () => 0), lastSeen: Date.now(), busy: 0 };
    transport.onclose = () => {
      if (id === undefined) return;
      if (connections.get(id) === c) connections.delete(id);
      // Its guests, vars, processes and cookies here; its vars and record leave the shared store only when its
      // client ended it: closed for idleness or room, or by a stopping server, another replica may carry it on.
      mcp.sessions.close(`${principal.key}:${id}`, c.deleted === true);
      if (c.deleted && mcp.sessions.store) {
        void mcp.sessions.store.keep(endedName(id), principal.key).catch(() => {});
        void mcp.sessions.store.forget(recordName(id));
      }
    };
    await server.connect(transport);
    return c;
  };

  /** Room for one more MCP session of `principal`'s, or why there is none. A principal's MCP sessions count
   *  against its own maxSessions; at the server's, the principal holding the most gives one up (roomFrom), so
   *  that no client's flood closes everyone else's. */
  const makeRoom = async (principal: Principal): Promise<string | undefined> => {
    const mine = principal.settings.limits?.maxSessions;
    if (mine !== undefined && [...connections.values()].filter((x) => x.principal.key === principal.key).length >= mine) {
      return `this client holds ${mine} MCP sessions, the most [principals."${principal.id}".limits] maxSessions allows; end one (DELETE) or raise maxSessions`;
    }
    if (connections.size >= maxSessions) {
      const victim = roomFrom(connections.values());
      if (!victim) return `the server holds ${maxSessions} MCP sessions, all busy; retry later or raise [sessions] maxSessions`;
      await victim.transport.close().catch(() => {});
    }
    return undefined;
  };

  /** With a shared store, a 2025 MCP session this process does not hold but another replica began (it stopped,
   *  or the balancer sent the request elsewhere) is carried on here: its client's initialize is replayed into a
   *  session of the same id, so the client goes on without a 404; its kiln session's vars are in the store. */
  /** Whether the client ended this session (DELETE) at another replica; a store that cannot answer says no. */
  const endedElsewhere = async (sid: string): Promise<boolean> =>
    (await mcp.sessions.store?.recall(endedName(sid)).catch(() => undefined)) !== undefined;

  const adopting = new Map<string, Promise<Connection | undefined>>();
  const adopt = async (principal: Principal, sid: string, web: Request): Promise<Connection | undefined> => {
    const store = mcp.sessions.store;
    if (!store || draining) return undefined;
    let record: SessionRecord | undefined;
    try {
      const [text, ended] = await Promise.all([store.recall(recordName(sid)), store.recall(endedName(sid))]);
      record = text && ended === undefined ? JSON.parse(text) as SessionRecord : undefined;
    } catch {
      return undefined; // the store is down: as if there were no such session
    }
    if (!record || record.principal !== principal.key || (await makeRoom(principal)) !== undefined) return undefined;
    const c = await open(principal, sid);
    const post = (body: unknown, session?: string) => c.transport.handleRequest(new Request(web.url, {
      method: 'POST', body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session ? { 'mcp-session-id': session } : {}) },
    }));
    await (await post({ jsonrpc: '2.0', id: 'kiln-adopt', method: 'initialize', params: record.initialize })).text();
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).text();
    c.initialize = record.initialize; // renewed from the request that carried it on, so that it can move again
    log.kiln(`carried on MCP session ${sessionDigest(`${principal.key}:${sid}`)} begun elsewhere`, 'info');
    return connections.get(sid) === c ? c : undefined;
  };

  /** Keep (renew) a 2025 session's record in the shared store, at most every quarter of its idle time. */
  const keepRecord = (c: Connection, initialize?: Record<string, unknown>) => {
    const store = mcp.sessions.store;
    const sid = c.transport.sessionId;
    if (!store || sid === undefined || c.deleted || (initialize === undefined && c.keptAt !== undefined && Date.now() - c.keptAt < idleTtlMs / 4)) return;
    c.keptAt = Date.now();
    if (initialize) c.initialize = initialize;
    if (c.initialize) void store.keep(recordName(sid), JSON.stringify({ principal: c.principal.key, initialize: c.initialize } satisfies SessionRecord)).catch(() => {});
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://kiln').pathname;
    // Liveness and readiness: for a load balancer or an orchestrator, who has no token; they tell nothing.
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      if (draining) return json(res, 503, { status: 'draining' });
      if (mcp.sessions.store && !mcp.sessions.store.ready) return json(res, 503, { status: 'the session store is not reachable' });
      return json(res, 200, { status: 'ready' });
    }
    if (!hosts.has(String(req.headers.host ?? '').toLowerCase())) return refuse(res, 403, 'this Host is not one kiln serves (add it to [http] allowedHosts)');
    if (req.headers.origin !== undefined && !origins.has(req.headers.origin)) return refuse(res, 403, 'this Origin is not allowed (add it to [http] allowedOrigins)');
    if (path === metadataPath || path.startsWith(`${metadataPath}/`)) {
      const m = principals.metadata();
      return m ? json(res, 200, m) : refuse(res, 404, 'this server takes no OAuth tokens ([http.oauth] is not set)');
    }
    const t = bearerToken(req.headers.authorization);
    if (t === 'missing' || t === 'scheme') return refuseToken(res, t, metadataUrl);
    const principal = await principals.check(t, (why) => log.kiln(`http: a request's token was refused: ${why}`, 'info'));
    if (!principal) return refuseToken(res, 'invalid', metadataUrl);
    if (path === '/metrics') {
      if (principal.id !== 'default' && principal.settings.metrics !== true) return refuse(res, 403, `principal "${principal.id}" may not read the metrics (metrics = true under its [principals] table)`);
      const { body, contentType } = await metrics.scrape();
      res.writeHead(200, { 'content-type': contentType });
      return res.end(body);
    }
    if (path !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return refuse(res, 413, `requests are limited to ${MAX_BODY_BYTES} bytes`);
    const body = req.method === 'POST' ? await readBody(req, MAX_BODY_BYTES) : undefined;
    if (req.method === 'POST' && body === undefined) return refuse(res, 413, `requests are limited to ${MAX_BODY_BYTES} bytes`);
    let parsedBody: unknown;
    try {
      parsedBody = body?.length ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      // not JSON: the transport answers it
    }
    const requestId = requestIdOf(req);
    res.setHeader('x-request-id', requestId);
    const web = toWebRequest(req, res, body, requestId);
    const sid = req.headers['mcp-session-id'];
    let c = typeof sid === 'string' ? connections.get(sid) : undefined;
    if (c && c.principal.key !== principal.key) c = undefined; // another principal's: as if there were none
    if (c && typeof sid === 'string' && mcp.sessions.store && await endedElsewhere(sid)) {
      void c.transport.close().catch(() => {}); // its client ended it at another replica
      c = undefined;
    }
    if (!c && typeof sid === 'string') {
      // A principal's requests at once for a session not held here carry it on once (keyed by principal too:
      // another's request racing them neither waits for nor spoils theirs).
      const key = `${principal.key}\n${sid}`;
      let carrying = adopting.get(key);
      if (!carrying) {
        carrying = adopt(principal, sid, web).finally(() => adopting.delete(key));
        adopting.set(key, carrying);
      }
      c = await carrying;
    }
    if (!c) {
      if (sid !== undefined) return refuse(res, 404, 'no such MCP session (it ended, the server restarted, or it is not yours): initialize again');
      if (!(await isLegacyRequest(web, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES }))) {
        return writeWebResponse(res, await modern.fetch(web, { parsedBody, authInfo: { token: '', clientId: principal.id, scopes: [] } }));
      }
      if (draining) return refuse(res, 503, 'the server is stopping: connect to another replica');
      const full = await makeRoom(principal);
      if (full) return refuse(res, 503, full);
      c = await open(principal);
    }
    c.lastSeen = Date.now();
    if (req.method === 'DELETE') c.deleted = true;
    const counted = req.method === 'POST';
    if (counted) c.busy++;
    try {
      const fresh = c.transport.sessionId === undefined;
      const response = await c.transport.handleRequest(web, { parsedBody });
      // What initialize began the session is kept: only the request that began it (never a later one).
      const init = (parsedBody as { method?: string; params?: Record<string, unknown> } | undefined);
      const began = fresh && c.transport.sessionId !== undefined && init?.method === 'initialize' && init.params;
      if (response.ok) keepRecord(c, began ? init.params : undefined);
      await writeWebResponse(res, response);
    } finally {
      if (counted) c.busy--;
      c.lastSeen = Date.now();
      if (c.busy === 0 && c.principal.revoked) void c.transport.close().catch(() => {});
    }
  };

  handler = (req, res) => {
    handle(req, res).catch((e) => {
      log.kiln(`http: ${(e as Error)?.message ?? e}`, 'error');
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.destroy();
    });
  };
  started(handler);
  const shown = isIP(address) === 6 ? `[${address}]` : address;
  log.kiln(`MCP over HTTP at http://${shown}:${actual}/mcp (Authorization: Bearer <token>)`);

  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const c of [...connections.values()]) if (now - c.lastSeen > idleTtlMs) void c.transport.close();
  }, Math.max(10, Math.min(60_000, idleTtlMs / 4)));
  sweeper.unref();

  // SIGTERM: no new connections, /readyz 503; calls in flight get drainMs, then are stopped and answered.
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    draining = true;
    log.kiln(`${signal}: draining (${mcp.callsInFlight} call(s) in flight)`);
    // /readyz says so at once; the listener stays open until a load balancer has seen it (closing it, and the
    // idle connections with it, sooner races the requests the balancer is sending on them).
    const noticeMs = settings.drainNoticeMs ?? DEFAULT_DRAIN_NOTICE_MS;
    if (noticeMs > 0) await new Promise((r) => setTimeout(r, noticeMs));
    http.close();
    const drainMs = settings.drainMs ?? DEFAULT_DRAIN_MS;
    /** Resolves true once no call runs and no request is being answered, false when `ms` pass first. */
    const quiet = async (ms: number) => {
      const end = Date.now() + ms;
      if (!(await mcp.idle(ms))) return false;
      while (answering > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
      return answering === 0 && mcp.callsInFlight === 0;
    };
    if (!(await quiet(drainMs))) {
      mcp.stopCalls(`the server is stopping, and the call had not finished ${drainMs} ms later ([http] drainMs)`);
      await quiet(STOP_GRACE_MS);
    }
    for (const c of connections.values()) await c.transport.close().catch(() => {});
    await modern.close().catch(() => {});
    setup.tasks.closeAll();
    mcp.close();
    await mcp.sessions.store?.close();
    http.closeAllConnections();
    log.kiln('stopped');
    setTimeout(() => process.exit(0), 50); // the last log line written
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    if (reload) reload();
    else log.kiln('SIGHUP: there is no config file to read again (kiln was started without one)', 'warning');
  });
  process.on('exit', () => mcp.close());
}
