// superstruct: structs for objects, unions, refinements and coercions; validation results and failures.
import { array, assert, coerce, create, defaulted, enums, integer, is, min, number, object, optional, pattern, refine, string, union, validate } from 'superstruct';
import { tool } from './_tool.js';

export const args = {};
const User = object({
  id: integer(),
  name: string(),
  email: pattern(string(), /^\S+@\S+$/),
  role: defaulted(enums(['admin', 'user']), 'user'),
  tags: optional(array(string())),
  age: min(number(), 0),
  even: refine(number(), 'even', (v) => v % 2 === 0 || `expected an even number, got ${v}`),
  contact: union([string(), number()]),
});
const Num = coerce(number(), string(), (v) => parseFloat(v));
export function run() {
  const good = { id: 1, name: 'Ada', email: 'ada@x.org', age: 36, even: 2, contact: 5 };
  const [err] = validate({ ...good, id: 1.5, email: 'x', age: -1, even: 3, contact: null }, User);
  let thrown;
  try { assert({ id: 'x' }, User); } catch (e) { thrown = [e.message, e.path, e.type]; }
  return {
    is: [is(good, User), is({ ...good, name: 3 }, User)],
    created: create(good, User),
    failures: err.failures().map((f) => [f.path.join('.'), f.type, f.refinement ?? null, f.message]),
    thrown,
    coerced: create('3.25', Num),
  };
}
tool('superstruct', run);
