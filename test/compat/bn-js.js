// bn.js: big integers: arithmetic, modular arithmetic, bit operations, bases and byte arrays, and reduction contexts.
import BN from 'bn.js';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const a = new BN('123456789abcdef0123456789abcdef', 16);
  const b = new BN('987654321987654321', 10);
  const p = new BN('fffffffffffffffffffffffffffffffeffffffffffffffff', 16);
  const red = BN.red(p);
  return {
    add: a.add(b).toString(16),
    mul: a.mul(b).toString(10),
    div: [a.div(b).toString(), a.mod(b).toString(), a.neg().divmod(b).mod.toString()],
    pow: new BN(3).pow(new BN(100)).toString(36),
    modpow: a.toRed(red).redPow(b).fromRed().toString(16),
    invm: b.invm(p).toString(16),
    gcd: a.gcd(b).toString(),
    bits: [a.bitLength(), a.shln(7).toString(16), a.ushrn(9).toString(2).length, a.and(b).toString(16), a.xor(b).toString(16), a.testn(3)],
    cmp: [a.cmp(b), a.eq(a.clone()), b.isEven(), new BN(-5).isNeg()],
    bytes: [b.toArray('be', 10), b.toArray('le'), new BN([1, 2, 3], 'le').toString()],
    twos: [new BN(-1).toTwos(16).toString(16), new BN(0xff80).fromTwos(16).toString()],
    number: new BN(12345).toNumber(),
  };
}
tool('bn-js', run);
