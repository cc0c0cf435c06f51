// Request and Response, and the body both share.
import { $, isBufferSource, toBytes } from './internal.js';
import { decodeUtf8, utf8Encode } from './encoding.js';
import { URL, URLSearchParams } from './url.js';
import { Headers, IMMUTABLE, makeImmutable } from './headers.js';
import { AbortController } from './abort.js';
import { ReadableStream } from './streams.js';
import { Blob, chunkBytes, concatBytes, FormData, multipart, parseMultipart } from './blob.js';

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
  // Used once its stream was read from or cancelled, by the body methods or by a reader (the standard's
  // "disturbed").
  get bodyUsed() { const st = this[$]; return st.used || (st.stream !== null && st.stream[$].disturbed); }
  async _consume() {
    const st = this[$];
    if (this.bodyUsed) throw new TypeError('Body has already been used');
    if (st.stream && st.stream.locked) throw new TypeError('Body is unusable: its stream is locked to a reader');
    st.used = true;
    if (st.stream) return readAll(st.stream);
    return st.bytes ?? new Uint8Array();
  }
  async arrayBuffer() { return (await this._consume()).slice().buffer; }
  async bytes() { return (await this._consume()).slice(); }
  async text() { return decodeUtf8(await this._consume()); }
  async json() { return JSON.parse(await this.text()); }
  async blob() { return new Blob([await this._consume()], { type: this.headers.get('content-type') ?? '' }); }
  /** The body as FormData, by its Content-Type: application/x-www-form-urlencoded or multipart/form-data. */
  async formData() {
    const type = this.headers.get('content-type') ?? '';
    const essence = type.split(';')[0].trim().toLowerCase();
    const boundary = /;\s*boundary=(?:"([^"]*)"|([^;]*))/i.exec(type);
    if (essence === 'multipart/form-data' && boundary) {
      const form = parseMultipart(await this._consume(), boundary[1] ?? boundary[2].trim());
      if (form) return form;
    } else if (essence === 'application/x-www-form-urlencoded') {
      const form = new FormData();
      for (const [k, v] of new URLSearchParams(await this.text())) form.append(k, v);
      return form;
    }
    throw new TypeError(`${this.constructor.name}.formData: Could not parse content as FormData.`);
  }
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

/** The Fetch Standard's Request members kiln keeps as given: a guest's fetch has no CORS, cache or referrer of
 *  its own (the host makes the request), so these only read back what was set. */
const REQUEST_DEFAULTS = { cache: 'default', mode: 'cors', destination: '', referrer: 'about:client', referrerPolicy: '', integrity: '', keepalive: false, duplex: 'half' };

class Request extends Body {
  constructor(input, init = {}) {
    super();
    const from = input instanceof Request ? input : null;
    const url = from ? new URL(from.url) : new URL(String(input));
    // Node's fetch refuses a URL with user:password (credentials go in a header), and so does kiln's.
    if (url.username || url.password) throw new TypeError(`Request cannot be constructed from a URL that includes credentials: ${String(input)}`);
    if (from && init.body == null && from.bodyUsed) throw new TypeError('Cannot construct a Request with a Request object that has already been used.');
    this[$] = {
      ...Object.fromEntries(Object.entries(REQUEST_DEFAULTS).map(([k, v]) => [k, init[k] ?? (from ? from[$][k] : v)])),
      url: url.href,
      method: init.method !== undefined ? normalizeMethod(init.method) : from ? from.method : 'GET',
      headers: new Headers(init.headers ?? (from ? from.headers : undefined)),
      redirect: init.redirect ?? (from ? from.redirect : 'follow'),
      credentials: init.credentials ?? (from ? from.credentials : 'same-origin'),
      signal: init.signal ?? (from ? from.signal : new AbortController().signal),
    };
    if ((this[$].method === 'GET' || this[$].method === 'HEAD') && init.body != null) throw new TypeError('Request with GET/HEAD method cannot have body');
    if (init.body instanceof ReadableStream && init.duplex !== 'half') throw new TypeError('RequestInit: duplex option is required when sending a body.');
    const type = this._initBody(init.body !== undefined ? init.body : from ? (from[$].used ? null : (from[$].stream ?? from[$].bytes)) : null);
    if (type && !this[$].headers.has('content-type')) this[$].headers.set('content-type', type);
  }
  get url() { return this[$].url; }
  get method() { return this[$].method; }
  get headers() { return this[$].headers; }
  get redirect() { return this[$].redirect; }
  get credentials() { return this[$].credentials; }
  get signal() { return this[$].signal; }
  get cache() { return this[$].cache; }
  get mode() { return this[$].mode; }
  get destination() { return this[$].destination; }
  get referrer() { return this[$].referrer; }
  get referrerPolicy() { return this[$].referrerPolicy; }
  get integrity() { return this[$].integrity; }
  get keepalive() { return this[$].keepalive; }
  get duplex() { return this[$].duplex; }
  clone() {
    if (this.bodyUsed) throw new TypeError('Request body already used');
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
    if (init.statusText !== undefined && !/^[\t\x20-\x7e\x80-\xff]*$/.test(String(init.statusText))) throw new TypeError('Response constructor: invalid statusText');
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
    if (this.bodyUsed) throw new TypeError('Response body already used');
    const r = new Response(null, { status: 200, headers: st.headers });
    if (st.headers[IMMUTABLE]) makeImmutable(r[$].headers);
    Object.assign(r[$], { status: st.status, statusText: st.statusText, url: st.url, redirected: st.redirected, type: st.type, bytes: st.bytes ? st.bytes.slice() : null });
    teeInto(this, r);
    return r;
  }
  static json(data, init = {}) {
    const headers = new Headers(init.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    const text = JSON.stringify(data);
    if (text === undefined) throw new TypeError('Response.json: the data is not JSON serializable');
    return new Response(text, { ...init, headers });
  }
  static error() { const r = new Response(null, { status: 200 }); r[$].status = 0; r[$].type = 'error'; makeImmutable(r[$].headers); return r; }
  static redirect(url, status = 302) {
    if (![301, 302, 303, 307, 308].includes(status)) throw new RangeError(`Response.redirect: ${status} is not a redirect status`);
    const r = new Response(null, { status, headers: { location: new URL(url).href } });
    makeImmutable(r[$].headers);
    return r;
  }
}

export { extractBody, NULL_BODY_STATUS, readAll, Request, Response };
