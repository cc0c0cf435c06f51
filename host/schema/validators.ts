// Tool argument schemas (JSON Schema, via ajv: schema/ajv.ts picks the draft and the options). ajv is
// imported on first use: it costs ~20 ms, which an embedder running one artifact should not pay.
//
// Invariants:
//  - Each extension gets its own Ajv instances (one per draft and mode), so one extension's `$id`s never
//    collide with another's.
//  - Arguments are decided with `allErrors: false` (an anyOf/oneOf alternative stops at its first failing
//    keyword); a refusal is explained by an `allErrors: true` pass, or by the first errors when that pass is
//    past a work bound.
//  - Validation fills in the schema's defaults: the arguments a handler gets are the validated object.
//  - Validation runs inline, under no clock, bounded by work: patterns and formats match with RE2 and
//    uniqueItems hashes (schema/ajv.ts); pattern matching is bounded per validation (PATTERN_WORK_LIMIT in
//    schema/linear-regexp.ts), and so is the work of the compiled code itself (SCHEMA_WORK_LIMIT in schema/work.ts:
//    a schema's inline checks per item visited, helpers by the size of what they read, errors collected).
//    The same arguments pass or fail on any machine, busy or not; arguments past a bound are refused at once.
//    A pattern RE2 cannot run fails the tool at load, naming the tool and the pattern; an extension's patterns
//    (inputs and outputs) compile to at most PATTERN_PROGRAM_LIMIT RE2 instructions (ExtensionAjv.patterns).
//  - A schema's size and depth are capped where the manifest is read (extensions/manifest.ts).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Ajv as AjvType } from 'ajv';
import { InvalidArgumentsError } from '../errors.js';
import { PatternWorkExceeded, programBudget, withPatternBudget, withProgramBudget, type ProgramBudget } from './linear-regexp.js';
import { cacheDir } from '../paths.js';
import { ManifestError, type ToolManifest } from '../extensions/manifest.js';
import { AJV_OPTIONS, draftOf, makeAjv, type Draft } from './ajv.js';
import { countingHelpers, EXPLAIN_WORK_LIMIT, instrument, SCHEMA_WORK_LIMIT, SchemaWorkExceeded, withSchemaBudget } from './work.js';

/** Arguments that fail: why, or undefined. */
export type Validator = (args: unknown) => Promise<string | undefined> | string | undefined;

/** The Ajv instances of one extension: one per draft its schemas use (Ajv cannot mix drafts), so one
 *  extension's `$id`s never collide with another's, and per mode: `allErrors: false` decides (a failing
 *  alternative of an anyOf/oneOf stops at its first failing keyword instead of validating the subtree below
 *  it: what keeps an honest recursive schema linear), `allErrors: true` only explains a refusal. Warnings
 *  about its schemas name the tool (given once, by the deciding instance). */
export class ExtensionAjv {
  private readonly byMode = new Map<string, Promise<AjvType>>();
  /** `patterns`: the extension's budget of RE2 program size, shared with its outputSchemas (resultValidator). */
  constructor(private readonly warn: (message: string) => void = () => {}, readonly patterns: ProgramBudget = programBudget()) {}
  for(tool: ToolManifest, allErrors = false): Promise<AjvType> {
    const draft = draftOf(tool.name, tool.inputSchema!);
    const key = `${draft} ${allErrors}`;
    let ajv = this.byMode.get(key);
    const warn = allErrors ? () => {} : (m: string) => this.warn(`tool "${tool.name}": inputSchema: ${m}`);
    if (!ajv) this.byMode.set(key, (ajv = makeAjv(draft, warn, { allErrors })));
    return ajv;
  }
}

/** Whether a schema uses keywords whose checks need Ajv's run-time helpers (patterns on RE2, formats), which
 *  its standalone code would not carry: such a schema is compiled in the process (cachedValidator). */
function needsRuntime(schema: unknown): boolean {
  const stack = [schema];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x !== 'object' || x === null) continue;
    for (const [k, v] of Object.entries(x)) {
      if ((k === 'pattern' || k === 'patternProperties' || k === 'format' || k === 'uniqueItems') && v !== false) return true;
      stack.push(v);
    }
  }
  return false;
}

/** Whether a schema has `pattern` or `patternProperties` anywhere (compiling it compiles RE2 programs). */
export function usesPatterns(schema: unknown): boolean {
  return JSON.stringify(schema ?? null).includes('"pattern');
}

/** How many of a refusal's errors its text quotes, and how much of each error's path. */
const ERRORS_QUOTED = 20;
const PATH_QUOTED = 200;

/** Why `errors` (Ajv's) refuse the value named `dataVar`: the first ERRORS_QUOTED, as ajv's errorsText writes
 *  them, each path cut to PATH_QUOTED characters (a property name may be megabytes long). */
export function errorsText(errors: { instancePath: string; message?: string }[] | null | undefined, dataVar: string): string {
  if (!errors?.length) return 'No errors';
  const path = (p: string) => (p.length > PATH_QUOTED ? `${p.slice(0, PATH_QUOTED)}…` : p);
  const more = errors.length > ERRORS_QUOTED ? `, and ${errors.length - ERRORS_QUOTED} more` : '';
  return errors.slice(0, ERRORS_QUOTED).map((e) => `${dataVar}${path(e.instancePath)} ${e.message}`).join(', ') + more;
}

/** Run a compiled validator under the pattern-work and schema-work bounds; `undefined` when valid, else why not. */
function run(validate: ((v: unknown) => boolean) & { errors?: unknown }, value: unknown, text: (errors: any) => string, limit = SCHEMA_WORK_LIMIT): string | undefined {
  return withSchemaBudget(() => withPatternBudget(() => (validate(value) ? undefined : text(validate.errors))), limit);
}

/** Whether `e` is a validation past one of its work bounds. */
function overBudget(e: unknown): e is Error {
  return e instanceof PatternWorkExceeded || e instanceof SchemaWorkExceeded;
}

/** `validate` run on a tool's arguments under the work bounds: why they fail, or undefined; arguments past a
 *  bound are refused with InvalidArgumentsError, naming the bound. */
function deciding(tool: ToolManifest, validate: ((v: unknown) => boolean) & { errors?: unknown }, text: (errors: any) => string): (args: unknown) => string | undefined {
  return (args) => {
    try {
      return run(validate, args, text);
    } catch (e) {
      if (overBudget(e)) throw new InvalidArgumentsError(`the arguments of tool "${tool.name}" were refused: ${e.message}`);
      throw e;
    }
  };
}

/** Throws ManifestError when `tool`'s inputSchema is not a valid JSON Schema of its draft (`a`'s). */
function checkInputSchema(a: AjvType, tool: ToolManifest): void {
  let ok: boolean;
  try {
    ok = a.validateSchema(tool.inputSchema!) as boolean;
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${e.message}`);
  }
  if (!ok) throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${a.errorsText(a.errors)}`);
}

/** A checker for a tool's arguments. Throws ManifestError for an invalid schema, or for a pattern RE2 cannot
 *  run (naming the tool and the pattern). */
export async function argsValidator(tool: ToolManifest, ajvs: ExtensionAjv = new ExtensionAjv()): Promise<Validator | undefined> {
  if (!tool.inputSchema) return undefined;
  const a = await ajvs.for(tool);
  checkInputSchema(a, tool);
  let validate: ReturnType<AjvType['compile']>;
  try {
    validate = withProgramBudget(ajvs.patterns, () => a.compile(tool.inputSchema!));
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": inputSchema cannot be compiled: ${e.message}`);
  }
  const text = (errors: any) => errorsText(errors, 'args');
  // The explaining validator, compiled on the first refusal (the schema's patterns already fit the
  // extension's program budget once, so a budget of its own holds them again).
  let explaining: Promise<ReturnType<AjvType['compile']> | undefined> | undefined;
  const everyError = async (args: unknown): Promise<string | undefined> => {
    explaining ??= ajvs.for(tool, true).then((b) => withProgramBudget(programBudget(), () => b.compile(tool.inputSchema!)), () => undefined);
    const all = await explaining.catch(() => undefined);
    if (!all) return undefined;
    try {
      return run(all, args, text, EXPLAIN_WORK_LIMIT);
    } catch (e) {
      if (overBudget(e)) return undefined; // the deciding pass's first errors explain it then
      throw e;
    }
  };
  const decide = deciding(tool, validate, text);
  return async (args) => {
    const why = decide(args);
    return why === undefined ? undefined : ((await everyError(args)) ?? why);
  };
}

/** A checker for a tool's result against its outputSchema (an Ajv of its own that fills in no defaults: a
 *  result is checked, not changed). Throws ManifestError for an invalid schema. */
export async function resultValidator(tool: ToolManifest, patterns: ProgramBudget = programBudget()): Promise<Validator | undefined> {
  const schema = tool.outputSchema;
  if (!schema) return undefined;
  const a = await makeAjv(draftOf(tool.name, schema, 'outputSchema'), () => {}, { useDefaults: false });
  let validate: ReturnType<AjvType['compile']>;
  try {
    if (!a.validateSchema(schema)) throw new Error(a.errorsText(a.errors));
    validate = withProgramBudget(patterns, () => a.compile(schema));
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": outputSchema is not a valid JSON Schema: ${e.message}`);
  }
  return (value) => {
    try {
      return run(validate, value, (errors) => errorsText(errors, 'result'));
    } catch (e) {
      if (overBudget(e)) return e.message;
      throw e;
    }
  };
}

const load = createRequire(import.meta.url);
/** Where compiled validators are kept between processes (ajv's standalone code, one file per schema). */
export const VALIDATOR_CACHE = join(cacheDir(), 'validators');

/**
 * A tool's validator for a one-shot process: ajv's standalone code for its schema, from VALIDATOR_CACHE, made
 * and stored on a miss. A `kiln run` then loads no ajv at all for a schema it has seen before (ajv's ~60 ms
 * of loading and compiling is most of a short script's own time). The cache is keyed by the schema and
 * ajv's version; what it holds is code ajv generated, as `compile` generates on every load in the server.
 * Schemas whose checks need run-time helpers (needsRuntime) are compiled in the process (argsValidator).
 */
export async function cachedValidator(tool: ToolManifest): Promise<Validator | undefined> {
  if (!tool.inputSchema) return undefined;
  if (needsRuntime(tool.inputSchema)) return argsValidator(tool);
  const draft = draftOf(tool.name, tool.inputSchema);
  const version = JSON.parse(readFileSync(load.resolve('ajv/package.json'), 'utf8')).version as string;
  const key = createHash('sha256').update(JSON.stringify({ ajv: version, draft, options: AJV_OPTIONS, schema: tool.inputSchema })).digest('hex');
  const file = join(VALIDATOR_CACHE, `${key}.cjs`);
  if (!existsSync(file)) {
    const standalone = (await import('ajv/dist/standalone/index.js')).default as unknown as (ajv: AjvType, v: unknown) => string;
    const ajv = await makeAjv(draft, undefined, { code: { source: true } });
    checkInputSchema(ajv, tool);
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
      return argsValidator(tool);
    }
  }
  // Ajv's code as it wrote it, counted as the server's is (schema/work.ts)
  const module = { exports: {} as unknown };
  new Function('self', 'require', 'module', 'exports', instrument(readFileSync(file, 'utf8')))(countingHelpers(undefined), load, module, module.exports);
  const validate = module.exports as ((args: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
  return deciding(tool, validate, (errors) => errorsText(errors, 'args'));
}
