// What the web modules share: the host's functions (set once by index.js, before any of them is called), the
// private-state symbol, and byte helpers.

export const host = { native: null, define: null, startOp: null, current: null, setCurrent: null, pending: null, uncaught: null };
export const $ = Symbol('kiln.internal');
export const isBufferSource = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);
export const toBytes = (v) => (v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
/** USVString (WebIDL), as Node converts names and values of URLSearchParams and FormData: a lone surrogate
 *  becomes U+FFFD. Callers convert once per call, so a value's toString runs once, as in Node. */
export const usv = (x) => String(x).toWellFormed();
