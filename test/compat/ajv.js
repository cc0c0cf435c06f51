// ajv: compiling schemas (draft-07 and 2019-09 keywords, $ref, $defs), validating, error objects.
import Ajv from 'ajv';
import { tool } from './_tool.js';

export const args = {};
const schema = {
  $id: 'https://example.com/order.json',
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1 },
    items: { type: 'array', minItems: 1, items: { $ref: '#/definitions/item' } },
    status: { enum: ['open', 'closed'] },
    note: { type: 'string', maxLength: 5 },
  },
  required: ['id', 'items'],
  additionalProperties: false,
  definitions: { item: { type: 'object', properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' }, qty: { type: 'number', exclusiveMinimum: 0 } }, required: ['sku'] } },
};
export function run() {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });
  const validate = ajv.compile(schema);
  const good = { id: '7', items: [{ sku: 'ABC-1', qty: 2 }] };
  const okGood = validate(good);
  const okBad = validate({ id: 0, items: [{ sku: 'abc', qty: 0 }], status: 'x', note: 'too long', extra: 1 });
  return {
    okGood,
    coerced: good,
    okBad,
    errors: validate.errors.map((e) => [e.instancePath, e.keyword, e.message]),
    text: ajv.errorsText(validate.errors),
    meta: ajv.validateSchema({ type: 'nope' }),
  };
}
tool('ajv', run);
