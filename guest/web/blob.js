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
class Blob {
  constructor(parts = [], opts = {}) {
    if (parts === null || (typeof parts !== 'object' && typeof parts !== 'function') || typeof parts[Symbol.iterator] !== 'function') {
      throw new TypeError('Blob: the parts must be a sequence (an array of strings, buffers and blobs)');
    }
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

export { concatBytes, chunkBytes, Blob, File, FormData, multipart };
