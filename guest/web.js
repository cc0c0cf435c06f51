// The guest's web platform: URL, TextEncoder/TextDecoder, Headers, AbortController, Blob, FormData,
// ReadableStream, Request, Response, fetch, the Playwright-style `request` client, `process`, `performance`.
//
// Compiled into the same script as prelude.js (scripts/build-engine.mjs wraps both), and installed by it.
// Nothing here decides anything: every request goes to the host's `http` interface, which checks it.
// The engine (quickjs-ng) has none of these APIs; they are written to the WHATWG specs as far as extensions need.
function kilnInstallWeb(native, api) {
  'use strict';
  const { define, startOp, current } = api;
  const $ = Symbol('kiln.internal');
  const isBufferSource = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);
  const toBytes = (v) => (v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength));

  // ---- DOMException, Event, EventTarget ----------------------------------------------------------
  class DOMException extends Error {
    constructor(message = '', name = 'Error') {
      super(message);
      Object.defineProperty(this, 'name', { value: name, configurable: true, writable: true });
    }
  }
  class Event {
    constructor(type) { this.type = String(type); this.target = null; this.defaultPrevented = false; }
    preventDefault() { this.defaultPrevented = true; }
  }
  class EventTarget {
    constructor() { Object.defineProperty(this, $, { value: { listeners: new Map() }, writable: true }); }
    addEventListener(type, fn, opts) {
      if (typeof fn !== 'function') return;
      const list = this[$].listeners.get(type) ?? [];
      if (!list.some((l) => l.fn === fn)) list.push({ fn, once: !!(opts && opts.once) });
      this[$].listeners.set(type, list);
    }
    removeEventListener(type, fn) {
      const list = this[$].listeners.get(type);
      if (list) this[$].listeners.set(type, list.filter((l) => l.fn !== fn));
    }
    dispatchEvent(event) {
      event.target = this;
      const handler = this['on' + event.type];
      if (typeof handler === 'function') handler.call(this, event);
      for (const l of [...(this[$].listeners.get(event.type) ?? [])]) {
        if (l.once) this.removeEventListener(event.type, l.fn);
        l.fn.call(this, event);
      }
      return !event.defaultPrevented;
    }
  }
  define('DOMException', DOMException);
  define('Event', Event);
  define('EventTarget', EventTarget);

  // ---- TextEncoder / TextDecoder (UTF-8) ------------------------------------------------------------
  function utf8Encode(str) {
    const s = String(str);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  }
  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(s = '') { return utf8Encode(s); }
    encodeInto(s, dest) { const b = utf8Encode(s); const n = Math.min(b.length, dest.length); dest.set(b.subarray(0, n)); return { read: String(s).length, written: n }; }
  }
  class TextDecoder {
    constructor(label = 'utf-8', opts = {}) {
      if (!/^(utf-?8|unicode-1-1-utf-8)$/i.test(String(label).trim())) throw new RangeError(`TextDecoder: only utf-8 is supported, not ${label}`);
      this[$] = { fatal: !!opts.fatal, ignoreBOM: !!opts.ignoreBOM, pending: [], bomSeen: false };
    }
    get encoding() { return 'utf-8'; }
    get fatal() { return this[$].fatal; }
    decode(input, opts = {}) {
      const st = this[$];
      const bytes = input === undefined ? new Uint8Array() : toBytes(input);
      const all = st.pending.length ? new Uint8Array([...st.pending, ...bytes]) : bytes;
      st.pending = [];
      let out = '';
      let i = 0;
      const bad = () => { if (st.fatal) throw new TypeError('The encoded data was not valid utf-8'); out += '\ufffd'; };
      while (i < all.length) {
        const b = all[i];
        const need = b < 0x80 ? 0 : b >= 0xf0 && b <= 0xf4 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 && b <= 0xdf ? 1 : -1;
        if (need < 0) { bad(); i++; continue; }
        if (i + need >= all.length && need > 0 && opts.stream) { st.pending = [...all.subarray(i)]; break; }
        let cp = need === 0 ? b : b & (0x3f >> need);
        let ok = true;
        for (let k = 1; k <= need; k++) {
          const c = all[i + k];
          if (c === undefined || (c & 0xc0) !== 0x80) { ok = false; break; }
          cp = (cp << 6) | (c & 63);
        }
        if (!ok || (need === 2 && cp < 0x800) || (need === 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) { bad(); i++; continue; }
        out += String.fromCodePoint(cp);
        i += need + 1;
      }
      if (!st.bomSeen && out.length) {
        st.bomSeen = true;
        if (!st.ignoreBOM && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
      }
      if (!opts.stream) st.bomSeen = false;
      return out;
    }
  }
  define('TextEncoder', TextEncoder);
  define('TextDecoder', TextDecoder);
  const decodeUtf8 = (b) => new TextDecoder().decode(b);

  // ---- URLSearchParams and URL ---------------------------------------------------------------------
  const formEncode = (s) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  const formDecode = (s) => { const t = s.replace(/\+/g, ' '); try { return decodeURIComponent(t); } catch { return t; } };
  class URLSearchParams {
    constructor(init = '') {
      this[$] = { list: [], url: null };
      if (init instanceof URLSearchParams) this[$].list = init[$].list.map((p) => [...p]);
      else if (typeof init === 'object' && init !== null && typeof init[Symbol.iterator] === 'function') {
        for (const pair of init) { const p = [...pair]; if (p.length !== 2) throw new TypeError('URLSearchParams: each pair needs a name and a value'); this[$].list.push([String(p[0]), String(p[1])]); }
      } else if (typeof init === 'object' && init !== null) {
        for (const k of Object.keys(init)) this[$].list.push([k, String(init[k])]);
      } else this[$].list = parseQuery(String(init));
    }
    get size() { return this[$].list.length; }
    append(n, v) { this[$].list.push([String(n), String(v)]); this._update(); }
    delete(n, v) { this[$].list = this[$].list.filter(([k, x]) => k !== String(n) || (v !== undefined && x !== String(v))); this._update(); }
    get(n) { const p = this[$].list.find(([k]) => k === String(n)); return p ? p[1] : null; }
    getAll(n) { return this[$].list.filter(([k]) => k === String(n)).map(([, v]) => v); }
    has(n, v) { return this[$].list.some(([k, x]) => k === String(n) && (v === undefined || x === String(v))); }
    set(n, v) {
      const name = String(n), list = this[$].list, i = list.findIndex(([k]) => k === name);
      if (i < 0) list.push([name, String(v)]);
      else { list[i][1] = String(v); this[$].list = list.filter(([k], j) => k !== name || j === i); }
      this._update();
    }
    sort() { this[$].list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this._update(); }
    forEach(fn, self) { for (const [k, v] of this[$].list) fn.call(self, v, k, this); }
    keys() { return this[$].list.map(([k]) => k)[Symbol.iterator](); }
    values() { return this[$].list.map(([, v]) => v)[Symbol.iterator](); }
    entries() { return this[$].list.map((p) => [...p])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this[$].list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&'); }
    _update() { const u = this[$].url; if (u) { const q = this.toString(); u[$].search = q ? '?' + q : ''; u[$].href = null; } }
  }
  Object.defineProperty(URLSearchParams.prototype, '_update', { enumerable: false });
  function parseQuery(q) {
    const s = q.startsWith('?') ? q.slice(1) : q;
    return s ? s.split('&').filter(Boolean).map((part) => { const i = part.indexOf('='); return i < 0 ? [formDecode(part), ''] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]; }) : [];
  }

  const URL_PARTS = ['protocol', 'username', 'password', 'hostname', 'port', 'pathname', 'search', 'hash'];
  class URL {
    constructor(input, base) {
      const parsed = JSON.parse(native.parseUrl(String(input), base === undefined ? undefined : String(base)));
      this[$] = parsed;
      const params = new URLSearchParams(parsed.search);
      params[$].url = this;
      Object.defineProperty(this, 'searchParams', { value: params, enumerable: true });
    }
    static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
    get href() {
      const s = this[$];
      if (s.href === null) this._reparse(this._compose());
      return this[$].href;
    }
    set href(v) { this._reparse(String(v)); }
    get origin() { return this.href && this[$].origin; }
    get host() { return this.href && this[$].host; }
    set host(v) { const h = String(v); const i = h.lastIndexOf(':'); this._set({ hostname: i > 0 && !h.endsWith(']') ? h.slice(0, i) : h, port: i > 0 && !h.endsWith(']') ? h.slice(i + 1) : this[$].port }); }
    toString() { return this.href; }
    toJSON() { return this.href; }
    _compose() {
      const s = this[$];
      const auth = s.username || s.password ? `${s.username}${s.password ? ':' + s.password : ''}@` : '';
      const special = /^(https?|wss?|ftp|file):$/.test(s.protocol);
      const host = s.hostname + (s.port ? ':' + s.port : '');
      const path = s.pathname && !s.pathname.startsWith('/') && (special || host) ? '/' + s.pathname : s.pathname;
      return `${s.protocol}${special || host ? '//' : ''}${auth}${host}${path}${s.search}${s.hash}`;
    }
    _reparse(href) {
      const parsed = JSON.parse(native.parseUrl(href, undefined));
      this[$] = parsed;
      this.searchParams[$].list = parseQuery(parsed.search);
    }
    _set(parts) {
      const s = this[$];
      this.href; // settle pending changes
      const next = { ...s, ...parts };
      if (parts.search !== undefined) next.search = parts.search === '' ? '' : (String(parts.search).startsWith('?') ? '' : '?') + parts.search;
      if (parts.hash !== undefined) next.hash = parts.hash === '' ? '' : (String(parts.hash).startsWith('#') ? '' : '#') + parts.hash;
      if (parts.protocol !== undefined && !String(parts.protocol).endsWith(':')) next.protocol = parts.protocol + ':';
      this[$] = next;
      try { this._reparse(this._compose()); } catch { this[$] = s; }
    }
  }
  for (const k of URL_PARTS) {
    Object.defineProperty(URL.prototype, k, {
      get() { return this.href && this[$][k]; },
      set(v) { this._set({ [k]: String(v) }); },
      enumerable: true, configurable: true,
    });
  }
  for (const k of ['_compose', '_reparse', '_set']) Object.defineProperty(URL.prototype, k, { enumerable: false });
  define('URL', URL);
  define('URLSearchParams', URLSearchParams);

  // ---- Headers -----------------------------------------------------------------------------------------
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const normValue = (v) => String(v).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  class Headers {
    constructor(init) {
      this[$] = [];
      if (init instanceof Headers) this[$] = init[$].map((p) => [...p]);
      else if (init && typeof init[Symbol.iterator] === 'function') for (const pair of init) { const p = [...pair]; if (p.length !== 2) throw new TypeError('Headers: each pair needs a name and a value'); this.append(p[0], p[1]); }
      else if (init && typeof init === 'object') for (const k of Object.keys(init)) this.append(k, init[k]);
    }
    _name(n) { const s = String(n); if (!TOKEN.test(s)) throw new TypeError(`Headers: invalid header name "${s}"`); return s.toLowerCase(); }
    append(n, v) { const value = normValue(v); if (/[\0\r\n]/.test(value)) throw new TypeError('Headers: invalid header value'); this[$].push([this._name(n), value]); }
    delete(n) { const k = this._name(n); this[$] = this[$].filter(([x]) => x !== k); }
    get(n) { const k = this._name(n); const vs = this[$].filter(([x]) => x === k).map(([, v]) => v); return vs.length ? vs.join(', ') : null; }
    getSetCookie() { return this[$].filter(([x]) => x === 'set-cookie').map(([, v]) => v); }
    has(n) { const k = this._name(n); return this[$].some(([x]) => x === k); }
    set(n, v) { const k = this._name(n); const value = normValue(v); const i = this[$].findIndex(([x]) => x === k); if (i < 0) this[$].push([k, value]); else { this[$][i][1] = value; this[$] = this[$].filter(([x], j) => x !== k || j === i); } }
    _sorted() {
      const names = [...new Set(this[$].map(([k]) => k))].sort();
      const out = [];
      for (const k of names) {
        if (k === 'set-cookie') for (const v of this.getSetCookie()) out.push([k, v]);
        else out.push([k, this.get(k)]);
      }
      return out;
    }
    forEach(fn, self) { for (const [k, v] of this._sorted()) fn.call(self, v, k, this); }
    keys() { return this._sorted().map(([k]) => k)[Symbol.iterator](); }
    values() { return this._sorted().map(([, v]) => v)[Symbol.iterator](); }
    entries() { return this._sorted()[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
  }
  for (const k of ['_name', '_sorted']) Object.defineProperty(Headers.prototype, k, { enumerable: false });
  define('Headers', Headers);

  // ---- AbortController / AbortSignal -----------------------------------------------------------------
  class AbortSignal extends EventTarget {
    constructor(key) {
      if (key !== $) throw new TypeError('AbortSignal cannot be constructed; use AbortController');
      super();
      this[$].aborted = false;
      this[$].reason = undefined;
      this.onabort = null;
    }
    get aborted() { return this[$].aborted; }
    get reason() { return this[$].reason; }
    throwIfAborted() { if (this[$].aborted) throw this[$].reason; }
    _abort(reason) {
      if (this[$].aborted) return;
      this[$].aborted = true;
      this[$].reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
      this.dispatchEvent(new Event('abort'));
    }
    static abort(reason) { const s = new AbortSignal($); s._abort(reason); return s; }
    static timeout(ms) { const s = new AbortSignal($); setTimeout(() => s._abort(new DOMException('The operation timed out', 'TimeoutError')), ms); return s; }
    static any(signals) {
      const s = new AbortSignal($);
      for (const x of signals) { if (x.aborted) { s._abort(x.reason); return s; } }
      for (const x of signals) x.addEventListener('abort', () => s._abort(x.reason), { once: true });
      return s;
    }
  }
  Object.defineProperty(AbortSignal.prototype, '_abort', { enumerable: false });
  class AbortController {
    constructor() { this[$] = new AbortSignal($); }
    get signal() { return this[$]; }
    abort(reason) { this[$]._abort(reason); }
  }
  define('AbortSignal', AbortSignal);
  define('AbortController', AbortController);

  // ---- ReadableStream ------------------------------------------------------------------------------------
  class ReadableStream {
    constructor(source = {}) {
      const st = { queue: [], closed: false, error: undefined, waiters: [], reader: null, source, pulling: null };
      this[$] = st;
      st.wake = () => { const ws = st.waiters; st.waiters = []; for (const w of ws) w(); };
      st.controller = {
        enqueue: (chunk) => { if (st.closed) throw new TypeError('ReadableStream is closed'); st.queue.push(chunk); st.wake(); },
        close: () => { st.closed = true; st.wake(); },
        error: (e) => { if (st.error === undefined) st.error = e === undefined ? new TypeError('stream errored') : e; st.queue = []; st.wake(); },
        get desiredSize() { return st.closed ? 0 : 1 - st.queue.length; },
      };
      if (typeof source.start === 'function') source.start(st.controller);
    }
    get locked() { return this[$].reader !== null; }
    getReader() {
      if (this.locked) throw new TypeError('ReadableStream is locked');
      const st = this[$];
      const reader = {
        read: async () => {
          for (;;) {
            if (st.reader !== reader) throw new TypeError('the reader was released');
            if (st.queue.length) return { value: st.queue.shift(), done: false };
            if (st.error !== undefined) throw st.error;
            if (st.closed) return { value: undefined, done: true };
            if (typeof st.source.pull === 'function') {
              st.pulling ??= Promise.resolve()
                .then(() => st.source.pull(st.controller))
                .then(() => { st.pulling = null; }, (e) => { st.pulling = null; st.controller.error(e); });
              await st.pulling;
            } else {
              await new Promise((resolve) => st.waiters.push(resolve));
            }
          }
        },
        releaseLock: () => { if (st.reader === reader) st.reader = null; },
        cancel: (reason) => this.cancel(reason, true),
      };
      st.reader = reader;
      return reader;
    }
    cancel(reason, fromReader) {
      const st = this[$];
      if (this.locked && !fromReader) return Promise.reject(new TypeError('ReadableStream is locked'));
      st.closed = true;
      st.queue = [];
      st.wake();
      return Promise.resolve(typeof st.source.cancel === 'function' ? st.source.cancel(reason) : undefined).then(() => undefined);
    }
    tee() { throw new TypeError('ReadableStream.tee is not supported in kiln'); }
    async *[Symbol.asyncIterator]() {
      const reader = this.getReader();
      let finished = false;
      try {
        for (;;) { const { value, done } = await reader.read(); if (done) { finished = true; return; } yield value; }
      } finally {
        if (!finished) await reader.cancel();
        reader.releaseLock();
      }
    }
  }
  define('ReadableStream', ReadableStream);

  const concatBytes = (chunks) => {
    const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
    let pos = 0;
    for (const c of chunks) { out.set(c, pos); pos += c.byteLength; }
    return out;
  };
  const chunkBytes = (c) => (typeof c === 'string' ? utf8Encode(c) : isBufferSource(c) ? toBytes(c) : utf8Encode(String(c)));

  // ---- Blob, File, FormData --------------------------------------------------------------------------------
  class Blob {
    constructor(parts = [], opts = {}) {
      const chunks = [];
      for (const p of parts) chunks.push(p instanceof Blob ? p[$] : chunkBytes(p));
      this[$] = concatBytes(chunks);
      Object.defineProperty(this, 'type', { value: opts.type ? String(opts.type).toLowerCase() : '', enumerable: true });
    }
    get size() { return this[$].byteLength; }
    async arrayBuffer() { return this[$].slice().buffer; }
    async bytes() { return this[$].slice(); }
    async text() { return decodeUtf8(this[$]); }
    slice(start = 0, end = this.size, type = '') { const b = new Blob([], { type }); b[$] = this[$].slice(start, end); return b; }
    stream() { const bytes = this[$].slice(); return new ReadableStream({ start(c) { if (bytes.length) c.enqueue(bytes); c.close(); } }); }
  }
  class File extends Blob {
    constructor(parts, name, opts = {}) {
      super(parts, opts);
      Object.defineProperty(this, 'name', { value: String(name), enumerable: true });
      Object.defineProperty(this, 'lastModified', { value: opts.lastModified ?? Date.now(), enumerable: true });
    }
  }
  class FormData {
    constructor() { this[$] = []; }
    _entry(name, value, filename) {
      if (value instanceof Blob) return [String(name), value instanceof File && filename === undefined ? value : new File([value], filename ?? (value instanceof File ? value.name : 'blob'), { type: value.type })];
      return [String(name), String(value)];
    }
    append(n, v, f) { this[$].push(this._entry(n, v, f)); }
    set(n, v, f) { const e = this._entry(n, v, f); const i = this[$].findIndex(([k]) => k === e[0]); if (i < 0) this[$].push(e); else { this[$][i] = e; this[$] = this[$].filter(([k], j) => k !== e[0] || j === i); } }
    get(n) { const e = this[$].find(([k]) => k === String(n)); return e ? e[1] : null; }
    getAll(n) { return this[$].filter(([k]) => k === String(n)).map(([, v]) => v); }
    has(n) { return this[$].some(([k]) => k === String(n)); }
    delete(n) { this[$] = this[$].filter(([k]) => k !== String(n)); }
    forEach(fn, self) { for (const [k, v] of this[$]) fn.call(self, v, k, this); }
    keys() { return this[$].map(([k]) => k)[Symbol.iterator](); }
    values() { return this[$].map(([, v]) => v)[Symbol.iterator](); }
    entries() { return this[$].map((e) => [...e])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
  }
  Object.defineProperty(FormData.prototype, '_entry', { enumerable: false });
  define('Blob', Blob);
  define('File', File);
  define('FormData', FormData);

  function multipart(form) {
    const boundary = '----kilnFormBoundary' + Math.random().toString(16).slice(2) + Math.random().toString(16).slice(2);
    const esc = (s) => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
    const parts = [];
    for (const [name, value] of form[$]) {
      if (value instanceof File) {
        parts.push(utf8Encode(`--${boundary}\r\nContent-Disposition: form-data; name="${esc(name)}"; filename="${esc(value.name)}"\r\nContent-Type: ${value.type || 'application/octet-stream'}\r\n\r\n`), value[$], utf8Encode('\r\n'));
      } else {
        parts.push(utf8Encode(`--${boundary}\r\nContent-Disposition: form-data; name="${esc(name)}"\r\n\r\n${value.replace(/\r?\n|\r/g, '\r\n')}\r\n`));
      }
    }
    parts.push(utf8Encode(`--${boundary}--\r\n`));
    return { bytes: concatBytes(parts), type: `multipart/form-data; boundary=${boundary}` };
  }

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

  class Request extends Body {
    constructor(input, init = {}) {
      super();
      const from = input instanceof Request ? input : null;
      this[$] = {
        url: new URL(from ? from.url : String(input)).href,
        method: String(init.method ?? (from ? from.method : 'GET')).toUpperCase(),
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
    clone() { if (this[$].used) throw new TypeError('Request body already used'); return new Request(this); }
  }

  class Response extends Body {
    constructor(body = null, init = {}) {
      super();
      const status = init.status ?? 200;
      if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError(`Response: status ${status} is out of range`);
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
      if (st.stream) throw new TypeError('clone() of a response whose body is a stream (as every fetched body is) is not supported in kiln: there is no stream tee; read the body once and build new Responses from it');
      const r = new Response(null, { status: 200, headers: st.headers });
      Object.assign(r[$], { status: st.status, statusText: st.statusText, url: st.url, redirected: st.redirected, type: st.type, bytes: st.bytes ? st.bytes.slice() : null });
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
  define('Request', Request);
  define('Response', Response);

  // ---- fetch -------------------------------------------------------------------------------------------------
  const abortError = (signal) => (signal && signal.reason !== undefined ? signal.reason : new DOMException('This operation was aborted', 'AbortError'));
  const asDomAbort = (e) => (e && e.name === 'AbortError' && !(e instanceof DOMException) ? new DOMException(e.message, 'AbortError') : e);

  /** A response body that pulls chunks from the host only when read. */
  function hostBody(bodyId, signal) {
    let readOp = null;
    let finished = false;
    const stream = new ReadableStream({
      pull: async (c) => {
        if (signal && signal.aborted) throw abortError(signal);
        const { op, done } = startOp((inv) => native.httpRead(inv, bodyId), current(), null);
        readOp = op;
        let chunk;
        try { chunk = await done; } catch (e) { throw asDomAbort(e); } finally { readOp = null; }
        if (chunk.byteLength === 0) { finished = true; c.close(); } else c.enqueue(new Uint8Array(chunk));
      },
      cancel: () => { if (!finished) { finished = true; native.httpDiscard(bodyId); } },
    });
    if (signal) signal.addEventListener('abort', () => {
      if (finished) return;
      finished = true;
      if (readOp !== null) native.httpAbort(readOp);
      native.httpDiscard(bodyId);
      stream[$].controller.error(abortError(signal));
    }, { once: true });
    return stream;
  }

  const isPlainBody = (b) => b !== null && typeof b === 'object' && !isBufferSource(b) && !(b instanceof Blob) &&
    !(b instanceof FormData) && !(b instanceof URLSearchParams) && !(b instanceof ReadableStream);

  async function send(inv, input, init = {}) {
    if (isPlainBody(init.body)) {
      // the contract kiln follows sends a plain object as JSON
      const headers = new Headers(init.headers);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      init = { ...init, body: JSON.stringify(init.body), headers };
    }
    const req = input instanceof Request && Object.keys(init).length === 0 ? input : new Request(input, init);
    const signal = init.signal ?? req.signal;
    if (signal && signal.aborted) throw abortError(signal);
    const body = req[$].stream ? await readAll(req[$].stream) : req[$].bytes;
    const head = { url: req.url, method: req.method, headers: [...req.headers[$]], redirect: req.redirect };
    const buf = body && body.byteLength ? body.slice().buffer : undefined;
    const { op, done } = startOp((i, h) => native.httpFetch(i, h, buf), inv, head);
    const onAbort = () => native.httpAbort(op);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    let res;
    try {
      res = await done;
    } catch (e) {
      throw signal && signal.aborted ? abortError(signal) : asDomAbort(e);
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
    }
    const r = new Response(null, { status: 200 });
    Object.assign(r[$], { status: res.status, statusText: res.statusText, url: res.url, redirected: res.redirected, type: 'basic', host: true });
    r[$].headers = new Headers(res.headers);
    r[$].stream = hostBody(res.body, signal);
    return r;
  }

  define('fetch', (input, init) => send(current(), input, init));

  // ---- the Playwright-style request client ------------------------------------------------------------------------
  function apiResponse(r) {
    let bytes = null;
    const body = async () => (bytes ??= await r.bytes());
    return {
      status: () => r.status,
      statusText: () => r.statusText,
      ok: () => r.ok,
      url: () => r.url,
      headers: () => { const o = {}; r.headers.forEach((v, k) => { o[k] = o[k] === undefined ? v : o[k] + (k === 'set-cookie' ? '\n' : ', ') + v; }); return o; },
      headersArray: () => [...r.headers[$]].map(([name, value]) => ({ name, value })),
      allHeaders: async function () { return this.headers(); },
      body,
      text: async () => decodeUtf8(await body()),
      json: async () => JSON.parse(decodeUtf8(await body())),
      dispose: async () => { if (!r.bodyUsed && r.body) await r.body.cancel(); },
    };
  }

  function requestClient(invOf) {
    async function doFetch(urlOrRequest, options = {}) {
      const url = new URL(urlOrRequest instanceof Request ? urlOrRequest.url : String(urlOrRequest));
      if (options.params) for (const [k, v] of new URLSearchParams(options.params)) url.searchParams.append(k, v);
      const init = { method: options.method ?? (urlOrRequest instanceof Request ? urlOrRequest.method : 'GET'), headers: new Headers(options.headers) };
      if (options.data !== undefined) {
        const d = options.data;
        const isRaw = typeof d === 'string' || isBufferSource(d);
        init.body = isRaw ? d : JSON.stringify(d);
        if (!isRaw && !init.headers.has('content-type')) init.headers.set('content-type', 'application/json');
      } else if (options.form !== undefined) {
        init.body = new URLSearchParams(options.form);
      } else if (options.multipart !== undefined) {
        const fd = options.multipart instanceof FormData ? options.multipart : new FormData();
        if (!(options.multipart instanceof FormData)) for (const [k, v] of Object.entries(options.multipart)) {
          if (v && typeof v === 'object' && 'buffer' in v && 'name' in v) fd.append(k, new File([v.buffer], v.name, { type: v.mimeType }));
          else fd.append(k, v);
        }
        init.body = fd;
      }
      if (options.maxRedirects === 0) init.redirect = 'manual';
      if (options.timeout) init.signal = AbortSignal.timeout(options.timeout);
      const r = await send(invOf(), url.href, init);
      if (options.failOnStatusCode && !r.ok) throw new Error(`${r.status} ${r.statusText}: ${init.method} ${url.href}`);
      return apiResponse(r);
    }
    const client = { fetch: doFetch };
    for (const m of ['get', 'post', 'put', 'patch', 'delete', 'head']) client[m] = (url, options = {}) => doFetch(url, { ...options, method: m.toUpperCase() });
    return Object.freeze(client);
  }

  // ---- process and performance --------------------------------------------------------------------------------------
  // Installed by configure(), at load: the rest of this file runs in the engine's snapshot, where the clock
  // reads build time and the config (platform, pid, env) is not known yet.
  function configure(config) {
    const origin = native.hrtime();
    const nowMs = () => { const [s, ns] = native.hrtime(); return (s - origin[0]) * 1e3 + (ns - origin[1]) / 1e6; };
    define('performance', Object.freeze({ now: nowMs, timeOrigin: Date.now() - nowMs() }));
    const write = (level) => ({
      write(chunk) { const s = typeof chunk === 'string' ? chunk : decodeUtf8(chunkBytes(chunk)); native.log(level, s.endsWith('\n') ? s.slice(0, -1) : s); return true; },
      isTTY: false,
    });
    function hrtime(prev) {
      const [s, ns] = native.hrtime();
      if (!prev) return [s, ns];
      let ds = s - prev[0], dn = ns - prev[1];
      if (dn < 0) { ds -= 1; dn += 1e9; }
      return [ds, dn];
    }
    hrtime.bigint = () => { const [s, ns] = native.hrtime(); return BigInt(s) * 1000000000n + BigInt(ns); };
    define('process', Object.freeze({
      platform: config.platform ?? 'linux',
      arch: 'wasm32',
      version: 'v0.1.0-kiln',
      versions: Object.freeze({ kiln: '0.1.0', quickjs: 'ng-0.17.0' }),
      release: Object.freeze({ name: 'kiln' }),
      argv: Object.freeze(['kiln', 'script']),
      pid: config.pid ?? 1,
      env: Object.freeze({ ...(config.env ?? {}) }),
      nextTick: (fn, ...args) => { queueMicrotask(() => fn(...args)); },
      hrtime,
      stdout: Object.freeze(write(1)),
      stderr: Object.freeze(write(3)),
      cwd: () => '/',
      memoryUsage: () => { const [heap, memory] = native.memoryUsage(); return { rss: memory, heapTotal: memory, heapUsed: heap, external: 0, arrayBuffers: 0 }; },
      exit: () => { throw new Error('process.exit() is not available to an extension'); },
    }));
  }

  return { requestClient, configure };
}
