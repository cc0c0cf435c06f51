// uuid: random (v4) and time-ordered (v7) ids checked for form; name-based (v5, v3) ids, parse/stringify.
import { NIL, parse, stringify, v3, v4, v5, v7, validate, version } from 'uuid';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const a = v4(), b = v4(), t = v7();
  const bytes = parse('6ba7b810-9dad-11d1-80b4-00c04fd430c8');
  return {
    v4: [validate(a), version(a), a !== b, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(a)],
    v7: [validate(t), version(t)],
    v5: v5('hello', v5.URL),
    v3: v3('hello', v3.DNS),
    v4fixed: v4({ random: Uint8Array.from({ length: 16 }, (_, i) => i * 17) }),
    parse: Array.from(bytes),
    stringify: stringify(bytes),
    nil: [NIL, validate('nope')],
  };
}
tool('uuid', run);
