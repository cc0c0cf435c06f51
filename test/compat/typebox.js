// @sinclair/typebox: schemas built with Type, checked and compiled with TypeCompiler, values cast and defaulted.
import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { tool } from './_tool.js';

export const args = {};
const User = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String({ minLength: 2 }),
  email: Type.Optional(Type.String({ pattern: '^\\S+@\\S+$' })),
  role: Type.Union([Type.Literal('admin'), Type.Literal('user')], { default: 'user' }),
  tags: Type.Array(Type.String(), { maxItems: 2, default: [] }),
});
export function run() {
  const C = TypeCompiler.Compile(User);
  const bad = { id: 0, name: 'A', email: 'x', role: 'root', tags: ['a', 'b', 'c'] };
  return {
    schema: JSON.parse(JSON.stringify(User)),
    check: [Value.Check(User, { id: 1, name: 'Ada', role: 'user', tags: [] }), C.Check(bad)],
    errors: [...C.Errors(bad)].map((e) => [e.path, e.message]),
    defaulted: Value.Default(User, { id: 2, name: 'Bo' }),
    cast: Value.Cast(User, { id: '7', name: 5, extra: true }),
    convert: Value.Convert(Type.Object({ n: Type.Number(), b: Type.Boolean() }), { n: '3.5', b: 'true' }),
    diff: Value.Diff({ a: 1, b: [1, 2] }, { a: 2, b: [1], c: 3 }),
  };
}
tool('typebox', run);
