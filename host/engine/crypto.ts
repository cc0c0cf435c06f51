// The guest's `crypto` global on the host (the `crypto` WIT interface): the host's entropy and hash functions.
// Pure functions of their arguments (random-bytes aside, which reads the host's secure generator): no authority,
// nothing here reaches the outside world, so nothing is checked.
//
// Invariants:
//  - `algorithm` is one of the WIT enum's names (the ABI refuses anything else); each maps to one Node hash.
//  - random-bytes gives at most MAX_RANDOM_BYTES per call, as getRandomValues allows; more is an empty list.
import { createHash, createHmac, randomFillSync } from 'node:crypto';

/** crypto.getRandomValues' limit, per call. */
export const MAX_RANDOM_BYTES = 65536;

/** The WIT `crypto.hash` enum, as the ABI hands it over. */
export type Hash = 'sha1' | 'sha256' | 'sha384' | 'sha512';
const HASHES: Record<Hash, string> = { sha1: 'sha1', sha256: 'sha256', sha384: 'sha384', sha512: 'sha512' };

/** `n` bytes from the host's cryptographically secure generator; none past MAX_RANDOM_BYTES. */
export function randomBytes(n: number): Uint8Array {
  return n <= MAX_RANDOM_BYTES ? randomFillSync(new Uint8Array(n)) : new Uint8Array();
}

/** The digest of `data` (crypto.subtle.digest). */
export function digest(algorithm: Hash, data: Uint8Array): Uint8Array {
  return createHash(HASHES[algorithm]).update(data).digest();
}

/** HMAC of `data` with `key` (crypto.subtle.sign/verify with an HMAC key). */
export function hmac(algorithm: Hash, key: Uint8Array, data: Uint8Array): Uint8Array {
  return createHmac(HASHES[algorithm], key).update(data).digest();
}
