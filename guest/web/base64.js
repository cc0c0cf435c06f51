// atob and btoa (HTML's forgiving-base64 decode, and encode of a binary string).
import { DOMException } from './events.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const VALUE = new Map([...ALPHABET].map((c, i) => [c, i]));

function btoa(data) {
  if (arguments.length === 0) throw new TypeError('The "data" argument must be specified');
  const s = String(data);
  let out = '';
  for (let i = 0; i < s.length; i += 3) {
    const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
    if (a > 255 || b > 255 || c > 255) throw new DOMException('Invalid character', 'InvalidCharacterError');
    const n = (a << 16) | ((b || 0) << 8) | (c || 0);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + (i + 1 < s.length ? ALPHABET[(n >> 6) & 63] : '=') + (i + 2 < s.length ? ALPHABET[n & 63] : '=');
  }
  return out;
}

function atob(data) {
  if (arguments.length === 0) throw new TypeError('The "data" argument must be specified');
  let s = String(data).replace(/[\t\n\f\r ]/g, '');
  if (s.length % 4 === 0) s = s.replace(/==?$/, '');
  if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
  let out = '';
  let buffer = 0, bits = 0;
  for (const c of s) {
    buffer = (buffer << 6) | VALUE.get(c);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += String.fromCharCode((buffer >> bits) & 0xff);
    }
  }
  return out;
}

/** Bytes as base64, in linear time (for results the host turns into MCP image content). */
function bytesToBase64(bytes) {
  const parts = [];
  for (let i = 0; i < bytes.length; i += 3 * 4096) {
    let s = '';
    const end = Math.min(bytes.length, i + 3 * 4096);
    for (let j = i; j < end; j += 3) {
      const n = (bytes[j] << 16) | ((j + 1 < end ? bytes[j + 1] : 0) << 8) | (j + 2 < end ? bytes[j + 2] : 0);
      s += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + (j + 1 < end ? ALPHABET[(n >> 6) & 63] : '=') + (j + 2 < end ? ALPHABET[n & 63] : '=');
    }
    parts.push(s);
  }
  return parts.join('');
}

export { atob, btoa, bytesToBase64 };
