// structuredClone: HTML's structured serialize + deserialize in one step, for the types a guest has —
// primitives, wrappers, Date, RegExp, ArrayBuffer, typed arrays, DataView, Map, Set, Error, arrays and plain
// objects (own enumerable string keys; the prototype is not kept), Blob and File — with cycles and shared
// references kept. Functions, symbols, WeakMaps, promises and other platform objects throw DataCloneError.
import { $ } from './internal.js';
import { DOMException } from './events.js';
import { Blob, File } from './blob.js';

const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
const TYPED = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
if (typeof Float16Array === 'function') TYPED.push(Float16Array);
const cannotClone = (v) => new DOMException(`${describe(v)} could not be cloned.`, 'DataCloneError');
const describe = (v) => {
  if (typeof v === 'function') return String(v).split('\n')[0].slice(0, 80);
  if (typeof v === 'symbol') return v.toString();
  return Object.prototype.toString.call(v).slice(8, -1) === 'Object' && v.constructor ? `#<${v.constructor.name}>` : `#<${Object.prototype.toString.call(v).slice(8, -1)}>`;
};
const tag = (v) => Object.prototype.toString.call(v).slice(8, -1);

function structuredClone(value, options) {
  if (arguments.length === 0) throw new TypeError('The "value" argument must be specified');
  if (options && options.transfer && [...options.transfer].length) throw new DOMException('structuredClone: transfer is not supported in kiln', 'DataCloneError');
  const seen = new Map();
  const buffers = new Map();
  const cloneBuffer = (b) => {
    if (!buffers.has(b)) buffers.set(b, b.slice(0));
    return buffers.get(b);
  };
  function clone(v) {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
      if (typeof v === 'symbol') throw cannotClone(v);
      return v;
    }
    if (typeof v === 'function') throw cannotClone(v);
    if (seen.has(v)) return seen.get(v);
    let out;
    const t = tag(v);
    if (v instanceof ArrayBuffer) {
      out = cloneBuffer(v);
    } else if (ArrayBuffer.isView(v)) {
      const buffer = cloneBuffer(v.buffer);
      const T = v instanceof DataView ? DataView : TYPED.find((C) => v instanceof C);
      out = T === DataView ? new DataView(buffer, v.byteOffset, v.byteLength) : new T(buffer, v.byteOffset, v.length);
    } else if (v instanceof Date) out = new Date(v.getTime());
    else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
    else if (t === 'Boolean') out = Object(Boolean.prototype.valueOf.call(v));
    else if (t === 'Number') out = Object(Number.prototype.valueOf.call(v));
    else if (t === 'String') out = Object(String.prototype.valueOf.call(v));
    else if (t === 'BigInt') out = Object(BigInt.prototype.valueOf.call(v));
    else if (v instanceof File) out = new File([v], v.name, { type: v.type, lastModified: v.lastModified });
    else if (v instanceof Blob) out = new Blob([v], { type: v.type });
    else if (v instanceof Map) {
      out = new Map();
      seen.set(v, out);
      for (const [k, x] of v) out.set(clone(k), clone(x));
      return out;
    } else if (v instanceof Set) {
      out = new Set();
      seen.set(v, out);
      for (const x of v) out.add(clone(x));
      return out;
    } else if (v instanceof Error) {
      const name = Object.hasOwn(ERRORS, v.name) ? v.name : 'Error';
      out = Object.create(ERRORS[name].prototype);
      seen.set(v, out);
      const define = (k, x) => Object.defineProperty(out, k, { value: x, writable: true, configurable: true, enumerable: false });
      if (v.message !== undefined) define('message', String(v.message));
      if (typeof v.stack === 'string') define('stack', v.stack);
      if ('cause' in v) define('cause', clone(v.cause));
      return out;
    } else if (Array.isArray(v)) {
      out = new Array(v.length);
      seen.set(v, out);
      for (const k of Object.keys(v)) out[k] = clone(v[k]);
      return out;
    } else if (t === 'Object' || t === 'Arguments' || (typeof v === 'object' && !isPlatformObject(v))) {
      out = {};
      seen.set(v, out);
      for (const k of Object.keys(v)) out[k] = clone(v[k]);
      return out;
    } else throw cannotClone(v);
    seen.set(v, out);
    return out;
  }
  return clone(value);
}

/** Objects with internal slots that cannot be serialized: weak collections, promises, proxies of them,
 *  and kiln's own platform objects other than Blob/File (their state sits behind a private symbol). */
function isPlatformObject(v) {
  return v instanceof WeakMap || v instanceof WeakSet || v instanceof Promise || (typeof WeakRef === 'function' && v instanceof WeakRef) ||
    Object.prototype.hasOwnProperty.call(v, $) || ['Generator', 'AsyncGenerator', 'Window'].includes(tag(v));
}

export { structuredClone };
