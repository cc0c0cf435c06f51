// The origin gate of `allow.browser`. Every request a session's browser context makes — navigations, each
// hop of a redirect, frames, images, scripts, the page's own fetch/XHR, WebSockets — goes through this proxy
// (the context is created with it, loopback included), so it is judged before it leaves the browser. A
// Playwright route would not do: it never sees the hops of a redirect.
//
// Invariants:
//  - A request is let through only while a call of a tool that declares `allow.browser` drives the context
//    (from its first browser op until its guest is idle: SessionBrowser, context.ts), and only when every
//    driving call's rule lets it (policy.ts `pageRequestVerdict`, the rule fetch follows: declared ∩ granted, a
//    declared host the grant does not list asked in mode "ask", anything else refused). Between calls
//    nothing goes out, and tunnels opened earlier are cut.
//  - In mode "ask" a host is put to a human at most once per driving call (requests to it wait for that one
//    answer); a refused answer, or nobody to ask, refuses every request to that host for the rest of the call.
//  - Every request judged while a call drives the context is a decision line in the audit log of each
//    driving call (Driver.record): allowed, or refused with the reason.
//  - Refused requests get a 403 from the gate and never reach their host; the gate remembers the last ones,
//    so an operation can say which host was refused and which setting would allow it.
//  - The gate, not Chromium, resolves names (a browser behind an HTTP proxy sends it the name), so `[net]
//    denyPrivate` holds for the browser as for fetch: IP literals are judged before connecting, names inside
//    the connection's own DNS lookup (what is checked is what is used; a rebinding name gains nothing).
import http from 'node:http';
import net from 'node:net';
import { hostOf, pageRequestVerdict, type PageRule, type PageVerdict } from './policy.js';
import { allowedLookup, PrivateAddressError } from '../net/allowed-lookup.js';
import { addressAllowed, type NetPolicy } from '../net/net.js';

/** Why the gate refused a host: not allowed by the driving tools, or a private address under denyPrivate. */
export type Refusal = 'origin' | 'private';

/** One decision on a page's request, for the audit log: `by` "grant" when the operator's grant (or mode)
 *  decided, "setting" when allow.browser or an operator setting ([net] denyPrivate) did. */
export interface PageDecision {
  method: string;
  url: string;
  verdict: 'allow' | 'deny';
  by: 'grant' | 'setting';
  reason?: string;
}

/** One call driving the context: its rule (`approved` grows as a human allows hosts), how mode "ask" asks
 *  (rejects with the refusal when the answer is no), and where its decisions are logged. */
export interface Driver {
  rule: PageRule & { approved: Set<string> };
  ask?(host: string, url: string): Promise<void>;
  record?(d: PageDecision): void;
  /** The refusal's text for a denied verdict, naming the line that would allow it. */
  explain?(v: PageVerdict & { verdict: 'deny' }): string;
}

/** A driver's questions, one per host: the answer every request to that host waits for. */
type Questions = Map<string, Promise<unknown>>;

export class BrowserGate {
  private readonly server: http.Server;
  /** The calls driving the context now. */
  private readonly drivers = new Map<number, Driver>();
  private readonly questions = new WeakMap<Driver, Questions>();
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

  /** `driver` drives the context until the returned function is called. */
  drive(driver: Driver): () => void {
    const id = this.nextDriver++;
    this.drivers.set(id, driver);
    for (const [socket, url] of this.tunnels) if (pageRequestVerdict(url, driver.rule).verdict !== 'allow') socket.destroy();
    return () => {
      this.drivers.delete(id);
      if (this.drivers.size === 0) for (const socket of this.tunnels.keys()) socket.destroy();
    };
  }

  /** Whether `url` may be requested now without asking anyone: some call drives the context, and every
   *  driving call's rule lets it through. */
  allowed(url: string): boolean {
    if (this.drivers.size === 0) return false;
    for (const d of this.drivers.values()) if (pageRequestVerdict(url, d.rule).verdict !== 'allow') return false;
    return true;
  }

  /** Mode "ask": `driver`'s one question about `host` (asked at most once per call); resolves when a human
   *  allowed it (the host is then in the driver's `approved`), rejects with the refusal otherwise. */
  askFor(driver: Driver, host: string, url: string): Promise<unknown> {
    let qs = this.questions.get(driver);
    if (!qs) this.questions.set(driver, (qs = new Map()));
    let q = qs.get(host);
    if (!q) {
      q = (driver.ask ? driver.ask(host, url) : Promise.reject(new Error('nobody may be asked'))).then(() => {
        driver.rule.approved.add(host);
      });
      q.catch(() => {});
      qs.set(host, q);
    }
    return q;
  }

  /** The gate's decision on one request of the page: refused (with the first reason, recorded for each
   *  driving call), or let through after any question mode "ask" puts to a human: then the returned function
   *  records the allowance, called once the request leaves (a private address may still refuse it). */
  private async judge(url: string, method: string): Promise<(() => void) | undefined> {
    const drivers = [...this.drivers.values()];
    if (drivers.length === 0) return undefined; // no call drives the context: nobody to attribute it to, refused
    const verdicts = drivers.map((d) => [d, pageRequestVerdict(url, d.rule)] as const);
    const deny = (by: PageDecision['by'], reason: string) => {
      for (const d of drivers) d.record?.({ method, url, verdict: 'deny', by, reason });
      return undefined;
    };
    for (const [d, v] of verdicts) {
      if (v.verdict === 'deny') {
        return deny(v.by === 'grant' ? 'grant' : 'setting', d.explain?.(v) ?? (v.by === 'grant'
          ? `${v.host} is declared in allow.browser but not granted ([grants] browser)`
          : `${v.host} is not in the allow.browser of a tool driving the page`));
      }
    }
    for (const [d, v] of verdicts) {
      if (v.verdict !== 'ask') continue;
      try {
        await this.askFor(d, v.host, url);
      } catch (e) {
        return deny('grant', (e as Error)?.message ?? String(e));
      }
    }
    // The calls that judged it must still drive the context (a question outlasts its call's end).
    for (const d of drivers) if (![...this.drivers.values()].includes(d)) return deny('setting', 'the call that drove the page ended');
    let done = false;
    return () => {
      if (!done) for (const d of drivers) d.record?.({ method, url, verdict: 'allow', by: 'grant' });
      done = true;
    };
  }

  /** A request the gate let through was refused later, for a private address ([net] denyPrivate). */
  private refusedPrivate(url: string, method: string): void {
    for (const d of this.drivers.values()) d.record?.({ method, url, verdict: 'deny', by: 'setting', reason: `${hostOf(url)} is or resolves to a private or loopback address ([net] denyPrivate)` });
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
    const method = req.method ?? 'GET';
    const refuse = () => {
      this.refuse(hostOf(url));
      res.writeHead(403, { 'content-type': 'text/plain' }).end('refused by kiln: not in the tool\'s allow.browser, or not granted');
    };
    if (!/^http:\/\//i.test(url)) return refuse();
    req.pause(); // its body waits for the decision
    void this.judge(url, method).then((allow) => (allow ? this.send(req, res, url, allow) : refuse()), refuse).catch(() => res.destroy());
  }

  private send(req: http.IncomingMessage, res: http.ServerResponse, url: string, allow: () => void): void {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const refusePrivate = () => {
      this.refuse(hostOf(url), 'private');
      this.refusedPrivate(url, req.method ?? 'GET');
      res.writeHead(403, { 'content-type': 'text/plain' }).end('refused by kiln: a private or loopback address ([net] denyPrivate)');
    };
    if (net.isIP(host) && !addressAllowed(host, this.netPolicy())) return refusePrivate();
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    // A connection of its own (agent: false): a pooled one would skip the lookup, so a host reached while
    // denyPrivate was off would stay reachable after the operator turned it on.
    const upstream = http.request({ host, port: u.port || 80, path: u.pathname + u.search, method: req.method, headers, lookup: allowedLookup(this.netPolicy()), agent: false }, (r) => {
      allow();
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    const stream = { destroy: () => { upstream.destroy(); res.destroy(); } };
    this.tunnels.set(stream, url);
    res.on('close', () => this.tunnels.delete(stream));
    upstream.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else if (e instanceof PrivateAddressError) refusePrivate();
      else {
        allow(); // let out; the host itself failed
        res.writeHead(502).end();
      }
    });
    req.pipe(upstream);
    req.resume();
  }

  /** https and WebSockets: CONNECT host:port, judged as https:// to it. */
  private tunnel(req: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    const target = req.url ?? '';
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
    socket.on('error', () => {});
    const refuse = () => {
      this.refuse(target);
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    };
    if (!m) return refuse();
    const url = `https://${target}/`;
    void this.judge(url, 'CONNECT').then((allow) => (allow && !socket.destroyed ? this.open(socket, head, url, target, m[1], Number(m[2]), allow) : refuse()), refuse)
      .catch(() => socket.destroy());
  }

  private open(socket: net.Socket, head: Buffer, url: string, target: string, name: string, port: number, allow: () => void): void {
    const host = name.replace(/^\[|\]$/g, '');
    const refusePrivate = () => {
      this.refuse(target, 'private');
      this.refusedPrivate(url, 'CONNECT');
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    };
    if (net.isIP(host) && !addressAllowed(host, this.netPolicy())) return refusePrivate();
    this.tunnels.set(socket, url);
    socket.on('close', () => this.tunnels.delete(socket));
    let open = false;
    const upstream = net.connect({ port, host, lookup: allowedLookup(this.netPolicy()) }, () => {
      open = true;
      allow();
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (e) => {
      if (!open && e instanceof PrivateAddressError) return refusePrivate();
      allow();
      socket.destroy();
    });
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

