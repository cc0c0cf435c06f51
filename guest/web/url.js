// URL and URLSearchParams: parsing and every setter run in the host's WHATWG URL (runtime.parse-url, set-url-part).
import { $, host, usv } from './internal.js';
import { utf8Encode } from './encoding.js';

// application/x-www-form-urlencoded: serialize (space as +, all but *-._ and alphanumerics escaped) and parse
// (+ as space, then percent-decoding of bytes, then UTF-8 decoding with replacement).
const formEncode = (s) => encodeURIComponent(String(s).toWellFormed()).replace(/%20/g, '+').replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
function formDecode(s) {
  const t = s.replace(/\+/g, ' ');
  return t.includes('%') ? host.native.utf8Decode(percentDecode(t), false, false) : t;
}

/** The URL Standard's percent-decode: the bytes of `s` with each valid %XX replaced by its byte. */
function percentDecode(s) {
  const bytes = utf8Encode(s);
  const out = new Uint8Array(bytes.length);
  let n = 0;
  const hex = (b) => (b >= 48 && b <= 57 ? b - 48 : b >= 65 && b <= 70 ? b - 55 : b >= 97 && b <= 102 ? b - 87 : -1);
  for (let i = 0; i < bytes.length; i++) {
    const hi = bytes[i] === 37 && i + 2 < bytes.length ? hex(bytes[i + 1]) : -1;
    const lo = hi >= 0 ? hex(bytes[i + 2]) : -1;
    if (lo >= 0) { out[n++] = hi * 16 + lo; i += 2; } else out[n++] = bytes[i];
  }
  return out.slice(0, n);
}
class URLSearchParams {
  constructor(init = '') {
    this[$] = { list: [], url: null };
    if (init instanceof URLSearchParams) this[$].list = init[$].list.map((p) => [...p]);
    else if (typeof init === 'object' && init !== null && typeof init[Symbol.iterator] === 'function') {
      for (const pair of init) { const p = [...pair]; if (p.length !== 2) throw new TypeError('URLSearchParams: each pair needs a name and a value'); this[$].list.push([usv(p[0]), usv(p[1])]); }
    } else if (typeof init === 'object' && init !== null) {
      for (const k of Object.keys(init)) this[$].list.push([usv(k), usv(init[k])]);
    } else this[$].list = parseQuery(usv(init));
  }
  get size() { return this[$].list.length; }
  append(n, v) { this[$].list.push([usv(n), usv(v)]); this._update(); }
  delete(n, v) {
    const name = usv(n), value = v === undefined ? undefined : usv(v);
    this[$].list = this[$].list.filter(([k, x]) => k !== name || (value !== undefined && x !== value));
    this._update();
  }
  get(n) { const name = usv(n); const p = this[$].list.find(([k]) => k === name); return p ? p[1] : null; }
  getAll(n) { const name = usv(n); return this[$].list.filter(([k]) => k === name).map(([, v]) => v); }
  has(n, v) {
    const name = usv(n), value = v === undefined ? undefined : usv(v);
    return this[$].list.some(([k, x]) => k === name && (value === undefined || x === value));
  }
  set(n, v) {
    const name = usv(n), value = usv(v), list = this[$].list, i = list.findIndex(([k]) => k === name);
    if (i < 0) list.push([name, value]);
    else { list[i][1] = value; this[$].list = list.filter(([k], j) => k !== name || j === i); }
    this._update();
  }
  sort() { this[$].list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this._update(); }
  forEach(fn, self) { for (const [k, v] of this[$].list) fn.call(self, v, k, this); }
  keys() { return this[$].list.map(([k]) => k)[Symbol.iterator](); }
  values() { return this[$].list.map(([, v]) => v)[Symbol.iterator](); }
  entries() { return this[$].list.map((p) => [...p])[Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
  toString() { return this[$].list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&'); }
  _update() { const u = this[$].url; if (u) { const list = this[$].list; updateSearch(u, this.toString()); this[$].list = list; } }
}
Object.defineProperty(URLSearchParams.prototype, '_update', { enumerable: false });
function parseQuery(q) {
  const s = q.startsWith('?') ? q.slice(1) : q;
  return s ? s.split('&').filter(Boolean).map((part) => { const i = part.indexOf('='); return i < 0 ? [formDecode(part), ''] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]; }) : [];
}

// The URL's parts live in the host's WHATWG URL (parse-url, set-url-part): every setter runs the standard's
// own algorithm there, so `u.pathname = '/x?y'` encodes the `?` and `u.port = '8080abc'` keeps 8080, as in Node.
const SETTERS = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
class URL {
  constructor(input, base) {
    if (arguments.length === 0) throw new TypeError('The "url" argument must be specified');
    this[$] = { parts: JSON.parse(host.native.parseUrl(String(input), base === undefined ? undefined : String(base))), params: null };
  }
  static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
  get origin() { return this[$].parts.origin; }
  get searchParams() {
    const st = this[$];
    if (!st.params) {
      st.params = new URLSearchParams(st.parts.search);
      st.params[$].url = this;
    }
    return st.params;
  }
  toString() { return this[$].parts.href; }
  toJSON() { return this[$].parts.href; }
}
for (const [i, k] of SETTERS.entries()) {
  Object.defineProperty(URL.prototype, k, {
    get() { return this[$].parts[k]; },
    set(v) { setPart(this, i, String(v)); },
    enumerable: true, configurable: true,
  });
}
function setPart(url, index, value) {
  const st = url[$];
  st.parts = JSON.parse(host.native.setUrlPart(st.parts.href, index, value));
  if (st.params) st.params[$].list = parseQuery(st.parts.search);
}
/** URLSearchParams' update steps: the URL's query becomes the list's serialization. */
function updateSearch(url, query) {
  setPart(url, SETTERS.indexOf('search'), query);
}

export { URL, URLSearchParams, percentDecode };
