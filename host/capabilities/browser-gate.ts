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
import http from 'node:http';
import net from 'node:net';
import { browserUrlAllowed, hostOf } from './browser-policy.js';

export class BrowserGate {
  private readonly server: http.Server;
  /** The allow.browser of each tool driving the context now. */
  private readonly drivers = new Map<number, string[]>();
  private nextDriver = 1;
  /** The hosts refused most recently (newest last, at most 20). */
  readonly refused: string[] = [];
  readonly ready: Promise<number>;

  constructor() {
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

  private refuse(target: string): void {
    this.refused.push(target);
    if (this.refused.length > 20) this.refused.shift();
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
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = http.request({ host: u.hostname, port: u.port || 80, path: u.pathname + u.search, method: req.method, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    const stream = { destroy: () => { upstream.destroy(); res.destroy(); } };
    this.tunnels.set(stream, url);
    res.on('close', () => this.tunnels.delete(stream));
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
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
    this.tunnels.set(socket, url);
    socket.on('close', () => this.tunnels.delete(socket));
    const upstream = net.connect(Number(m[2]), m[1].replace(/^\[|\]$/g, ''), () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
  }

  close(): void {
    this.server.close();
    this.server.closeAllConnections?.();
  }
}
