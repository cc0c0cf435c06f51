// crypto-js: hashes, HMAC, PBKDF2, AES with a fixed key and IV, and encodings.
import CryptoJS from 'crypto-js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const msg = 'The quick brown fox jumps over the lazy dog ✓';
  const key = CryptoJS.enc.Hex.parse('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f');
  const iv = CryptoJS.enc.Hex.parse('0f0e0d0c0b0a09080706050403020100');
  const aes = CryptoJS.AES.encrypt(msg, key, { iv });
  return {
    md5: CryptoJS.MD5(msg).toString(),
    sha1: CryptoJS.SHA1(msg).toString(),
    sha256: CryptoJS.SHA256(msg).toString(),
    sha512: CryptoJS.SHA512(msg).toString(CryptoJS.enc.Base64),
    sha3: CryptoJS.SHA3(msg, { outputLength: 256 }).toString(),
    ripemd: CryptoJS.RIPEMD160(msg).toString(),
    hmac: CryptoJS.HmacSHA256(msg, 'key').toString(),
    pbkdf2: CryptoJS.PBKDF2('password', 'salt', { keySize: 8, iterations: 100, hasher: CryptoJS.algo.SHA256 }).toString(),
    aes: aes.toString(),
    back: CryptoJS.AES.decrypt(aes.toString(), key, { iv }).toString(CryptoJS.enc.Utf8),
    ecb: CryptoJS.AES.encrypt('block', key, { mode: CryptoJS.mode.ECB, padding: CryptoJS.pad.Pkcs7 }).ciphertext.toString(),
    b64: CryptoJS.enc.Base64.stringify(CryptoJS.enc.Utf8.parse(msg)),
  };
}
tool('crypto-js', run);
