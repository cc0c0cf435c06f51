// nanoid: secure ids of the default and a custom alphabet, and customRandom on a fixed generator.
import { customAlphabet, customRandom, nanoid, urlAlphabet } from 'nanoid';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const ids = Array.from({ length: 20 }, () => nanoid());
  let seed = 7;
  const fixed = customRandom('abcdef0123', 12, (size) => Uint8Array.from({ length: size }, () => (seed = (seed * 1103515245 + 12345) % 2147483648) & 255));
  return {
    default: [ids.every((id) => /^[A-Za-z0-9_-]{21}$/.test(id)), new Set(ids).size],
    custom: /^[01]{8}$/.test(customAlphabet('01', 8)()),
    short: nanoid(5).length,
    fixed: [fixed(), fixed()],
    alphabet: urlAlphabet,
  };
}
tool('nanoid', run);
