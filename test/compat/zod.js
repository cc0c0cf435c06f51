// zod 4: schemas, parsing, issues, and z.toJSONSchema() as the tool's inputSchema.
import { z } from 'zod';
import { tool } from './_tool.js';

const User = z.object({
  name: z.string().min(1),
  age: z.number().int().nonnegative(),
  email: z.email().optional(),
  role: z.enum(['admin', 'user']),
  tags: z.array(z.string()).max(3),
});
export const inputSchema = z.toJSONSchema(User);
export const args = { name: 'Ada', age: 36, email: 'ada@example.com', role: 'admin', tags: ['math'] };

export function run(input) {
  const bad = User.safeParse({ name: '', age: -1.5, email: 'nope', role: 'root', tags: ['a', 'b', 'c', 'd'] });
  const Shape = z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('circle'), r: z.number() }),
    z.object({ kind: z.literal('square'), side: z.number() }),
  ]);
  return {
    parsed: User.parse(input),
    issues: bad.error.issues.map((i) => ({ path: i.path, code: i.code, message: i.message })),
    pretty: z.prettifyError(bad.error),
    coerced: z.coerce.number().parse('42'),
    transformed: z.string().transform((s) => s.split(',')).pipe(z.array(z.string().trim())).parse('a, b ,c'),
    union: Shape.parse({ kind: 'square', side: 2 }),
    record: z.record(z.string(), z.number()).safeParse({ a: 1, b: 'x' }).success,
    schema: inputSchema,
  };
}
tool('zod', run, inputSchema);
