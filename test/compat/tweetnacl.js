// tweetnacl: signing and box from fixed seeds and nonces, secretbox, hashing, and its random source.
import nacl from 'tweetnacl';
import { tool } from './_tool.js';

export const args = {};
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
const seq = (n, k) => Uint8Array.from({ length: n }, (_, i) => (i * k + 1) & 255);
export function run() {
  const msg = new TextEncoder().encode('attack at dawn ✓');
  const signer = nacl.sign.keyPair.fromSeed(seq(32, 7));
  const sig = nacl.sign.detached(msg, signer.secretKey);
  const alice = nacl.box.keyPair.fromSecretKey(seq(32, 3));
  const bob = nacl.box.keyPair.fromSecretKey(seq(32, 5));
  const nonce = seq(24, 11);
  const boxed = nacl.box(msg, nonce, bob.publicKey, alice.secretKey);
  const key = seq(32, 13);
  const secret = nacl.secretbox(msg, nonce, key);
  const random = nacl.randomBytes(32);
  return {
    pub: hex(signer.publicKey),
    sig: hex(sig),
    verify: [nacl.sign.detached.verify(msg, sig, signer.publicKey), nacl.sign.detached.verify(seq(3, 1), sig, signer.publicKey)],
    box: hex(boxed),
    open: new TextDecoder().decode(nacl.box.open(boxed, nonce, alice.publicKey, bob.secretKey)),
    secretbox: hex(secret),
    tampered: nacl.secretbox.open(secret.map((b, i) => (i === 0 ? b ^ 1 : b)), nonce, key),
    hash: hex(nacl.hash(msg)),
    random: [random.length, hex(random) !== hex(nacl.randomBytes(32))],
    keyPair: nacl.box.keyPair().publicKey.length,
  };
}
tool('tweetnacl', run);
