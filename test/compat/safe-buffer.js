// safe-buffer: Buffer allocation, conversion between encodings, slicing, comparison and number reads and writes.
import { Buffer } from 'safe-buffer';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const b = Buffer.from('héllo wörld ✓', 'utf8');
  const n = Buffer.alloc(16);
  n.writeUInt32BE(0xdeadbeef, 0);
  n.writeInt16LE(-2, 4);
  n.writeDoubleBE(Math.PI, 6);
  return {
    hex: b.toString('hex'),
    base64: b.toString('base64'),
    latin1: Buffer.from('caf\u00e9', 'latin1').toString('hex'),
    fromHex: Buffer.from('48656c6c6f', 'hex').toString(),
    fromB64: Buffer.from('aMOpbGxv', 'base64').toString('utf8'),
    length: [b.length, Buffer.byteLength('✓'), Buffer.allocUnsafe(5).length],
    slice: b.slice(0, 6).toString(),
    concat: Buffer.concat([Buffer.from('ab'), Buffer.from([0x63, 0x64])]).toString(),
    compare: [Buffer.compare(Buffer.from('a'), Buffer.from('b')), Buffer.from('x').equals(Buffer.from('x'))],
    numbers: [n.toString('hex'), n.readUInt32BE(0), n.readInt16LE(4), n.readDoubleBE(6)],
    fill: Buffer.alloc(6, 'ab').toString(),
    isBuffer: [Buffer.isBuffer(b), Buffer.isBuffer(new Uint8Array(1))],
    json: Buffer.from([1, 2, 3]).toJSON(),
    indexOf: b.indexOf('wörld'),
  };
}
tool('safe-buffer', run);
