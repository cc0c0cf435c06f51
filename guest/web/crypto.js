// `crypto`: getRandomValues and randomUUID from the host's entropy, and the part of SubtleCrypto extensions
// reach for most — digest (SHA-1/256/384/512) and HMAC keys (importKey, exportKey, generateKey, sign,
// verify). The bytes are hashed by the host (the `crypto` interface: pure functions); anything else rejects
// with NotSupportedError, as Node does for an algorithm it does not know.
import { $, host, isBufferSource, toBytes } from './internal.js';
import { DOMException } from './events.js';

const HASHES = { 'SHA-1': 0, 'SHA-256': 1, 'SHA-384': 2, 'SHA-512': 3 };
const BLOCK_BITS = { 'SHA-1': 512, 'SHA-256': 512, 'SHA-384': 1024, 'SHA-512': 1024 };
const INTEGER_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array];

const notSupported = (what) => new DOMException(`Unrecognized algorithm name: ${what}`, 'NotSupportedError');
const algorithmName = (alg) => (typeof alg === 'string' ? alg : alg && typeof alg === 'object' ? String(alg.name) : String(alg));
function hashName(alg) {
  const name = algorithmName(alg).toUpperCase();
  if (!(name in HASHES)) throw notSupported(algorithmName(alg));
  return name;
}
function bytesOf(data, what) {
  if (!isBufferSource(data)) throw new TypeError(`${what} must be an ArrayBuffer, a TypedArray or a DataView`);
  return toBytes(data).slice();
}
const hashBytes = (name, data) => host.native.digest(HASHES[name], data);
const hmacBytes = (name, key, data) => host.native.hmac(HASHES[name], key, data);

function getRandomValues(array) {
  if (!INTEGER_ARRAYS.some((T) => array instanceof T)) {
    throw new DOMException("The data argument must be an integer-type TypedArray", 'TypeMismatchError');
  }
  if (array.byteLength > 65536) {
    throw new DOMException(`The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536)`, 'QuotaExceededError');
  }
  host.native.fillRandom(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return array;
}

function randomUUID() {
  const b = getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

class CryptoKey {
  constructor(key) {
    if (key !== $) throw new TypeError('Illegal constructor');
  }
  get type() { return this[$].type; }
  get extractable() { return this[$].extractable; }
  get algorithm() { return { ...this[$].algorithm, hash: { ...this[$].algorithm.hash } }; }
  get usages() { return [...this[$].usages]; }
  get [Symbol.toStringTag]() { return 'CryptoKey'; }
}

const HMAC_USAGES = ['sign', 'verify'];
function hmacKey(bytes, algorithm, extractable, usages) {
  const hash = hashName(algorithm.hash);
  const list = [...usages].map(String);
  for (const u of list) if (!HMAC_USAGES.includes(u)) throw new DOMException(`Unsupported key usage for an HMAC key: ${u}`, 'SyntaxError');
  if (list.length === 0) throw new DOMException('Usages cannot be empty when creating a key.', 'SyntaxError');
  if (bytes.length === 0) throw new DOMException('Zero-length key is not supported', 'DataError');
  const key = new CryptoKey($);
  key[$] = { type: 'secret', extractable: !!extractable, algorithm: { name: 'HMAC', hash: { name: hash }, length: bytes.length * 8 }, usages: list, bytes };
  return key;
}
function checkHmac(algorithm, key, usage) {
  if (algorithmName(algorithm).toUpperCase() !== 'HMAC') throw notSupported(algorithmName(algorithm));
  if (!(key instanceof CryptoKey)) throw new TypeError('The key must be a CryptoKey');
  if (key[$].algorithm.name !== 'HMAC' || !key[$].usages.includes(usage)) throw new DOMException(`The key is not usable for ${usage}`, 'InvalidAccessError');
}
const base64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromBase64url = (s) => Uint8Array.from(atob(String(s).replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

// Every method runs as a promise job, so a bad argument rejects instead of throwing, as in browsers and Node.
const later = (fn) => new Promise((resolve) => resolve(fn()));

class SubtleCrypto {
  constructor(key) {
    if (key !== $) throw new TypeError('Illegal constructor');
  }
  digest(algorithm, data) {
    return later(() => hashBytes(hashName(algorithm), bytesOf(data, 'data')).buffer);
  }
  importKey(format, keyData, algorithm, extractable, usages) {
    return later(() => {
      if (algorithmName(algorithm).toUpperCase() !== 'HMAC') throw notSupported(algorithmName(algorithm));
      if (format === 'raw') return hmacKey(bytesOf(keyData, 'keyData'), algorithm, extractable, usages);
      if (format === 'jwk') {
        if (!keyData || keyData.kty !== 'oct' || typeof keyData.k !== 'string') throw new DOMException('Invalid keyData', 'DataError');
        return hmacKey(fromBase64url(keyData.k), algorithm, extractable, usages);
      }
      throw new DOMException(`Unsupported key format for an HMAC key: ${format}`, 'NotSupportedError');
    });
  }
  exportKey(format, key) {
    return later(() => {
      if (!(key instanceof CryptoKey)) throw new TypeError('The key must be a CryptoKey');
      if (!key[$].extractable) throw new DOMException('key is not extractable', 'InvalidAccessError');
      if (format === 'raw') return key[$].bytes.slice().buffer;
      if (format === 'jwk') {
        const alg = { 'SHA-1': 'HS1', 'SHA-256': 'HS256', 'SHA-384': 'HS384', 'SHA-512': 'HS512' }[key[$].algorithm.hash.name];
        return { key_ops: [...key[$].usages], ext: true, kty: 'oct', k: base64url(key[$].bytes), alg };
      }
      throw new DOMException(`Unsupported export format: ${format}`, 'NotSupportedError');
    });
  }
  generateKey(algorithm, extractable, usages) {
    return later(() => {
      if (algorithmName(algorithm).toUpperCase() !== 'HMAC') throw notSupported(algorithmName(algorithm));
      const bits = algorithm.length ?? BLOCK_BITS[hashName(algorithm.hash)];
      return hmacKey(getRandomValues(new Uint8Array(Math.ceil(bits / 8))), algorithm, extractable, usages);
    });
  }
  sign(algorithm, key, data) {
    return later(() => {
      checkHmac(algorithm, key, 'sign');
      return hmacBytes(key[$].algorithm.hash.name, key[$].bytes, bytesOf(data, 'data')).buffer;
    });
  }
  verify(algorithm, key, signature, data) {
    return later(() => {
      checkHmac(algorithm, key, 'verify');
      const expected = hmacBytes(key[$].algorithm.hash.name, key[$].bytes, bytesOf(data, 'data'));
      const given = bytesOf(signature, 'signature');
      if (given.length !== expected.length) return false;
      let diff = 0;
      for (let i = 0; i < given.length; i++) diff |= given[i] ^ expected[i];
      return diff === 0;
    });
  }
}
for (const m of ['encrypt', 'decrypt', 'deriveBits', 'deriveKey', 'wrapKey', 'unwrapKey']) {
  SubtleCrypto.prototype[m] = function (algorithm) { return Promise.reject(notSupported(algorithmName(algorithm))); };
}

class Crypto {
  constructor(key) {
    if (key !== $) throw new TypeError('Illegal constructor');
  }
  get subtle() { return subtle; }
  getRandomValues(array) { return getRandomValues(array); }
  randomUUID() { return randomUUID(); }
}
const subtle = new SubtleCrypto($);
const crypto = new Crypto($);
// The same host hashes, synchronously, for the `crypto` built-in's createHash and createHmac (guest/node/
// crypto.js): Node's are synchronous, subtle's are not. Pure functions of their arguments: no authority.
Object.defineProperty(crypto, Symbol.for('kiln.hashes'), {
  value: Object.freeze({
    names: Object.freeze(Object.keys(HASHES)),
    digest: (name, data) => hashBytes(hashName(name), bytesOf(data, 'data')),
    hmac: (name, key, data) => hmacBytes(hashName(name), bytesOf(key, 'key'), bytesOf(data, 'data')),
  }),
});

export { crypto, Crypto, CryptoKey, SubtleCrypto };
