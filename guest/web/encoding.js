// TextEncoder and TextDecoder (UTF-8 only).
import { $, toBytes } from './internal.js';

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
const decodeUtf8 = (b) => new TextDecoder().decode(b);

export { utf8Encode, TextEncoder, TextDecoder, decodeUtf8 };
