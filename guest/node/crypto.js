// The `crypto` built-in, from what the engine's crypto has (guest/web/crypto.js): random bytes from the host's
// entropy, SHA-1/256/384/512 digests and HMACs hashed by the host, and secret keys for them. Node's hashing is synchronous, so
// createHash and createHmac use the engine's synchronous form of the same host hashes. Everything else Node's
// crypto has (ciphers, signatures, key derivation, other hashes) throws, naming what to use instead.
import { Buffer } from 'buffer';

const web = globalThis.crypto;
const hashes = web[Symbol.for('kiln.hashes')];
const ALGORITHMS = { sha1: 'SHA-1', sha256: 'SHA-256', sha384: 'SHA-384', sha512: 'SHA-512' };
const HAS = 'randomBytes, randomFillSync, randomInt, randomUUID, getRandomValues, createHash, createHmac (sha1, sha256, sha384, sha512), createSecretKey, timingSafeEqual and webcrypto';

function algorithm(name) {
  const key = String(name).toLowerCase().replace(/^rsa-/, '').replace('-', '');
  if (!Object.hasOwn(ALGORITHMS, key)) {
    throw new Error(`Digest method not supported: ${name} (kiln's crypto hashes sha1, sha256, sha384 and sha512; for another, a pure-JS package such as @noble/hashes)`);
  }
  return ALGORITHMS[key];
}

const bytesOf = (data, encoding) => {
  if (typeof data === 'string') return Buffer.from(data, encoding);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView.');
};

/** Updates are kept and hashed at digest(): the host hashes whole inputs. */
class Hashing {
  #parts = [];
  #done = false;
  #hash;
  constructor(hash) {
    this.#hash = hash;
  }
  update(data, encoding) {
    if (this.#done) throw new Error('Digest already called');
    this.#parts.push(Buffer.from(bytesOf(data, encoding)));
    return this;
  }
  digest(encoding) {
    if (this.#done) throw new Error('Digest already called');
    this.#done = true;
    const out = Buffer.from(this.#hash(Buffer.concat(this.#parts)));
    return encoding === undefined || encoding === 'buffer' ? out : out.toString(encoding);
  }
  _copy(to) {
    if (this.#done) throw new Error('Digest already called');
    to.#parts = [...this.#parts];
    return to;
  }
}
class Hash extends Hashing {
  #name;
  constructor(name) {
    const alg = algorithm(name);
    super((bytes) => hashes.digest(alg, bytes));
    this.#name = name;
  }
  copy() {
    return this._copy(new Hash(this.#name));
  }
}
const SECRET = Symbol('secret key');
/** A secret key, as createSecretKey makes one (what HMACs take): its bytes, kept. There are no asymmetric keys
 *  (createPublicKey and createPrivateKey throw), so every KeyObject here is of type 'secret'. */
export class KeyObject {
  #bytes;
  constructor(type, bytes) {
    if (type !== SECRET) throw new TypeError('Illegal constructor: use crypto.createSecretKey');
    this.#bytes = Buffer.from(bytes);
  }
  get type() { return 'secret'; }
  get symmetricKeySize() { return this.#bytes.length; }
  get asymmetricKeyType() { return undefined; }
  export(options) {
    // npm's buffer has no 'base64url' encoding: base64, made URL-safe
    if (options?.format === 'jwk') return { kty: 'oct', k: this.#bytes.toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_') };
    return Buffer.from(this.#bytes);
  }
  equals(other) {
    if (!(other instanceof KeyObject)) throw new TypeError('The "otherKeyObject" argument must be an instance of KeyObject');
    const a = this.export(), b = other.export();
    return a.length === b.length && timingSafeEqual(a, b);
  }
  get [Symbol.toStringTag]() { return 'KeyObject'; }
}
export const createSecretKey = (key, encoding) => new KeyObject(SECRET, typeof key === 'string' ? Buffer.from(key, encoding) : bytesOf(key));

class Hmac extends Hashing {
  constructor(name, key) {
    const alg = algorithm(name);
    const secret = key instanceof KeyObject ? key.export() : Buffer.from(typeof key === 'string' ? Buffer.from(key) : bytesOf(key));
    super((bytes) => hashes.hmac(alg, secret, bytes));
  }
}

export const createHash = (name) => new Hash(name);
export const createHmac = (name, key) => new Hmac(name, key);
export const getHashes = () => Object.keys(ALGORITHMS);

export const getRandomValues = (array) => web.getRandomValues(array);
export const randomUUID = () => web.randomUUID();

export function randomFillSync(buffer, offset = 0, size) {
  const view = new Uint8Array(buffer.buffer ?? buffer, buffer.byteOffset ?? 0, buffer.byteLength);
  const end = size === undefined ? view.length : offset + size;
  for (let at = offset; at < end; at += 65536) web.getRandomValues(view.subarray(at, Math.min(end, at + 65536)));
  return buffer;
}

export function randomBytes(size, callback) {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`The value of "size" is out of range. It must be >= 0 && <= 2147483647. Received ${size}`);
  const bytes = randomFillSync(Buffer.alloc(size));
  if (typeof callback === 'function') {
    queueMicrotask(() => callback(null, bytes));
    return undefined;
  }
  return bytes;
}

/** A uniform integer in [min, max): 48-bit random values, the ones past the last whole range rejected. */
export function randomInt(min, max, callback) {
  if (max === undefined || typeof max === 'function') [min, max, callback] = [0, min, max];
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min || max - min > 2 ** 48) {
    throw new RangeError(`The value of "max" is out of range. It must be greater than the value of "min" (${min}) and at most 2**48 more. Received ${max}`);
  }
  const range = max - min, limit = 2 ** 48 - (2 ** 48 % range);
  let n;
  do n = randomBytes(6).readUIntBE(0, 6); while (n >= limit);
  const value = min + (n % range);
  if (typeof callback === 'function') {
    queueMicrotask(() => callback(null, value));
    return undefined;
  }
  return value;
}

export function timingSafeEqual(a, b) {
  const x = bytesOf(a), y = bytesOf(b);
  if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

export const webcrypto = web;
export const subtle = web.subtle;

const refused = (name) => () => {
  throw new Error(`crypto.${name} is not available to an extension: kiln's crypto has ${HAS}; for the rest, crypto.subtle or a pure-JS package (such as @noble/ciphers, @noble/curves)`);
};
export const createCipheriv = refused('createCipheriv');
export const createDecipheriv = refused('createDecipheriv');
export const createSign = refused('createSign');
export const createVerify = refused('createVerify');
export const sign = refused('sign');
export const verify = refused('verify');
export const pbkdf2 = refused('pbkdf2');
export const pbkdf2Sync = refused('pbkdf2Sync');
export const scrypt = refused('scrypt');
export const scryptSync = refused('scryptSync');
export const hkdf = refused('hkdf');
export const hkdfSync = refused('hkdfSync');
export const generateKeyPair = refused('generateKeyPair');
export const generateKeyPairSync = refused('generateKeyPairSync');
export const createPrivateKey = refused('createPrivateKey');
export const createPublicKey = refused('createPublicKey');
export const publicEncrypt = refused('publicEncrypt');
export const privateDecrypt = refused('privateDecrypt');
export const createDiffieHellman = refused('createDiffieHellman');
export const createECDH = refused('createECDH');

export default {
  createHash, createHmac, getHashes, getRandomValues, randomUUID, randomFillSync, randomBytes, randomInt, timingSafeEqual,
  webcrypto, subtle, KeyObject, createCipheriv, createDecipheriv, createSign, createVerify, sign, verify, pbkdf2, pbkdf2Sync, scrypt,
  scryptSync, hkdf, hkdfSync, generateKeyPair, generateKeyPairSync, createPrivateKey, createPublicKey, createSecretKey,
  publicEncrypt, privateDecrypt, createDiffieHellman, createECDH,
};
