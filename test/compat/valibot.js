// valibot: pipes, transforms, unions, and the issue list.
import * as v from 'valibot';
import { tool } from './_tool.js';

export const args = {};
const User = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1)),
  email: v.pipe(v.string(), v.email()),
  age: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 18),
  tags: v.array(v.picklist(['a', 'b'])),
  when: v.pipe(v.string(), v.isoDate()),
});
export function run() {
  const bad = v.safeParse(User, { name: '  ', email: 'x@', age: 1.5, tags: ['c'], when: '2024-13-40' });
  return {
    ok: v.parse(User, { name: ' Ann ', email: 'ann@example.com', tags: ['a'], when: '2024-02-29' }),
    issues: bad.issues.map((i) => [v.getDotPath(i), i.kind, i.type, i.message]),
    flat: v.flatten(bad.issues),
    union: v.safeParse(v.union([v.number(), v.pipe(v.string(), v.transform(Number))]), '42').output,
    variant: v.parse(v.variant('t', [v.object({ t: v.literal('a'), x: v.number() }), v.object({ t: v.literal('b') })]), { t: 'a', x: 1 }),
  };
}
tool('valibot', run);
