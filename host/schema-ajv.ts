// The Ajv that checks a tool's arguments, chosen by the schema's own `$schema`: draft-07 (also when `$schema`
// is absent, and for draft-06), 2019-09 or 2020-12 — zod 4's z.toJSONSchema() writes 2020-12. Arguments get
// the schema's `default`s filled in (useDefaults) and the common `format`s checked (ajv-formats).
//
// Invariants: validation's work is bounded by counts, so it runs inline with no deadline. `pattern` and
// `patternProperties` are matched by RE2 (linear-regexp.ts, through Ajv's `code.regExp`), and so are
// ajv-formats' regular-expression formats; `uniqueItems` compares canonical JSON texts in a set instead of
// every pair of items; Ajv never runs a schema's pattern against the schema's own property names
// (allowMatchingProperties: Ajv would do it with JavaScript's backtracking RegExp, at load). What pattern
// matching may cost per validation is bounded by work (PATTERN_WORK_LIMIT), what an extension's patterns may
// compile to by PATTERN_PROGRAM_LIMIT (linear-regexp.ts), the schema's size and depth where the manifest is
// read (manifest.ts).
//
// The work of the compiled code itself is bounded too (SCHEMA_WORK_LIMIT): a recursive anyOf/oneOf can make
// it grow exponentially with the arguments' nesting, each alternative validating the same subtree again. Every
// function Ajv compiles (one per non-inlined schema: each `$ref` target, the recursion of a recursive schema)
// is instrumented through `code.process` (instrument) to spend one step on entry and one per error it copies
// from a callee, from the current validation's budget (withSchemaBudget); past it the validation throws
// SchemaWorkExceeded. Inline code between two calls is bounded by the schema's size, so the count bounds the
// whole. A count, not a clock: the same arguments pass or fail on any machine.
import { WorkBudget } from './work-budget.js';
import type { Ajv as AjvType } from 'ajv';
import type { Draft } from './manifest.js';
import { ajvRegExp, linearFormats, loadRE2 } from './linear-regexp.js';

export { draftOf, type Draft } from './manifest.js';

/** Options every argument validator uses (also part of the validator cache's key). */
export const AJV_OPTIONS = { allErrors: true, useDefaults: true, strictSchema: 'log', strictTypes: false, strictTuples: false, strictRequired: false, allowMatchingProperties: true } as const;

/** Steps one validation may spend in Ajv's compiled code: one per call of a compiled schema function, one
 *  per error copied from a callee (valid arguments with 200,000 nodes under a recursive schema spend about one
 *  step per node). */
export const SCHEMA_WORK_LIMIT = 2 ** 18;

export class SchemaWorkExceeded extends Error {}

const schemaWork = new WorkBudget(SCHEMA_WORK_LIMIT, () => new SchemaWorkExceeded(`validating them against the schema needs more than ${SCHEMA_WORK_LIMIT} steps (calls of its ` +
      'subschemas and errors collected): a recursive anyOf/oneOf makes this grow exponentially with how deep the arguments nest'));

/** Run `f` (one validation) with a fresh schema-work budget; nested calls share the outer one. Outside a
 *  validation (Ajv checking a schema against its meta-schema at load) nothing is counted: that work is bounded
 *  by the schema's size. */
export const withSchemaBudget = <T>(f: () => T): T => schemaWork.run(f);
const spendSchemaWork = (steps: number): void => schemaWork.spend(steps);

// The head of every function Ajv generates (its destructured validation context, with `dynamicAnchors` in
// drafts 2019-09 and 2020-12). Ajv writes string constants with JSON.stringify, so a schema's own text can
// never contain this (its `"` would be escaped).
const FUNCTION_HEAD = /function \w+\(data, \{instancePath="", parentData, parentDataProperty, rootData=data(?:, dynamicAnchors=\{\})?\}=\{\}\)\{/g;
// Where a function appends a callee's errors to its own (Ajv's addErrorsFrom).
const ERRORS_COPY = /vErrors\.concat\(([\w.]+)\)/g;

/** Ajv's `code.process`: `source` (one compiled schema function and its scope) with each function spending a
 *  step on entry and a step per error copied. Throws when no function head is found (an Ajv whose code kiln
 *  does not know): a validator is never left uncounted. */
export function instrument(source: string): string {
  let heads = 0;
  const out = source
    .replace(FUNCTION_HEAD, (head) => (heads++, `${head}self.kilnWork(1);`))
    .replace(ERRORS_COPY, (_, errors: string) => `vErrors.concat(self.kilnErrors(${errors}))`);
  if (!heads) throw new Error('kiln cannot count the work of the validator Ajv generated (unknown function head)');
  return out;
}

/** A fresh Ajv for `draft`; schema warnings (unknown keywords, ...) go to `warn`. */
export async function makeAjv(draft: Draft, warn: (message: string) => void = () => {}, extra: Record<string, unknown> = {}): Promise<AjvType> {
  const Ajv = draft === '2020-12' ? (await import('ajv/dist/2020.js')).default : draft === '2019-09' ? (await import('ajv/dist/2019.js')).default : (await import('ajv')).Ajv;
  await loadRE2();
  const code = { regExp: ajvRegExp, ...(extra.code as object | undefined), process: instrument };
  const ajv = new (Ajv as unknown as new (o: object) => AjvType)({ ...AJV_OPTIONS, ...extra, code, logger: { log: () => {}, warn, error: warn } });
  // what instrument()'s code calls (`self` in Ajv's generated code is this instance)
  Object.assign(ajv, { kilnWork: spendSchemaWork, kilnErrors: (errors: unknown[]) => (spendSchemaWork(errors.length), errors) });
  const formats = await import('ajv-formats');
  (formats.default as unknown as (a: AjvType) => void)(ajv);
  const { fullFormats } = (await import('ajv-formats/dist/formats.js')) as unknown as { fullFormats: Record<string, unknown> };
  for (const [name, f] of Object.entries(linearFormats(fullFormats))) ajv.addFormat(name, f as never);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: uniqueItems });
  return ajv;
}

/** `uniqueItems`, linear in the array's JSON size: each item's canonical JSON text (keys sorted) goes into a
 *  set. JSON Schema's equality is JSON equality, which canonical texts decide. */
function uniqueItems(this: unknown, on: boolean, data: unknown[]): boolean {
  const self = uniqueItems as unknown as { errors?: object[] | null };
  self.errors = null;
  if (!on) return true;
  const seen = new Map<string, number>();
  for (let j = 0; j < data.length; j++) {
    const text = canonical(data[j]);
    const i = seen.get(text);
    if (i !== undefined) {
      self.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
      return false;
    }
    seen.set(text, j);
  }
  return true;
}

/** Text already written, as opposed to a value still to write (canonical's stack holds both). */
class Text {
  constructor(readonly text: string) {}
}

/** `v` as JSON with object keys sorted. Iterative: arguments may nest as deep as JSON.parse allows. */
function canonical(v: unknown): string {
  const out: string[] = [];
  const todo: unknown[] = [v];
  while (todo.length) {
    const x = todo.pop();
    if (x instanceof Text) out.push(x.text);
    else if (Array.isArray(x)) {
      todo.push(new Text(']'));
      for (let i = x.length - 1; i >= 0; i--) todo.push(x[i], new Text(i ? ',' : ''));
      todo.push(new Text('['));
    } else if (typeof x === 'object' && x !== null) {
      const keys = Object.keys(x).sort();
      todo.push(new Text('}'));
      for (let i = keys.length - 1; i >= 0; i--) todo.push((x as Record<string, unknown>)[keys[i]], new Text(`${i ? ',' : ''}${JSON.stringify(keys[i])}:`));
      todo.push(new Text('{'));
    } else out.push(JSON.stringify(x) ?? 'null');
  }
  return out.join('');
}
