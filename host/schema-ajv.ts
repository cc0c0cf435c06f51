// The Ajv that checks a tool's arguments, chosen by the schema's own `$schema`: draft-07 (also when `$schema`
// is absent, and for draft-06), 2019-09 or 2020-12 — zod 4's z.toJSONSchema() writes 2020-12. Arguments get
// the schema's `default`s filled in (useDefaults) and the common `format`s checked (ajv-formats). Shared by
// the main thread (schema.ts) and the slow-validation thread (schema-worker.ts), so both judge alike.
import type { Ajv as AjvType } from 'ajv';
import type { Draft } from './manifest.js';

export { draftOf, type Draft } from './manifest.js';

/** Options every argument validator uses (also part of the validator cache's key). */
export const AJV_OPTIONS = { allErrors: true, useDefaults: true, strictSchema: 'log', strictTypes: false, strictTuples: false, strictRequired: false } as const;

/** A fresh Ajv for `draft`; schema warnings (unknown keywords, ...) go to `warn`. */
export async function makeAjv(draft: Draft, warn: (message: string) => void = () => {}, extra: Record<string, unknown> = {}): Promise<AjvType> {
  const Ajv = draft === '2020-12' ? (await import('ajv/dist/2020.js')).default : draft === '2019-09' ? (await import('ajv/dist/2019.js')).default : (await import('ajv')).Ajv;
  const ajv = new (Ajv as unknown as new (o: object) => AjvType)({ ...AJV_OPTIONS, ...extra, logger: { log: () => {}, warn, error: warn } });
  const addFormats = (await import('ajv-formats')).default as unknown as (a: AjvType) => void;
  addFormats(ajv);
  return ajv;
}
