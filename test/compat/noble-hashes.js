// @noble/hashes: SHA-2, SHA-3, BLAKE2/3, HMAC, HKDF, PBKDF2, scrypt, and randomBytes.
import { blake2b } from '@noble/hashes/blake2.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { pbkdf2 } from '@noble/hashes/pbkdf2.js';
import { scrypt } from '@noble/hashes/scrypt.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { keccak_256, sha3_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const msg = utf8ToBytes('The quick brown fox jumps over the lazy dog ✓');
  const big = new Uint8Array(100000).map((_, i) => i & 255);
  return {
    sha256: bytesToHex(sha256(msg)),
    sha256big: bytesToHex(sha256(big)),
    sha512: bytesToHex(sha512(msg)),
    sha3: bytesToHex(sha3_256(msg)),
    keccak: bytesToHex(keccak_256(msg)),
    blake2b: bytesToHex(blake2b(msg, { dkLen: 32 })),
    blake3: bytesToHex(blake3(msg)),
    ripemd160: bytesToHex(ripemd160(msg)),
    hmac: bytesToHex(hmac(sha256, utf8ToBytes('key'), msg)),
    hkdf: bytesToHex(hkdf(sha256, msg, utf8ToBytes('salt'), utf8ToBytes('info'), 42)),
    pbkdf2: bytesToHex(pbkdf2(sha256, 'password', 'salt', { c: 1000, dkLen: 32 })),
    scrypt: bytesToHex(scrypt('password', 'salt', { N: 1024, r: 8, p: 1, dkLen: 32 })),
    random: [randomBytes(16).length, bytesToHex(randomBytes(8)) !== bytesToHex(randomBytes(8))],
  };
}
tool('noble-hashes', run);
