// Blob, File, FormData, and multipart/form-data encoding.
import { $, isBufferSource, toBytes, usv } from './internal.js';
import { decodeUtf8, utf8Encode } from './encoding.js';
import { ReadableStream } from './streams.js';

const concatBytes = (chunks) => {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let pos = 0;
  for (const c of chunks) { out.set(c, pos); pos += c.byteLength; }
  return out;
};
const chunkBytes = (c) => (typeof c === 'string' ? utf8Encode(c) : isBufferSource(c) ? toBytes(c) : utf8Encode(String(c)));

// ---- Blob, File, FormData --------------------------------------------------------------------------------
/** The File API's type: lower-cased, or "" when it holds a character outside U+0020–U+007E. */
const blobType = (t) => { const s = t === undefined ? '' : String(t); return /^[\x20-\x7e]*$/.test(s) ? s.toLowerCase() : ''; };
class Blob {
  constructor(parts = [], opts = {}) {
    if (parts === null || (typeof parts !== 'object' && typeof parts !== 'function') || typeof parts[Symbol.iterator] !== 'function') {
      throw new TypeError('Blob: the parts must be a sequence (an array of strings, buffers and blobs)');
    }
    const endings = opts.endings === undefined ? 'transparent' : String(opts.endings);
    if (endings !== 'transparent' && endings !== 'native') throw new TypeError(`Blob: endings must be "transparent" or "native", not "${endings}"`);
    const chunks = [];
    // "native": a string part's CRLFs become the platform's "\n" (kiln's, as Node's on Linux); a lone CR stays,
    // as Node keeps it.
    for (const p of parts) chunks.push(p instanceof Blob ? p[$] : chunkBytes(endings === 'native' && typeof p === 'string' ? p.replace(/\r\n/g, '\n') : p));
    this[$] = concatBytes(chunks);
    Object.defineProperty(this, 'type', { value: blobType(opts.type), enumerable: true });
  }
  get size() { return this[$].byteLength; }
  async arrayBuffer() { return this[$].slice().buffer; }
  async bytes() { return this[$].slice(); }
  async text() { return decodeUtf8(this[$]); }
  slice(start = 0, end = this.size, type = '') { const b = new Blob([], { type: blobType(type) }); b[$] = this[$].slice(start, end); return b; }
  stream() { const bytes = this[$].slice(); return new ReadableStream({ start(c) { if (bytes.length) c.enqueue(bytes); c.close(); } }); }
}
class File extends Blob {
  constructor(parts, name, opts = {}) {
    if (arguments.length < 2) throw new TypeError('File: the bits and the file name must both be given');
    super(parts, opts);
    Object.defineProperty(this, 'name', { value: String(name), enumerable: true });
    Object.defineProperty(this, 'lastModified', { value: opts.lastModified ?? Date.now(), enumerable: true });
  }
}
class FormData {
  constructor() { this[$] = []; }
  _entry(name, value, filename) {
    if (value instanceof Blob) return [usv(name), value instanceof File && filename === undefined ? value : new File([value], filename === undefined ? (value instanceof File ? value.name : 'blob') : usv(filename), { type: value.type })];
    return [usv(name), usv(value)];
  }
  append(n, v, f) { this[$].push(this._entry(n, v, f)); }
  set(n, v, f) { const e = this._entry(n, v, f); const i = this[$].findIndex(([k]) => k === e[0]); if (i < 0) this[$].push(e); else { this[$][i] = e; this[$] = this[$].filter(([k], j) => k !== e[0] || j === i); } }
  get(n) { const name = usv(n); const e = this[$].find(([k]) => k === name); return e ? e[1] : null; }
  getAll(n) { const name = usv(n); return this[$].filter(([k]) => k === name).map(([, v]) => v); }
  has(n) { const name = usv(n); return this[$].some(([k]) => k === name); }
  delete(n) { const name = usv(n); this[$] = this[$].filter(([k]) => k !== name); }
  forEach(fn, self) { for (const [k, v] of this[$]) fn.call(self, v, k, this); }
  keys() { return this[$].map(([k]) => k)[Symbol.iterator](); }
  values() { return this[$].map(([, v]) => v)[Symbol.iterator](); }
  entries() { return this[$].map((e) => [...e])[Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
}
Object.defineProperty(FormData.prototype, '_entry', { enumerable: false });

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

/** A multipart/form-data body → FormData (the HTML Standard's parser, for what browsers and undici send): a part
 *  with a filename is a File, others are UTF-8 text; undefined when the body is not multipart with `boundary`. */
function parseMultipart(bytes, boundary) {
  // One character per byte: indices in the text are offsets in the bytes.
  let text = '';
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  const delimiter = `--${boundary}`;
  const form = new FormData();
  let pos = text.indexOf(delimiter);
  if (pos < 0 || !boundary) return undefined;
  for (;;) {
    pos += delimiter.length;
    if (text.startsWith('--', pos)) return form;
    if (!text.startsWith('\r\n', pos)) return undefined;
    const headEnd = text.indexOf('\r\n\r\n', pos);
    if (headEnd < 0) return undefined;
    const next = text.indexOf(`\r\n${delimiter}`, headEnd + 4);
    if (next < 0) return undefined;
    let name, filename, type = '';
    for (const line of text.slice(pos + 2, headEnd).split('\r\n')) {
      const colon = line.indexOf(':');
      const key = line.slice(0, colon).trim().toLowerCase(), value = line.slice(colon + 1).trim();
      if (key === 'content-disposition') {
        name = /(?:^|;)\s*name="([^"]*)"/i.exec(value)?.[1];
        filename = /;\s*filename="([^"]*)"/i.exec(value)?.[1];
      } else if (key === 'content-type') type = value;
    }
    if (name === undefined) return undefined;
    const body = bytes.slice(headEnd + 4, next);
    const unescape = (s) => decodeUtf8(Uint8Array.from(s, (c) => c.charCodeAt(0))).replace(/%22/g, '"').replace(/%0D/g, '\r').replace(/%0A/g, '\n');
    if (filename !== undefined) form.append(unescape(name), new File([body], unescape(filename), { type }));
    else form.append(unescape(name), decodeUtf8(body));
    pos = next + 2;
  }
}

export { concatBytes, chunkBytes, Blob, File, FormData, multipart, parseMultipart };
