// Headers.
import { $ } from './internal.js';

/** A Headers whose guard is "immutable" (a fetched response's, Response.error()'s and Response.redirect()'s):
 *  append, set and delete throw, as in Node. */
const IMMUTABLE = Symbol('immutable');
const makeImmutable = (h) => { Object.defineProperty(h, IMMUTABLE, { value: true }); return h; };
const guard = (h) => { if (h[IMMUTABLE]) throw new TypeError('Headers are immutable'); };
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// ByteString (WebIDL), as Node converts header names and values: a character above U+00FF (a lone
// surrogate too) is a TypeError here, not a failed fetch later.
function byteString(v) {
  const s = String(v);
  const i = s.search(/[^\x00-\xff]/);
  if (i >= 0) throw new TypeError(`Cannot convert argument to a ByteString because the character at index ${i} has a value of ${s.charCodeAt(i)} which is greater than 255.`);
  return s;
}
function headerValue(v) {
  const value = byteString(v).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (/[\0\r\n]/.test(value)) throw new TypeError('Headers: invalid header value');
  return value;
}
class Headers {
  constructor(init) {
    this[$] = [];
    if (init instanceof Headers) this[$] = init[$].map((p) => [...p]);
    else if (init && typeof init[Symbol.iterator] === 'function') for (const pair of init) { const p = [...pair]; if (p.length !== 2) throw new TypeError('Headers: each pair needs a name and a value'); this.append(p[0], p[1]); }
    else if (init && typeof init === 'object') for (const k of Object.keys(init)) this.append(k, init[k]);
  }
  _name(n) { const s = byteString(n); if (!TOKEN.test(s)) throw new TypeError(`Headers: invalid header name "${s}"`); return s.toLowerCase(); }
  append(n, v) { guard(this); const value = headerValue(v); this[$].push([this._name(n), value]); }
  delete(n) { guard(this); const k = this._name(n); this[$] = this[$].filter(([x]) => x !== k); }
  get(n) { const k = this._name(n); const vs = this[$].filter(([x]) => x === k).map(([, v]) => v); return vs.length ? vs.join(', ') : null; }
  getSetCookie() { return this[$].filter(([x]) => x === 'set-cookie').map(([, v]) => v); }
  has(n) { const k = this._name(n); return this[$].some(([x]) => x === k); }
  set(n, v) { guard(this); const k = this._name(n); const value = headerValue(v); const i = this[$].findIndex(([x]) => x === k); if (i < 0) this[$].push([k, value]); else { this[$][i][1] = value; this[$] = this[$].filter(([x], j) => x !== k || j === i); } }
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

export { Headers, IMMUTABLE, makeImmutable };
