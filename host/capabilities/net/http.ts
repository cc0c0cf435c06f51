// Performing what capabilities/net/net.ts allows: a session's outbound HTTP, on undici.
//
// Invariants:
//  - Every hop is checked before it is made: the first URL and each redirect target, against the allow.net
//    of the tool that started the request (undici never follows a redirect by itself).
//  - [approvals] (`approve`) are asked after that check, before the first hop and before each redirect hop to
//    an origin this request has not been approved for yet; a refusal there means that hop is never made.
//  - With `denyPrivate`, the address a name resolves to is checked inside the connection's own DNS lookup,
//    so the checked address is the one connected to (no rebinding between check and connect).
//  - A response body reaches the guest chunk by chunk, only when the guest asks for the next one; past
//    `maxResponseBytes` the body is destroyed and the read fails. Nothing is buffered whole on the host.
//  - A body belongs to the extension whose handler fetched it; no other extension can read it.
//  - Cookies are kept per session, shared by `fetch` and `request`, and sent only where RFC 6265 says.
//  - The tool's secrets (secrets.ts) are added per hop, to that hop's host only when it is one of theirs; each
//    hop starts again from the guest's own headers, so a redirect elsewhere never carries one.
import { isIP } from 'node:net';
import { createRequire } from 'node:module';
import type { CookieJar } from 'tough-cookie';
import type { Agent } from 'undici';
import { KilnError, PermissionError } from '../../errors.js';
import { allowedLookup } from './allowed-lookup.js';
import { addressAllowed, checkUrl, hostAllowed, normaliseHost, type NetPolicy } from './net.js';
import type { GrantCheck } from '../../policy/grants.js';
import { withSecrets, type SecretHeader } from '../secrets/secrets.js';
import type { FetchHead } from '../shapes.js';

export class HttpError extends KilnError {
  override name = 'HttpError';
}

/** A session's own limit refused the request before it was made (not a network failure: the guest's fetch
 *  rejects with this, not with TypeError). */
export class LimitError extends KilnError {
  override name = 'LimitError';
}

export class AbortError extends KilnError {
  override name = 'AbortError';
}

export interface FetchRequest {
  url: string;
  method: string;
  headers: [string, string][];
  redirect: 'follow' | 'error' | 'manual';
}

export type { FetchHead };

/** Request headers the guest may not set: the host frames the connection itself. */
// accept-encoding is the host's: it decodes what it asks for, so a guest cannot ask for an encoding the host
// would hand over undecoded (as browsers forbid the header too).
const FORBIDDEN = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer', 'proxy-connection', 'accept-encoding']);
/** What every request carries unless the guest set it: what Node 20's fetch (undici) sends, so a server sees a
 *  guest's request as it sees the same code's in Node (User-Agent: real APIs refuse requests without one).
 *  accept-encoding is the host's alone (FORBIDDEN); brotli is still decoded when a server sends it unasked. */
const DEFAULT_HEADERS: readonly [string, string][] = [['accept', '*/*'], ['accept-language', '*'], ['sec-fetch-mode', 'cors'], ['user-agent', 'node'], ['accept-encoding', 'gzip, deflate']];
/** The Fetch Standard's request-body-header names: dropped with the body when a redirect turns a request into a GET. */
const BODY_HEADERS = new Set(['content-encoding', 'content-language', 'content-location', 'content-type']);

/** Codings one response may list (undici's fetch allows as many): each is a decoder on the host. */
const MAX_CODINGS = 5;

/** The body as the guest reads it: decoded from its content-encoding(s) (gzip, deflate, br; others are passed
 *  through as they are). The size cap counts decoded bytes, so a small compressed body that inflates past
 *  maxResponseBytes is stopped there: zlib hands out its output in 16 KiB chunks. */
function decodedBody(stream: NodeJS.ReadableStream & { destroy(): void }, encoding: string | undefined): NodeJS.ReadableStream & { destroy(): void } {
  const codings = (encoding ?? '').toLowerCase().split(',').map((c) => c.trim()).filter((c) => c && c !== 'identity');
  if (codings.length === 0) return stream;
  // Each coding is a decoder on the host, outside the guest's limits: a server listing thousands of them (a few
  // KB of header) held gigabytes and the CPU. Five, as undici's fetch allows.
  if (codings.length > MAX_CODINGS) {
    stream.on('error', () => {}); // undici's body errors when destroyed; nobody reads this one
    stream.destroy();
    throw new HttpError(`too many content-encodings in the response: ${codings.length}, at most ${MAX_CODINGS}`);
  }
  const zlib = load('node:zlib') as typeof import('node:zlib');
  const decoders = [];
  for (const c of codings.reverse()) {
    if (c === 'gzip' || c === 'x-gzip') decoders.push(zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
    else if (c === 'deflate') decoders.push(zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
    else if (c === 'br') decoders.push(zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }));
    else return stream; // an encoding the host did not ask for: the guest gets the bytes as sent
  }
  const { pipeline } = load('node:stream') as typeof import('node:stream');
  return (pipeline as any)(stream, ...decoders, () => {}) as NodeJS.ReadableStream & { destroy(): void };
}

interface OpenBody {
  owner: string;
  iterator: AsyncIterator<Buffer>;
  destroy(): void;
  received: number;
}

function parseRequest(v: unknown): FetchRequest {
  const r = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  if (typeof r.url !== 'string') throw new HttpError('fetch needs a URL');
  const method = typeof r.method === 'string' ? r.method.toUpperCase() : 'GET';
  if (!/^[A-Z][A-Z0-9_-]{0,31}$/.test(method) || method === 'CONNECT' || method === 'TRACE' || method === 'TRACK') throw new HttpError(`fetch: method ${method} is not allowed`);
  const headers = Array.isArray(r.headers)
    ? r.headers.filter((h): h is [string, string] => Array.isArray(h) && typeof h[0] === 'string' && typeof h[1] === 'string')
    : [];
  const redirect = r.redirect === 'error' || r.redirect === 'manual' ? r.redirect : 'follow';
  return { url: r.url, method, headers, redirect };
}

function headerPairs(raw: Record<string, string | string[] | undefined>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) out.push([k.toLowerCase(), x]);
  }
  return out;
}

/** A response header's value as Node's fetch shows it: one character per byte on the wire (a ByteString, which
 *  the guest's Headers requires; a UTF-8 file name in Content-Disposition arrives as Node shows it). undici's
 *  request() decodes values as UTF-8; encoding that back gives the bytes of every value that was valid UTF-8.
 *  (A byte that was not arrived as U+FFFD, and shows as "ï¿½" where Node shows the byte's latin1 character.) */
const byteString = (v: string): string => (/[^\x00-\x7f]/.test(v) ? Buffer.from(v, 'utf8').toString('latin1') : v);

const load = createRequire(import.meta.url);
// node:dns and node:http load with the first request, as undici does: `kiln run` of a script that fetches
// nothing never pays for them.
const statusText = (code: number): string => (load('node:http') as typeof import('node:http')).STATUS_CODES[code] ?? '';

const MAX_COOKIES = 3000;
const MAX_COOKIE_BYTES = 4096;
const MAX_DOMAIN_COOKIES = 180;

/** One session's HTTP state: cookie jar, open bodies, requests in flight. */
/** One per (session, extension file): its cookie jar, its open bodies and its in-flight count belong to that
 *  extension alone, so another extension in the session can neither ride its cookies nor take its slots. */
export class HttpSession {
  private cookies?: CookieJar;
  /** The session's cookies (tough-cookie and undici are loaded on first use: a process that makes no request
   *  never pays for them). */
  get jar(): CookieJar {
    return (this.cookies ??= new (load('tough-cookie') as typeof import('tough-cookie')).CookieJar());
  }
  /** At most MAX_COOKIES cookies in a jar and MAX_DOMAIN_COOKIES for one domain (Chromium's limits): the
   *  oldest go first. A server sending hundreds of Set-Cookie headers per response grew a jar without bound,
   *  and the jar lives as long as its session. */
  private async boundCookies(): Promise<void> {
    const store = this.jar.store;
    const all = (await store.getAllCookies()).sort((a, b) => (a.creationIndex ?? 0) - (b.creationIndex ?? 0));
    const perDomain = new Map<string, number>();
    for (const c of all) perDomain.set(c.domain ?? '', (perDomain.get(c.domain ?? '') ?? 0) + 1);
    let total = all.length;
    for (const c of all) { // oldest first
      const inDomain = perDomain.get(c.domain ?? '')!;
      if (total <= MAX_COOKIES && inDomain <= MAX_DOMAIN_COOKIES) continue;
      await store.removeCookie(c.domain, c.path, c.key);
      perDomain.set(c.domain ?? '', inDomain - 1);
      total--;
    }
  }
  private readonly bodies = new Map<number, OpenBody>();
  private nextBody = 1;
  private inFlight = 0;
  private agent?: Agent;
  /** The [net] settings the agent was made with. */
  private agentPolicy?: NetPolicy;

  /** `current`: the operator's [net] settings in force, read at each request (a changed config applies to the
   *  next one: its connections are made under the new settings, the old agent closes when its requests end). */
  constructor(private readonly current: () => NetPolicy) {}

  private get policy(): NetPolicy {
    return this.current();
  }

  private dispatcher(): Agent {
    const policy = this.policy;
    if (this.agent && this.agentPolicy !== policy) {
      void this.agent.close().catch(() => {});
      this.agent = undefined;
    }
    this.agentPolicy = policy;
    this.agent ??= new (load('undici') as typeof import('undici')).Agent({
      headersTimeout: policy.timeoutMs,
      bodyTimeout: policy.timeoutMs,
      connect: {
        // Check the resolved address inside the connection's own lookup: what is checked is what is used.
        lookup: allowedLookup(policy),
      },
    });
    return this.agent;
  }

  /** checkUrl, plus the operator's address rule for IP literals (names are checked at DNS lookup). */
  private async check(tool: string, href: string, net: string[], grant: GrantCheck | undefined, method: string): Promise<URL> {
    const alsoGrant = grant && ((item: string) => {
      const u = new URL(`http://${item}`);
      return hostAllowed(grant.list, normaliseHost(u.hostname), u.port ? Number(u.port) : 80) ? undefined : grant.howToGrant(item);
    });
    const url = checkUrl(tool, href, net, this.policy, alsoGrant);
    const host = normaliseHost(url.hostname);
    if (grant && !hostAllowed(grant.list, host, url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80)) {
      if (!grant.ask) throw grant.refuse(url.host);
      await grant.ask(url.host, { op: 'net', url: url.href, method }); // [policy] mode "ask": a human decides
    }
    if (isIP(host) && !addressAllowed(host, this.policy)) {
      throw new PermissionError(`${host} is a private or loopback address, which the operator forbids ([net] denyPrivate)`);
    }
    return url;
  }

  /** Send a request on behalf of `tool` (with its allow.net, the operator's grant and its secrets) and return the
   *  response head. `approve`: the [approvals] gate (CapabilityContext.approve), asked for each origin the request
   *  goes to. */
  async fetch(
    tool: string, net: string[], owner: string, raw: unknown, body: Uint8Array, signal: AbortSignal,
    grant?: GrantCheck, secrets: readonly SecretHeader[] = [], approve?: (url: URL, method: string) => Promise<void>,
  ): Promise<FetchHead> {
    const req = parseRequest(raw);
    let url = await this.check(tool, req.url, net, grant, req.method);
    const approved = new Set<string>();
    if (approve) {
      await approve(url, req.method);
      approved.add(url.origin);
    }
    if (this.inFlight >= this.policy.maxConcurrent) {
      throw new LimitError(`a session has at most ${this.policy.maxConcurrent} requests in flight (responses not yet read to the end count); read or cancel some first`);
    }
    this.inFlight++;
    let released = false;
    const release = () => {
      if (!released) this.inFlight--;
      released = true;
    };
    try {
      let method = req.method;
      let payload: Uint8Array | undefined = body.length ? body : undefined;
      const given = req.headers.filter(([k]) => !FORBIDDEN.has(k.toLowerCase()));
      let headers = [...given, ...DEFAULT_HEADERS.filter(([k]) => !given.some(([g]) => g.toLowerCase() === k))];
      for (let hop = 0; ; hop++) {
        const cookie = await this.jar.getCookieString(url.href);
        const own = withSecrets(headers, url, secrets); // this hop's host only; never carried to the next hop
        const sent = cookie ? [...own.filter(([k]) => k.toLowerCase() !== 'cookie'), ['cookie', cookie] as [string, string]] : own;
        const res = await (load('undici') as typeof import('undici')).request(url, {
          method: method as any,
          headers: sent.flat(),
          body: payload,
          dispatcher: this.dispatcher(),
          signal,
          maxRedirections: 0,
        }).catch((e: any) => {
          if (signal.aborted) throw new AbortError('the request was aborted');
          if (e instanceof PermissionError) throw e;
          const cause = e?.cause instanceof PermissionError ? e.cause : undefined;
          if (cause) throw cause;
          throw new HttpError(`${method} ${url.host}: ${e?.code ? `${e.code} ` : ''}${e?.message ?? e}`);
        });
        const decoded = headerPairs(res.headers as Record<string, string | string[]>);
        const resHeaders = decoded.map(([k, v]): [string, string] => [k, byteString(v)]);
        // Cookies as bytes, so that one goes back to the server exactly as it came (undici writes latin1).
        let cookies = 0;
        for (const [k, v] of resHeaders) {
          if (k !== 'set-cookie') continue;
          // A cookie whose name and value pass 4096 bytes is ignored, as Chromium does: with the counts in
          // boundCookies, that bounds a jar to ~12 MiB (16 KB cookies made one jar 47 MB).
          if (v.split(';', 1)[0].length > MAX_COOKIE_BYTES || v.length > 2 * MAX_COOKIE_BYTES) continue;
          await this.jar.setCookie(v, url.href, { ignoreError: true });
          cookies++;
        }
        if (cookies) await this.boundCookies();
        // A redirect's target as UTF-8, as a browser reads it (a file name in it is then percent-encoded right).
        const location = decoded.find(([k]) => k === 'location')?.[1];
        const isRedirect = [301, 302, 303, 307, 308].includes(res.statusCode) && location !== undefined;
        if (isRedirect && req.redirect !== 'manual') {
          await res.body.dump().catch(() => {});
          if (req.redirect === 'error') throw new HttpError(`${url.href} redirected to ${location}, and the request said redirect: "error"`);
          if (hop >= this.policy.maxRedirects) throw new HttpError(`more than ${this.policy.maxRedirects} redirects`);
          let next: URL;
          try {
            next = new URL(location!, url);
          } catch {
            throw new HttpError(`${url.href} redirected to an invalid URL`);
          }
          url = await this.check(tool, next.href, net, grant, method); // the same rules, on every hop
          // The Fetch Standard's HTTP-redirect fetch: a 303 (but for HEAD), or a 301/302 of a POST, goes on as a
          // GET without the body and its headers.
          if ((res.statusCode === 303 && method !== 'GET' && method !== 'HEAD') || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
            method = 'GET';
            payload = undefined;
            headers = headers.filter(([k]) => !BODY_HEADERS.has(k.toLowerCase()));
          }
          if (approve && !approved.has(url.origin)) {
            await approve(url, method);
            approved.add(url.origin);
          }
          continue;
        }
        const id = this.nextBody++;
        const bodiless = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
        // Every Content-Encoding line counts, as a comma list (a server may send one line per coding).
        const codings = resHeaders.filter(([k]) => k === 'content-encoding').map(([, v]) => v).join(', ');
        const stream = bodiless ? res.body : decodedBody(res.body, codings || undefined);
        this.bodies.set(id, {
          owner,
          iterator: stream[Symbol.asyncIterator](),
          destroy: () => {
            // undici's body emits 'error' (RequestAbortedError) when destroyed, and an 'error' nobody listens
            // for ends the process: nobody will read this body, so its error goes nowhere.
            stream.on('error', () => {});
            stream.destroy();
            release();
          },
          received: 0,
        });
        stream.once('close', release);
        return {
          status: res.statusCode,
          statusText: statusText(res.statusCode),
          url: url.href,
          redirected: hop > 0,
          headers: resHeaders,
          body: id,
        };
      }
    } catch (e) {
      release();
      throw e;
    }
  }

  /** The next chunk of a body (empty at the end). */
  async read(owner: string, id: number, signal: AbortSignal): Promise<Uint8Array> {
    const b = this.bodies.get(id);
    if (!b || b.owner !== owner) throw new HttpError('this response body is not open (already read, cancelled, or not yours)');
    const onAbort = () => b.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const { value, done } = await b.iterator.next();
      if (signal.aborted) throw new AbortError('reading the body was aborted');
      if (done) {
        this.discard(owner, id);
        return new Uint8Array();
      }
      b.received += value.length;
      if (b.received > this.policy.maxResponseBytes) {
        this.discard(owner, id);
        throw new HttpError(`the response body is larger than ${this.policy.maxResponseBytes} bytes (the server's [net] maxResponseBytes)`);
      }
      return value;
    } catch (e) {
      if (signal.aborted) throw new AbortError('reading the body was aborted');
      if (e instanceof KilnError) throw e;
      this.discard(owner, id);
      throw new HttpError(`reading the body failed: ${(e as Error)?.message ?? e}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  discard(owner: string, id: number): void {
    const b = this.bodies.get(id);
    if (!b || b.owner !== owner) return;
    this.bodies.delete(id);
    b.destroy();
  }

  /** Destroy every open body (its guest was discarded: nobody can read them any more). Cookies stay. */
  releaseBodies(): void {
    for (const b of this.bodies.values()) b.destroy();
    this.bodies.clear();
  }

  /** The operator took away hosts this extension was granted: abort its requests in flight and destroy its open
   *  bodies (the next request is judged by the new grant, on a new connection). Cookies stay. */
  revoke(): void {
    this.releaseBodies();
    void this.agent?.destroy().catch(() => {});
    this.agent = undefined;
  }

  close(): void {
    for (const b of this.bodies.values()) b.destroy();
    this.bodies.clear();
    void this.agent?.close().catch(() => {});
  }
}
