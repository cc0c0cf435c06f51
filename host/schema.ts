// Tool argument schemas (JSON Schema, via ajv: schema-ajv.ts picks the draft and the options). ajv is
// imported on first use: it costs ~20 ms, which an embedder running one artifact should not pay.
//
// Invariants:
//  - Each extension gets its own Ajv instances (one per draft), so one extension's `$id`s never collide with
//    another's.
//  - Validation fills in the schema's defaults: the arguments a handler gets are the validated object.
//  - Validation that can be slow — a schema with `pattern`, `patternProperties` or `uniqueItems`, where a
//    catastrophic regular expression or a quadratic uniqueness check can run for minutes — runs off the main
//    thread under a deadline (schema-worker.ts); past it the worker is replaced and the call refused. Every
//    other schema is validated inline (linear in the arguments).
//  - A schema's size and depth are capped where the manifest is read (manifest.ts).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Ajv as AjvType } from 'ajv';
import { InvalidArgumentsError } from './errors.js';
import { cacheDir } from './paths.js';
import { ManifestError, type ToolManifest } from './manifest.js';
import { AJV_OPTIONS, draftOf, makeAjv, type Draft } from './schema-ajv.js';
import { SlowValidation } from './schema-worker.js';

/** Arguments that fail: why, or undefined. */
export type Validator = (args: unknown) => Promise<string | undefined> | string | undefined;

/** The Ajv instances of one extension: one per draft its schemas use (Ajv cannot mix drafts), so one
 *  extension's `$id`s never collide with another's. Warnings about its schemas name the tool. */
export class ExtensionAjv {
  private readonly byDraft = new Map<Draft, Promise<AjvType>>();
  constructor(private readonly warn: (message: string) => void = () => {}) {}
  for(tool: ToolManifest): Promise<AjvType> {
    const draft = draftOf(tool.name, tool.inputSchema!);
    let ajv = this.byDraft.get(draft);
    if (!ajv) this.byDraft.set(draft, (ajv = makeAjv(draft, (m) => this.warn(`tool "${tool.name}": inputSchema: ${m}`))));
    return ajv;
  }
}

// `format` too: ajv-formats checks some formats (url, email) with regular expressions that backtrack.
const SLOW_KEYWORDS = new Set(['pattern', 'patternProperties', 'uniqueItems', 'format']);

/** Whether validating against `schema` can take much longer than reading the arguments. */
export function slowSchema(schema: unknown): boolean {
  const stack = [schema];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x !== 'object' || x === null) continue;
    for (const [k, v] of Object.entries(x)) {
      if (SLOW_KEYWORDS.has(k) && v !== false) return true;
      stack.push(v);
    }
  }
  return false;
}

let slow: SlowValidation | undefined;

/** A checker for a tool's arguments. Throws ManifestError for an invalid schema. `owner` names the extension
 *  (slow validation keeps compiled schemas per owner, like the Ajv instances). */
export async function argsValidator(tool: ToolManifest, ajvs: ExtensionAjv = new ExtensionAjv(), owner = ''): Promise<Validator | undefined> {
  if (!tool.inputSchema) return undefined;
  const a = await ajvs.for(tool);
  let ok: boolean;
  try {
    ok = a.validateSchema(tool.inputSchema) as boolean;
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${e.message}`);
  }
  if (!ok) throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${a.errorsText(a.errors)}`);
  let validate;
  try {
    validate = a.compile(tool.inputSchema);
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": inputSchema cannot be compiled: ${e.message}`);
  }
  if (slowSchema(tool.inputSchema)) {
    const schema = tool.inputSchema;
    return async (args) => {
      slow ??= new SlowValidation();
      const r = await slow.validate(`${owner}\0${tool.name}`, schema, args);
      if (r.timedOut) {
        throw new InvalidArgumentsError(`validating the arguments of tool "${tool.name}" took longer than ${r.limitMs} ms ` +
          '(its inputSchema asks for pattern or uniqueItems checks that can be very slow on some inputs); the call was refused');
      }
      // the defaults the worker filled in, brought back into the caller's arguments
      if (!r.error && isRecord(args) && isRecord(r.args)) for (const [k, v] of Object.entries(r.args)) args[k] = v;
      return r.error;
    };
  }
  return (args) => (validate(args) ? undefined : a.errorsText(validate.errors, { dataVar: 'args' }));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A checker for a tool's result against its outputSchema (an Ajv of its own that fills in no defaults: a
 *  result is checked, not changed). Throws ManifestError for an invalid schema. A slow schema is checked off
 *  the main thread under the same deadline as arguments are. */
export async function resultValidator(tool: ToolManifest, owner = ''): Promise<Validator | undefined> {
  const schema = tool.outputSchema;
  if (!schema) return undefined;
  const a = await makeAjv(draftOf(tool.name, schema, 'outputSchema'), () => {}, { useDefaults: false });
  let validate;
  try {
    if (!a.validateSchema(schema)) throw new Error(a.errorsText(a.errors));
    validate = a.compile(schema);
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": outputSchema is not a valid JSON Schema: ${e.message}`);
  }
  const check = (value: unknown) => (validate(value) ? undefined : a.errorsText(validate.errors, { dataVar: 'result' }));
  if (!slowSchema(schema)) return check;
  return async (value) => {
    slow ??= new SlowValidation();
    const r = await slow.validate(`${owner}\0${tool.name}\0result`, schema, value);
    if (r.timedOut) return `checking it against the outputSchema took longer than ${r.limitMs} ms`;
    return r.error?.replace(/^args/, 'result').replaceAll(', args', ', result');
  };
}

/** Stop the slow-validation thread (at server exit). */
export function closeValidation(): void {
  slow?.close();
  slow = undefined;
}

const load = createRequire(import.meta.url);
/** Where compiled validators are kept between processes (ajv's standalone code, one file per schema). */
export const VALIDATOR_CACHE = join(cacheDir(), 'validators');

/** ajv's errorsText(errors, { dataVar: 'args' }), without an Ajv instance. */
function errorsText(errors: { instancePath: string; message?: string }[] | null | undefined): string {
  if (!errors?.length) return 'No errors';
  return errors.map((e) => `args${e.instancePath} ${e.message}`).join(', ');
}

/**
 * A tool's validator for a one-shot process: ajv's standalone code for its schema, from VALIDATOR_CACHE, made
 * and stored on a miss. A `kiln run` then loads no ajv at all for a schema it has seen before (ajv's ~60 ms
 * of loading and compiling is most of a short script's own time). The cache is keyed by the schema and
 * ajv's version; what it holds is code ajv generated, as `compile` generates on every load in the server.
 * Slow schemas keep the worker path (argsValidator).
 */
export async function cachedValidator(tool: ToolManifest, owner = ''): Promise<Validator | undefined> {
  if (!tool.inputSchema) return undefined;
  // Slow schemas keep the worker path; schemas with formats need ajv-formats' code at run time: compile them.
  if (slowSchema(tool.inputSchema) || JSON.stringify(tool.inputSchema).includes('"format"')) return argsValidator(tool, undefined, owner);
  const draft = draftOf(tool.name, tool.inputSchema);
  const version = JSON.parse(readFileSync(load.resolve('ajv/package.json'), 'utf8')).version as string;
  const key = createHash('sha256').update(JSON.stringify({ ajv: version, draft, options: AJV_OPTIONS, schema: tool.inputSchema })).digest('hex');
  const file = join(VALIDATOR_CACHE, `${key}.cjs`);
  if (!existsSync(file)) {
    const standalone = (await import('ajv/dist/standalone/index.js')).default as unknown as (ajv: AjvType, v: unknown) => string;
    const ajv = await makeAjv(draft, undefined, { code: { source: true } });
    let ok: boolean;
    try {
      ok = ajv.validateSchema(tool.inputSchema) as boolean;
    } catch (e: any) {
      throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${e.message}`);
    }
    if (!ok) throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
    let code: string;
    try {
      code = standalone(ajv, ajv.compile(tool.inputSchema));
    } catch (e: any) {
      throw new ManifestError(`tool "${tool.name}": inputSchema cannot be compiled: ${e.message}`);
    }
    try {
      mkdirSync(VALIDATOR_CACHE, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, code);
      renameSync(tmp, file);
    } catch {
      // A read-only installation: validate with this process's own compile, as a server does.
      return argsValidator(tool, undefined, owner);
    }
  }
  const validate = load(file) as ((args: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
  return (args) => (validate(args) ? undefined : errorsText(validate.errors));
}
