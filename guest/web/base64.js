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

export { atob, btoa };
