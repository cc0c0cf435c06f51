// iconv-lite: text encoded to and decoded from legacy code pages, UTF-16 and with BOMs.
import iconv from 'iconv-lite';
import { tool } from './_tool.js';

export const args = {};
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
export function run() {
  const text = 'Привет, мир! Ünïcödé €';
  return {
    win1251: hex(iconv.encode('Привет, мир!', 'win1251')),
    latin1: hex(iconv.encode('Ünïcödé', 'latin1')),
    cp1252: hex(iconv.encode('€ “quoted”', 'cp1252')),
    utf16: hex(iconv.encode(text, 'utf16le')),
    bom: hex(iconv.encode('ab', 'utf8', { addBOM: true })),
    shiftjis: hex(iconv.encode('日本語テキスト', 'shift_jis')),
    decoded: [
      iconv.decode(Uint8Array.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]), 'win1251'),
      iconv.decode(iconv.encode(text, 'utf16be'), 'utf16be'),
      iconv.decode(Uint8Array.from([0x93, 0xfa, 0x96, 0x7b]), 'sjis'),
      iconv.decode(Uint8Array.from([0xef, 0xbb, 0xbf, 0x61]), 'utf8'),
    ],
    exists: [iconv.encodingExists('koi8-r'), iconv.encodingExists('nope')],
    unknown: (() => { try { iconv.encode('x', 'nope'); return 'none'; } catch (e) { return e.message; } })(),
  };
}
tool('iconv-lite', run);
