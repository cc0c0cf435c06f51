// Strings for the unit tests' properties (fast-check): printable ASCII, controls, the rest of the BMP (lone
// surrogates, bidi and invisible characters included) and astral characters, each often. Built from code points
// because fast-check's own `unit: 'binary'` takes seconds to warm up in every process.
import fc from 'fast-check';

const codePoint = (wellFormed) => fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0, max: 0x1f }),
  fc.constantFrom(0x7f, 0x85, 0xa0, 0xad, 0x61c, 0x2028, 0x2029, 0x202e, 0x2066, 0x200b, 0x3164, 0xfeff, 0xff02, 0xe0041),
  fc.integer({ min: 0x80, max: 0xffff }).filter((c) => !wellFormed || c < 0xd800 || c > 0xdfff),
  fc.integer({ min: 0x10000, max: 0x10ffff }),
);

/** Any string of up to `maxLength` code points; `wellFormed`: without lone surrogates. */
export function anyString({ minLength = 0, maxLength = 30, wellFormed = false } = {}) {
  return fc.array(codePoint(wellFormed).map((c) => String.fromCodePoint(c)), { minLength, maxLength }).map((a) => a.join(''));
}
