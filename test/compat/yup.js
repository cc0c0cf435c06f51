// yup: an object schema with transforms, nested objects, arrays, conditions and custom tests; errors collected.
import * as yup from 'yup';
import { tool } from './_tool.js';

export const args = {};
const schema = yup.object({
  name: yup.string().trim().required().min(2),
  age: yup.number().integer().positive().max(150),
  email: yup.string().email(),
  kind: yup.mixed().oneOf(['admin', 'user']).default('user'),
  tags: yup.array(yup.string().lowercase()).max(3),
  address: yup.object({ zip: yup.string().matches(/^\d{5}$/, 'zip must be 5 digits') }),
  password: yup.string().when('kind', { is: 'admin', then: (s) => s.required().min(8) }),
  even: yup.number().test('even', '${path} must be even', (v) => v === undefined || v % 2 === 0),
});
const errorsOf = (input) => {
  try { schema.validateSync(input, { abortEarly: false }); return []; } catch (e) { return e.errors; }
};
export function run() {
  return {
    cast: schema.cast({ name: '  Ada ', age: '36', tags: ['A', 'B'], address: { zip: '12345' } }),
    valid: schema.isValidSync({ name: 'Ada', age: 36 }),
    errors: errorsOf({ name: 'A', age: -1.5, email: 'nope', kind: 'admin', tags: ['a', 'b', 'c', 'd'], address: { zip: '1' }, even: 3 }),
    strict: errorsOf({ name: 'Bob', age: 'x' }),
    describe: Object.keys(schema.describe().fields),
    date: yup.date().cast('2024-02-29T00:00:00Z').toISOString(),
  };
}
tool('yup', run);
