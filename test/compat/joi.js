// joi: object schemas with conversion, defaults, references, alternatives and every error reported. (Not
// describe(): joi's browser build, the one kiln bundles, leaves it out by design.)
import Joi from 'joi';
import { tool } from './_tool.js';

export const args = {};
const schema = Joi.object({
  username: Joi.string().alphanum().min(3).max(30).required(),
  password: Joi.string().pattern(/^[a-zA-Z0-9]{3,30}$/),
  repeat: Joi.ref('password'),
  birth: Joi.number().integer().min(1900).max(2013),
  email: Joi.string().email({ tlds: false }),
  role: Joi.string().valid('admin', 'user').default('user'),
  ids: Joi.array().items(Joi.number()).unique(),
  contact: Joi.alternatives().try(Joi.string().email({ tlds: false }), Joi.number()),
}).with('username', 'birth').xor('password', 'email');
export function run() {
  const ok = schema.validate({ username: 'abc', birth: '1994', password: 'pw123', repeat: 'pw123', ids: ['1', 2], contact: 5 });
  const bad = schema.validate({ username: 'a!', password: 'x', email: 'a@b.co', repeat: 'y', ids: [1, 1], contact: true, extra: 1 }, { abortEarly: false });
  return {
    value: ok.value,
    error: ok.error ?? null,
    details: bad.error.details.map((d) => [d.type, d.path.join('.'), d.message]),
    message: bad.error.message,
    date: Joi.date().iso().validate('2024-02-29T12:00:00Z').value.toISOString(),
  };
}
tool('joi', run);
