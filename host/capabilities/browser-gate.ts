// The origin gate of `allow.browser`. Every request a session's browser context makes — navigations, each
// hop of a redirect, frames, images, scripts, the page's own fetch/XHR, WebSockets — goes through this proxy
// (the context is created with it, loopback included), so it is judged before it leaves the browser. A
// Playwright route would not do: it never sees the hops of a redirect.
//
// Invariants:
//  - A request is let through only while a call of a tool that declares `allow.browser` drives the context
//    (from its first browser op until its guest is idle: SessionBrowser), and only to a host every such call
//    allows (`allowed` below). Between calls nothing goes out, and tunnels opened earlier are cut.
//  - Refused requests get a 403 from the gate and never reach their host; the gate remembers the last ones,
//    so an operation can say which host was refused and which setting would allow it.
//  - The gate, not Chromium, resolves names (a browser behind an HTTP proxy sends it the name), so `[net]
//    denyPrivate` holds for the browser as for fetch: IP literals are judged before connecting, names inside
//    the connection's own DNS lookup (what is checked is what is used; a rebinding name gains nothing).
import http from 'node:http';
import net from 'node:net';
import { browserUrlAllowed, hostOf } from './browser-policy.js';
import { allowedLookup, PrivateAddressError } from './allowed-lookup.js';
import { addressAllowed, type NetPolicy } from './net.js';

/** Why the gate refused a host: not allowed by the driving tools, or a private address under denyPrivate. */
export type Refusal = 'origin' | 'private';

export class BrowserGate {
  private readonly server: http.Server;
  /** The allow.browser of each tool driving the context now. */
  private readonly drivers = new Map<number, string[]>();
  private nextDriver = 1;
  /** The hosts refused most recently (newest last, at most 20), and why each was. */
  readonly refused: string[] = [];
  readonly reasons: Refusal[] = [];
  /** How many requests were refused since the gate opened (`refused` keeps only the last 20). */
  total = 0;
  readonly ready: Promise<number>;

  /** `netPolicy`: the operator's [net] settings, read at each connection (a config reload applies at once). */
  constructor(private readonly netPolicy: () => NetPolicy) {
    this.server = http.createServer((req, res) => this.forward(req, res));
    this.server.on('connect', (req, socket: net.Socket, head) => this.tunnel(req, socket, head));
    this.server.on('clientError', (_e, socket) => socket.destroy());
    this.ready = new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port));
    });
  }

  /** Open tunnels (CONNECT: https, WebSockets) and plain requests still streaming, by their target URL: judged
   *  when they open, so they are cut when no tool drives the context any more, and when a tool that does not
   *  allow their target starts to (a slow upload or a long poll must not outlive the call that started it). */
  private readonly tunnels = new Map<{ destroy(): void }, string>();

  /** A tool with `allow.browser` = `entries` drives the context until the returned function is called. */
  drive(entries: string[]): () => void {
    const id = this.nextDriver++;
    this.drivers.set(id, entries);
    for (const [socket, url] of this.tunnels) if (!browserUrlAllowed(url, entries)) socket.destroy();
    return () => {
      this.drivers.delete(id);
      if (this.drivers.size === 0) for (const socket of this.tunnels.keys()) socket.destroy();
    };
  }

  /** Whether `url` may be requested now: some tool drives the context, and every driving tool allows it. */
  allowed(url: string): boolean {
    if (this.drivers.size === 0) return false;
    for (const entries of this.drivers.values()) if (!browserUrlAllowed(url, entries)) return false;
    return true;
  }

  private refuse(target: string, why: Refusal = 'origin'): void {
    this.total++;
    this.refused.push(target);
    this.reasons.push(why);
    if (this.refused.length > 20) {
      this.refused.shift();
      this.reasons.shift();
    }
  }

  /** Plain http: the browser sends the absolute URL. */
  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? '';
    if (!/^http:\/\//i.test(url) || !this.allowed(url)) {
      this.refuse(hostOf(url));
      res.writeHead(403, { 'content-type': 'text/plain' }).end('refused by kiln: not in the tool\'s allow.browser');
      return;
    }
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const refusePrivate = () => {
      this.refuse(hostOf(url), 'private');
      res.writeHead(403, { 'content-type': 'text/plain' }).end('refused by kiln: a private or loopback address ([net] denyPrivate)');
    };
    if (net.isIP(host) && !addressAllowed(host, this.netPolicy())) return refusePrivate();
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    // A connection of its own (agent: false): a pooled one would skip the lookup, so a host reached while
    // denyPrivate was off would stay reachable after the operator turned it on.
    const upstream = http.request({ host, port: u.port || 80, path: u.pathname + u.search, method: req.method, headers, lookup: allowedLookup(this.netPolicy()), agent: false }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    const stream = { destroy: () => { upstream.destroy(); res.destroy(); } };
    this.tunnels.set(stream, url);
    res.on('close', () => this.tunnels.delete(stream));
    upstream.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else if (e instanceof PrivateAddressError) refusePrivate();
      else res.writeHead(502).end();
    });
    req.pipe(upstream);
  }

  /** https and WebSockets: CONNECT host:port, judged as https:// or wss:// to it. */
  private tunnel(req: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    const target = req.url ?? '';
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
    socket.on('error', () => {});
    if (!m || !this.allowed(`https://${target}/`)) {
      this.refuse(target);
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const url = `https://${target}/`;
    const host = m[1].replace(/^\[|\]$/g, '');
    const refusePrivate = () => {
      this.refuse(target, 'private');
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    };
    if (net.isIP(host) && !addressAllowed(host, this.netPolicy())) return refusePrivate();
    this.tunnels.set(socket, url);
    socket.on('close', () => this.tunnels.delete(socket));
    let open = false;
    const upstream = net.connect({ port: Number(m[2]), host, lookup: allowedLookup(this.netPolicy()) }, () => {
      open = true;
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (e) => (!open && e instanceof PrivateAddressError ? refusePrivate() : socket.destroy()));
    socket.on('close', () => upstream.destroy());
  }

  /** Stop: every connection the browser holds to the gate, and every stream and tunnel to a host, is cut. */
  close(): void {
    for (const socket of this.tunnels.keys()) socket.destroy();
    this.tunnels.clear();
    this.server.close();
    this.server.closeAllConnections?.();
  }
}

