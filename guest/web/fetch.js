// fetch: every request goes to the host's `http` interface, which checks it; bodies are pulled on read.
import { $, host, isBufferSource } from './internal.js';
import { atob } from './base64.js';
import { DOMException } from './events.js';
import { Headers, makeImmutable } from './headers.js';
import { percentDecode, URLSearchParams } from './url.js';
import { ReadableStream } from './streams.js';
import { Blob, FormData } from './blob.js';
import { NULL_BODY_STATUS, readAll, Request, Response } from './body.js';

const abortError = (signal) => (signal && signal.reason !== undefined ? signal.reason : new DOMException('This operation was aborted', 'AbortError'));
const asDomAbort = (e) => (e && e.name === 'AbortError' && !(e instanceof DOMException) ? new DOMException(e.message, 'AbortError') : e);

/** A response body that pulls chunks from the host only when read. */
function hostBody(bodyId, signal) {
  let readOp = null;
  let finished = false;
  const stream = new ReadableStream({
    pull: async (c) => {
      if (signal && signal.aborted) throw abortError(signal);
      const { op, done } = host.startOp((inv) => host.native.httpRead(inv, bodyId), host.current(), null);
      readOp = op;
      let chunk;
      try { chunk = await done; } catch (e) { throw asDomAbort(e); } finally { readOp = null; }
      if (chunk.byteLength === 0) { finished = true; c.close(); } else c.enqueue(new Uint8Array(chunk));
    },
    cancel: () => { if (!finished) { finished = true; host.native.httpDiscard(bodyId); } },
  }, { highWaterMark: 0 }); // 0: the host is read only when the guest reads, never ahead of it
  if (signal) signal.addEventListener('abort', () => {
    if (finished) return;
    finished = true;
    if (readOp !== null) host.native.httpAbort(readOp);
    host.native.httpDiscard(bodyId);
    stream[$].controller.error(abortError(signal));
  }, { once: true });
  return stream;
}

const isPlainBody = (b) => b !== null && typeof b === 'object' && !isBufferSource(b) && !(b instanceof Blob) &&
  !(b instanceof FormData) && !(b instanceof URLSearchParams) && !(b instanceof ReadableStream);

/** A `data:` URL, answered in the guest (the Fetch Standard's data: URL processor): no network, no host. */
function dataResponse(req) {
  const failed = (why) => new TypeError('fetch failed', { cause: new TypeError(`failed to fetch the data URL: ${why}`) });
  const url = req.url.replace(/#.*$/s, '');
  const rest = url.slice(5);
  const comma = rest.indexOf(',');
  if (comma < 0) throw failed('no comma');
  let mime = rest.slice(0, comma).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '');
  let bytes = percentDecode(rest.slice(comma + 1));
  const base64 = /;[ ]*base64$/i.exec(mime);
  if (base64) {
    mime = mime.slice(0, base64.index);
    let binary;
    try {
      binary = atob(String.fromCharCode(...bytes));
    } catch {
      throw failed('invalid base64');
    }
    bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }
  if (mime.startsWith(';')) mime = 'text/plain' + mime;
  const r = new Response(bytes, { status: 200, statusText: 'OK', headers: { 'content-type': mimeType(mime) ?? 'text/plain;charset=US-ASCII' } });
  r[$].url = url;
  return r;
}

/** The MIME Sniffing Standard's parse-then-serialize, for the simple cases: type/subtype and parameters,
 *  names lower-cased, the first of a repeated parameter kept; undefined when it is not a MIME type. */
function mimeType(text) {
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const [essence, ...params] = text.split(';');
  const slash = essence.indexOf('/');
  const type = essence.slice(0, slash).trim().toLowerCase(), subtype = essence.slice(slash + 1).trim().toLowerCase();
  if (slash < 0 || !TOKEN.test(type) || !TOKEN.test(subtype)) return undefined;
  const seen = new Map();
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    const name = p.slice(0, eq).replace(/^[\t\n\f\r ]+/, '').toLowerCase();
    let value = p.slice(eq + 1).replace(/[\t\n\f\r ]+$/, '');
    if (value.startsWith('"')) value = value.slice(1).replace(/"[\s\S]*$/, '');
    if (TOKEN.test(name) && value && !seen.has(name)) seen.set(name, value);
  }
  return [`${type}/${subtype}`, ...[...seen].map(([n, v]) => `${n}=${TOKEN.test(v) ? v : `"${v.replace(/(["\\])/g, '\\$1')}"`}`)].join(';');
}

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
  if (req.url.startsWith('data:')) return dataResponse(req);
  // Node's fetch fetches http(s) and data: only; any other scheme is a failed fetch, never sent to the host.
  const { protocol } = new URL(req.url);
  if (protocol !== 'http:' && protocol !== 'https:') throw new TypeError('fetch failed', { cause: new TypeError(`fetch: only http, https and data: URLs can be fetched, not ${protocol}`) });
  const body = req[$].stream ? await readAll(req[$].stream) : req[$].bytes;
  const head = { url: req.url, method: req.method, headers: [...req.headers[$]], redirect: req.redirect };
  const buf = body && body.byteLength ? body.slice().buffer : undefined;
  const { op, done } = host.startOp((i, h) => host.native.httpFetch(i, h, buf), inv, head);
  const onAbort = () => host.native.httpAbort(op);
  if (signal) signal.addEventListener('abort', onAbort, { once: true });
  let res;
  try {
    res = await done;
  } catch (e) {
    if (signal && signal.aborted) throw abortError(signal);
    // A request that could not be made or completed rejects with TypeError, as in browsers and Node (retry
    // libraries look for it), with the host's detail as its cause; the policy's refusals stay PermissionError.
    if (e && e.name === 'HttpError') throw new TypeError('fetch failed', { cause: e });
    throw asDomAbort(e);
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort);
  }
  const r = new Response(null, { status: 200 });
  Object.assign(r[$], { status: res.status, statusText: res.statusText, url: res.url, redirected: res.redirected, type: 'basic', host: true });
  r[$].headers = makeImmutable(new Headers(res.headers));
  if (req.method === 'HEAD' || NULL_BODY_STATUS.includes(res.status)) {
    host.native.httpDiscard(res.body); // no body, as in Node: r.body is null
  } else {
    r[$].stream = hostBody(res.body, signal);
  }
  return r;
}

const fetch = (input, init) => send(host.current(), input, init);

export { send, fetch };
