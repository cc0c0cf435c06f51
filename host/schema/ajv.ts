// The Ajv that checks a tool's arguments, chosen by the schema's own `$schema`: draft-07 (also when `$schema`
// is absent, and for draft-06), 2019-09 or 2020-12 — zod 4's z.toJSONSchema() writes 2020-12. Arguments get
// the schema's `default`s filled in (useDefaults) and the common `format`s checked (ajv-formats).
//
// Invariants: validation's work is bounded by counts, so it runs inline with no deadline. `pattern` and
// `patternProperties` are matched by RE2 (schema/linear-regexp.ts, through Ajv's `code.regExp`), and so are
// ajv-formats' regular-expression formats; `uniqueItems` compares canonical JSON texts in a set instead of
// every pair of items; Ajv never runs a schema's pattern against the schema's own property names
// (allowMatchingProperties: Ajv would do it with JavaScript's backtracking RegExp, at load). What pattern
// matching may cost per validation is bounded by work (PATTERN_WORK_LIMIT), what an extension's patterns may
// compile to by PATTERN_PROGRAM_LIMIT (schema/linear-regexp.ts), the schema's size and depth where the manifest is
// read (extensions/manifest.ts).
//
// The work of the compiled code itself is counted (schema/work.ts): each validation runs under SCHEMA_WORK_LIMIT
// steps, and uniqueItems spends as it writes its canonical texts (each item and property, each character). A
// `$ref` is a call of its target's function (inlineRefs: false), never a copy of its code: R references to a
// schema of D checks would otherwise compile to R × D checks. ajv-formats' `regex` format compiles a JavaScript
// RegExp, whose parser takes ~110 bytes a character outside the heap's limit: a string over
// REGEX_FORMAT_MAX_CHARS is not a regex kiln accepts.
import type { Ajv as AjvType } from 'ajv';
import type { Draft } from '../extensions/manifest.js';
import { ajvRegExp, linearFormats, loadRE2 } from './linear-regexp.js';
import { countingHelpers, instrument, ITEM_STEPS, keySteps, NODE_STEPS, spendSchemaWork, TEXT_STEPS } from './work.js';

export { draftOf, type Draft } from '../extensions/manifest.js';

/** Options every argument validator uses (also part of the validator cache's key). */
/** The longest string the `regex` format compiles. */
export const REGEX_FORMAT_MAX_CHARS = 64 * 1024;

export const AJV_OPTIONS = { allErrors: true, useDefaults: true, strictSchema: 'log', strictTypes: false, strictTuples: false, strictRequired: false, allowMatchingProperties: true, inlineRefs: false } as const;

/** A fresh Ajv for `draft`; schema warnings (unknown keywords, ...) go to `warn`. */
export async function makeAjv(draft: Draft, warn: (message: string) => void = () => {}, extra: Record<string, unknown> = {}): Promise<AjvType> {
  const Ajv = draft === '2020-12' ? (await import('ajv/dist/2020.js')).default : draft === '2019-09' ? (await import('ajv/dist/2019.js')).default : (await import('ajv')).Ajv;
  await loadRE2();
  const code = { regExp: ajvRegExp, ...(extra.code as object | undefined), process: instrument };
  const ajv = new (Ajv as unknown as new (o: object) => AjvType)({ ...AJV_OPTIONS, ...extra, code, logger: { log: () => {}, warn, error: warn } });
  Object.assign(ajv, countingHelpers(ajvRegExp)); // what instrument()'s code calls
  const formats = await import('ajv-formats');
  (formats.default as unknown as (a: AjvType) => void)(ajv);
  const { fullFormats } = (await import('ajv-formats/dist/formats.js')) as unknown as { fullFormats: Record<string, unknown> };
  for (const [name, f] of Object.entries(linearFormats(fullFormats))) ajv.addFormat(name, f as never);
  const regex = fullFormats.regex as (s: string) => boolean;
  ajv.addFormat('regex', (s: string) => s.length <= REGEX_FORMAT_MAX_CHARS && regex(s));
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

/** `v` as JSON with object keys sorted, spending as it goes so that a budget past its limit stops it before
 *  more is written: a value with no object and no infinite number in it is JSON.stringify's own text (after a
 *  walk that counts its items); any other is written by JSON.stringify through a replacer that sorts a copy of
 *  each object (each value it visits spends NODE_STEPS: a call into JavaScript for every value). JSON.stringify
 *  writes Infinity, -Infinity and null alike ("null": JSON.parse reads 1e400 as Infinity), so a value holding an
 *  infinite number gets, after a NUL (which no JSON text holds raw), what each "null" of its text was. */
function canonical(v: unknown): string {
  if (!needsReplacer(v)) {
    const text = JSON.stringify(v) ?? 'null';
    spendSchemaWork(text.length * TEXT_STEPS);
    return text;
  }
  let nulls = '';
  let infinite = false;
  const text = JSON.stringify(v, (_key, x: unknown) => {
    spendSchemaWork(NODE_STEPS);
    if (typeof x === 'string') spendSchemaWork(x.length * TEXT_STEPS);
    else if (x === null) nulls += 'n';
    else if (typeof x === 'number' && !Number.isFinite(x)) {
      infinite = true;
      nulls += x > 0 ? '+' : x < 0 ? '-' : '?';
    } else if (typeof x === 'object' && !Array.isArray(x)) {
      const keys = Object.keys(x);
      spendSchemaWork(keySteps(keys.length));
      keys.sort();
      const sorted: Record<string, unknown> = Object.create(null); // "__proto__" stays a key
      for (const k of keys) {
        spendSchemaWork(k.length * TEXT_STEPS);
        sorted[k] = (x as Record<string, unknown>)[k];
      }
      return sorted;
    }
    return x;
  }) ?? 'null';
  return infinite ? `${text}\u0000${nulls}` : text;
}

/** Whether `v` holds an object (not an array) or an infinite number at any depth; a step per item looked at.
 *  Iterative. */
function needsReplacer(v: unknown): boolean {
  const todo: unknown[] = [v];
  while (todo.length) {
    const x = todo.pop();
    if (typeof x === 'number' && !Number.isFinite(x)) return true;
    if (typeof x !== 'object' || x === null) continue;
    if (!Array.isArray(x)) return true;
    spendSchemaWork(x.length * ITEM_STEPS);
    for (const y of x) if ((typeof y === 'object' && y !== null) || (typeof y === 'number' && !Number.isFinite(y))) todo.push(y);
  }
  return false;
}
