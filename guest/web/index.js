// The guest's web platform, one concept per module: events, encoding, base64, URL, headers, abort, streams,
// blob, body (Request/Response), fetch, crypto, structuredClone, Intl (the host's ICU), the Playwright-style
// request client, process/performance, Node's timers; and the handler's fs (allow.fs), shaped like
// node:fs/promises.
//
// scripts/build-engine.mjs bundles these modules (rollup) into one script with prelude.js; the prelude calls
// installWeb once, in the engine's snapshot. Nothing here decides anything: every request goes to the host's
// `http` interface, which checks it. quickjs-ng has none of these APIs; they follow the WHATWG specs as far as
// extensions need, and test/web-platform.test.mjs compares them with Node's.
import { host } from './internal.js';
import { CustomEvent, DOMException, Event, EventTarget } from './events.js';
import { TextDecoder, TextEncoder } from './encoding.js';
import { URL, URLSearchParams } from './url.js';
import { Headers } from './headers.js';
import { AbortController, AbortSignal } from './abort.js';
import { ByteLengthQueuingStrategy, CountQueuingStrategy, ReadableStream, TransformStream, WritableStream } from './streams.js';
import { TextDecoderStream, TextEncoderStream } from './encoding-streams.js';
import { Blob, File, FormData } from './blob.js';
import { Request, Response } from './body.js';
import { fetch } from './fetch.js';
import { requestClient } from './request-client.js';
import { configure } from './process.js';
import { atob, btoa, bytesToBase64 } from './base64.js';
import { crypto, Crypto, CryptoKey, SubtleCrypto } from './crypto.js';
import { structuredClone } from './clone.js';
import { inspect, makeConsole } from './console.js';
import { Intl, installLocaleMethods } from './intl.js';
import { makeFs } from './fs.js';
import { clearImmediate, clearTimeout, setImmediate, setInterval, setTimeout, timersIdle } from './timers.js';

/** Web IDL's attributes and operations are enumerable (class members are not): code that copies a Response
 *  or a Blob with for...in (redaxios does) sees status, headers, size and the rest, as in Node. Members named
 *  with a leading underscore are kiln's own and stay hidden. */
function enumerableMembers(proto) {
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const key of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, key);
      if (key === 'constructor' || key.startsWith('_') || d.enumerable || !d.configurable) continue;
      Object.defineProperty(p, key, { ...d, enumerable: true });
    }
  }
}

/** Install the globals; `native` is the glue's host functions, `api` the prelude's define, startOp, current,
 *  setCurrent, pending and uncaught. */
export function installWeb(native, api) {
  const { define, startOp, current, setCurrent, pending, uncaught } = api;
  Object.assign(host, { native, define, startOp, current, setCurrent, pending, uncaught });
  const globals = {
    DOMException, Event, CustomEvent, EventTarget, TextEncoder, TextDecoder, URL, URLSearchParams, Headers, AbortSignal,
    AbortController, ReadableStream, Blob, File, FormData, Request, Response, fetch, atob, btoa, crypto, Crypto,
    CryptoKey, SubtleCrypto, structuredClone, WritableStream, TransformStream, TextDecoderStream, TextEncoderStream, Intl,
    setTimeout, setInterval, setImmediate, clearTimeout, clearInterval: clearTimeout, clearImmediate,
    CountQueuingStrategy, ByteLengthQueuingStrategy,
  };
  for (const [name, value] of Object.entries(globals)) {
    // Web IDL's class string, as in Node and browsers: Object.prototype.toString.call(blob) is "[object Blob]"
    // (libraries tell a Blob or FormData from a plain object this way).
    if (typeof value === 'function' && /^[A-Z]/.test(name) && value.prototype) {
      if (!Object.hasOwn(value.prototype, Symbol.toStringTag)) Object.defineProperty(value.prototype, Symbol.toStringTag, { value: name, configurable: true });
      enumerableMembers(value.prototype);
    }
    api.define(name, value);
  }
  // A worker's global is `self`: browser builds find crypto, fetch and the rest through it (tweetnacl's
  // random bytes do). Node's is `global`, the same object (`global === globalThis`), as the Node built-ins
  // extensions may import expect. No `window`: there is no DOM.
  api.define('self', globalThis);
  api.define('global', globalThis);
  installLocaleMethods();
  return { requestClient, makeFs, configure, inspect, makeConsole, bytesToBase64, AbortController, DOMException, timersIdle };
}
