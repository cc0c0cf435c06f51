// The `assert/strict` built-in: npm's assert (the `assert` built-in) in its strict mode, as Node's is.
import assert from 'assert';

const strict = assert.strict;
export default strict;
export const {
  fail, AssertionError, ok, equal, notEqual, deepEqual, notDeepEqual, deepStrictEqual, notDeepStrictEqual, strictEqual,
  notStrictEqual, throws, rejects, doesNotThrow, doesNotReject, ifError, match, doesNotMatch,
} = strict;
export { strict };
