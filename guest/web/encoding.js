// TextEncoder and TextDecoder: UTF-8 in linear time in the glue (utf8Encode/utf8Decode), UTF-16LE here.
import { $, host, isBufferSource, toBytes } from './internal.js';

/** UTF-8 bytes of any value's string form; lone surrogates become U+FFFD, as WHATWG's encoder writes them. */
function utf8Encode(str) {
  return host.native.utf8Encode(String(str).toWellFormed());
}

class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(input = '') { return utf8Encode(input); }
  encodeInto(source, destination) {
    if (!(destination instanceof Uint8Array)) throw new TypeError("TextEncoder.encodeInto: the destination must be a Uint8Array");
    const [read, written] = host.native.utf8EncodeInto(String(source).toWellFormed(), destination);
    return { read, written };
  }
}

// The labels of the Encoding Standard that kiln decodes (UTF-8 and UTF-16LE); others throw a RangeError, as
// Node does for an encoding it does not know.
const LABELS = new Map([
  ...['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'].map((l) => [l, 'utf-8']),
  ...['csunicode', 'iso-10646-ucs-2', 'ucs-2', 'unicode', 'unicodefeff', 'utf-16', 'utf-16le'].map((l) => [l, 'utf-16le']),
]);

function decodeUtf16le(bytes, st, stream) {
  const all = st.pending.length ? concat(st.pending, bytes) : bytes;
  let n = all.length & ~1;
  // a lead surrogate at the end of a streamed chunk waits for its pair
  if (stream && n >= 2 && (all[n - 1] & 0xfc) === 0xd8) n -= 2;
  st.pending = stream ? all.slice(n) : new Uint8Array();
  const units = [];
  let out = '';
  for (let i = 0; i < n; i += 2) {
    units.push(all[i] | (all[i + 1] << 8));
    if (units.length === 8192) { out += String.fromCharCode(...units); units.length = 0; }
  }
  out += String.fromCharCode(...units);
  if (!stream && all.length & 1) {
    if (st.fatal) throw new TypeError('The encoded data was not valid for encoding utf-16le');
    out += '\ufffd';
  }
  if (st.fatal && !out.isWellFormed() && !(stream && /[\ud800-\udbff]$/.test(out))) throw new TypeError('The encoded data was not valid for encoding utf-16le');
  return out.toWellFormed();
}

const concat = (a, b) => { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; };

class TextDecoder {
  constructor(label = 'utf-8', options = {}) {
    const encoding = LABELS.get(String(label).trim().toLowerCase());
    if (!encoding) throw new RangeError(`The "${label}" encoding is not supported`);
    this[$] = { encoding, fatal: !!(options && options.fatal), ignoreBOM: !!(options && options.ignoreBOM), pending: new Uint8Array(), bomSeen: false };
  }
  get encoding() { return this[$].encoding; }
  get fatal() { return this[$].fatal; }
  get ignoreBOM() { return this[$].ignoreBOM; }
  decode(input, options = {}) {
    const st = this[$];
    const stream = !!(options && options.stream);
    if (input !== undefined && !isBufferSource(input)) throw new TypeError('TextDecoder.decode: the input must be an ArrayBuffer or an ArrayBufferView');
    const bytes = input === undefined ? new Uint8Array() : toBytes(input);
    let out;
    if (st.encoding === 'utf-16le') out = decodeUtf16le(bytes, st, stream);
    else {
      const all = st.pending.length ? concat(st.pending, bytes) : bytes;
      if (stream) {
        const [text, pending] = host.native.utf8Decode(all, st.fatal, true);
        st.pending = pending ? all.slice(all.length - pending) : new Uint8Array();
        out = text;
      } else {
        st.pending = new Uint8Array();
        out = host.native.utf8Decode(all, st.fatal, false);
      }
    }
    if (!st.bomSeen && out.length) {
      st.bomSeen = true;
      if (!st.ignoreBOM && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
    }
    if (!stream) st.bomSeen = false;
    return out;
  }
}

const decodeUtf8 = (bytes) => {
  const out = host.native.utf8Decode(toBytes(bytes), false, false);
  return out.charCodeAt(0) === 0xfeff ? out.slice(1) : out;
};

export { utf8Encode, TextEncoder, TextDecoder, decodeUtf8 };
