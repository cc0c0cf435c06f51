// pako: deflate, inflate, gzip and raw deflate, at several levels, round trips and known bytes.
import * as pako from 'pako';
import { tool } from './_tool.js';

export const args = {};
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
export function run() {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(50) + '✓ ünïcödé';
  const bytes = new TextEncoder().encode(text);
  const deflated = pako.deflate(bytes, { level: 9 });
  const gz = pako.gzip(bytes, { header: { mtime: 0 } });
  return {
    deflate: hex(deflated),
    sizes: [bytes.length, deflated.length, pako.deflate(bytes, { level: 1 }).length, pako.deflateRaw(bytes).length, gz.length],
    inflate: new TextDecoder().decode(pako.inflate(deflated)) === text,
    ungzip: pako.ungzip(gz, { to: 'string' }) === text,
    gzipHead: hex(gz.slice(0, 10)),
    raw: pako.inflateRaw(pako.deflateRaw(bytes, { windowBits: 9 }), { to: 'string' }).length,
    bad: (() => { try { pako.inflate(new Uint8Array([1, 2, 3])); return 'no error'; } catch (e) { return String(e); } })(),
  };
}
tool('pako', run);
