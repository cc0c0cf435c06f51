// bytes: byte counts formatted with units and options, and parsed back from strings.
import bytes from 'bytes';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  return {
    format: [0, 1, 1000, 1024, 1536, 1048576, 1073741824, 1e15, -2048, 3.5e12].map((n) => bytes(n)),
    options: [
      bytes(1024 * 1024 * 1.25, { unitSeparator: ' ' }),
      bytes(1000, { thousandsSeparator: ',', unit: 'B' }),
      bytes(1234567, { decimalPlaces: 4, fixedDecimals: true }),
      bytes(2048, { unit: 'kb' }),
    ],
    parse: ['1KB', '1.5 mb', '2gb', '1024', '1TB', '0.5pb', 'nope', '10 B'].map((s) => bytes.parse(s)),
    other: [bytes(null), bytes('1kb'), bytes.format(Infinity)],
  };
}
tool('bytes', run);
