// URL and URLSearchParams: parsing is the host's WHATWG parser (runtime.parse-url); the setters recompose.
import { $, host } from './internal.js';

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
    const parsed = JSON.parse(host.native.parseUrl(String(input), base === undefined ? undefined : String(base)));
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
    const parsed = JSON.parse(host.native.parseUrl(href, undefined));
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

export { URL, URLSearchParams };
