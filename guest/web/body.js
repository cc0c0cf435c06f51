// Request and Response, and the body both share.
import { $, isBufferSource, toBytes } from './internal.js';
import { decodeUtf8, utf8Encode } from './encoding.js';
import { URL, URLSearchParams } from './url.js';
import { Headers } from './headers.js';
import { AbortController } from './abort.js';
import { ReadableStream } from './streams.js';
import { Blob, chunkBytes, concatBytes, FormData, multipart } from './blob.js';

/** A body given to fetch/Request/Response → { bytes | stream, type } (type: the implied content-type). */
function extractBody(body, jsonObjects) {
  if (body === undefined || body === null) return { bytes: null, type: null };
  if (typeof body === 'string') return { bytes: utf8Encode(body), type: 'text/plain;charset=UTF-8' };
  if (body instanceof URLSearchParams) return { bytes: utf8Encode(body.toString()), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof FormData) return multipart(body);
  if (body instanceof Blob) return { bytes: body[$], type: body.type || null };
  if (isBufferSource(body)) return { bytes: toBytes(body).slice(), type: null };
  if (body instanceof ReadableStream) return { stream: body, type: null };
  if (jsonObjects && typeof body === 'object') return { bytes: utf8Encode(JSON.stringify(body)), type: 'application/json' };
  return { bytes: utf8Encode(String(body)), type: 'text/plain;charset=UTF-8' };
}

// ---- Body (shared by Request and Response) -----------------------------------------------------------------
async function readAll(stream) {
  const chunks = [];
  const reader = stream.getReader();
  for (;;) { const { value, done } = await reader.read(); if (done) break; chunks.push(chunkBytes(value)); }
  reader.releaseLock();
  return concatBytes(chunks);
}
class Body {
  _initBody(body) {
    const b = extractBody(body, false);
    this[$].bytes = b.bytes;
    this[$].stream = b.stream ?? null;
    this[$].used = false;
    return b.type;
  }
  get body() {
    const st = this[$];
    if (!st.stream && st.bytes) { const bytes = st.bytes; st.stream = new ReadableStream({ start(c) { c.enqueue(bytes); c.close(); } }); st.bytes = null; }
    return st.stream;
  }
  get bodyUsed() { return this[$].used; }
  async _consume() {
    const st = this[$];
    if (st.used) throw new TypeError('Body has already been used');
    st.used = true;
    if (st.stream) return readAll(st.stream);
    return st.bytes ?? new Uint8Array();
  }
  async arrayBuffer() { return (await this._consume()).slice().buffer; }
  async bytes() { return (await this._consume()).slice(); }
  async text() { return decodeUtf8(await this._consume()); }
  async json() { return JSON.parse(await this.text()); }
  async blob() { return new Blob([await this._consume()], { type: this.headers.get('content-type') ?? '' }); }
}
for (const k of ['_initBody', '_consume']) Object.defineProperty(Body.prototype, k, { enumerable: false });

/** The Fetch Standard's statuses whose responses have no body. */
const NULL_BODY_STATUS = [101, 103, 204, 205, 304];

/** A request method as the Fetch Standard normalises it: the six standard ones upper-cased, others kept as
 *  written (the host sends every method upper-cased); not a token, or CONNECT/TRACE/TRACK, is a TypeError. */
function normalizeMethod(m) {
  const method = String(m);
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(method)) throw new TypeError(`'${method}' is not a valid HTTP method.`);
  const upper = method.toUpperCase();
  if (upper === 'CONNECT' || upper === 'TRACE' || upper === 'TRACK') throw new TypeError(`'${method}' HTTP method is unsupported.`);
  return ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'].includes(upper) ? upper : method;
}

/** A clone's body: a stream body (every fetched one) is teed, each side getting every chunk (what one side has
 *  not read yet stays buffered in the guest); bytes are copied by the caller. */
function teeInto(from, to) {
  if (!from[$].stream) return;
  const [a, b] = from[$].stream.tee();
  from[$].stream = a;
  to[$].stream = b;
}

class Request extends Body {
  constructor(input, init = {}) {
    super();
    const from = input instanceof Request ? input : null;
    this[$] = {
      url: new URL(from ? from.url : String(input)).href,
      method: init.method !== undefined ? normalizeMethod(init.method) : from ? from.method : 'GET',
      headers: new Headers(init.headers ?? (from ? from.headers : undefined)),
      redirect: init.redirect ?? (from ? from.redirect : 'follow'),
      credentials: init.credentials ?? (from ? from.credentials : 'same-origin'),
      signal: init.signal ?? (from ? from.signal : new AbortController().signal),
    };
    if ((this[$].method === 'GET' || this[$].method === 'HEAD') && init.body != null) throw new TypeError('Request with GET/HEAD method cannot have body');
    const type = this._initBody(init.body !== undefined ? init.body : from ? (from[$].used ? null : (from[$].stream ?? from[$].bytes)) : null);
    if (type && !this[$].headers.has('content-type')) this[$].headers.set('content-type', type);
  }
  get url() { return this[$].url; }
  get method() { return this[$].method; }
  get headers() { return this[$].headers; }
  get redirect() { return this[$].redirect; }
  get credentials() { return this[$].credentials; }
  get signal() { return this[$].signal; }
  clone() {
    if (this[$].used) throw new TypeError('Request body already used');
    const r = new Request(this);
    teeInto(this, r);
    return r;
  }
}

class Response extends Body {
  constructor(body = null, init = {}) {
    super();
    const status = init.status ?? 200;
    if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError(`Response: status ${status} is out of range`);
    if (body !== null && NULL_BODY_STATUS.includes(status)) throw new TypeError(`Response constructor: a response with status ${status} cannot have a body`);
    this[$] = { status, statusText: String(init.statusText ?? ''), headers: new Headers(init.headers), url: '', redirected: false, type: 'default', host: false };
    const type = this._initBody(body);
    if (type && !this[$].headers.has('content-type')) this[$].headers.set('content-type', type);
  }
  get status() { return this[$].status; }
  get ok() { return this[$].status >= 200 && this[$].status < 300; }
  get statusText() { return this[$].statusText; }
  get headers() { return this[$].headers; }
  get url() { return this[$].url; }
  get redirected() { return this[$].redirected; }
  get type() { return this[$].type; }
  clone() {
    const st = this[$];
    if (st.used) throw new TypeError('Response body already used');
    const r = new Response(null, { status: 200, headers: st.headers });
    Object.assign(r[$], { status: st.status, statusText: st.statusText, url: st.url, redirected: st.redirected, type: st.type, bytes: st.bytes ? st.bytes.slice() : null });
    teeInto(this, r);
    return r;
  }
  static json(data, init = {}) {
    const headers = new Headers(init.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    return new Response(JSON.stringify(data), { ...init, headers });
  }
  static error() { const r = new Response(null, { status: 200 }); r[$].status = 0; r[$].type = 'error'; return r; }
  static redirect(url, status = 302) {
    if (![301, 302, 303, 307, 308].includes(status)) throw new RangeError(`Response.redirect: ${status} is not a redirect status`);
    return new Response(null, { status, headers: { location: new URL(url).href } });
  }
}

export { extractBody, NULL_BODY_STATUS, readAll, Request, Response };
