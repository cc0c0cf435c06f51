// The Playwright-style `request` client (APIRequestContext's shape) over fetch.
import { $, isBufferSource } from './internal.js';
import { decodeUtf8 } from './encoding.js';
import { URL, URLSearchParams } from './url.js';
import { Headers } from './headers.js';
import { AbortSignal } from './abort.js';
import { File, FormData } from './blob.js';
import { Request } from './body.js';
import { send } from './fetch.js';

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

export { requestClient };
