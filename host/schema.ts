// Tool argument schemas (JSON Schema, via ajv). ajv is imported on first use: it costs ~20 ms, which an
// embedder running one artifact should not pay.
import type { Ajv as AjvType } from 'ajv';
import { ManifestError, type ToolManifest } from './manifest.js';

let ajv: AjvType | undefined;

async function instance(): Promise<AjvType> {
  if (!ajv) {
    const { Ajv } = await import('ajv');
    ajv = new Ajv({ strict: false, allErrors: true });
  }
  return ajv;
}

/** A checker for a tool's arguments: returns why they do not match, or undefined. Throws ManifestError for an invalid schema. */
export async function argsValidator(tool: ToolManifest): Promise<((args: unknown) => string | undefined) | undefined> {
  if (!tool.inputSchema) return undefined;
  const a = await instance();
  if (!a.validateSchema(tool.inputSchema)) {
    throw new ManifestError(`tool "${tool.name}": inputSchema is not a valid JSON Schema: ${a.errorsText(a.errors)}`);
  }
  let validate;
  try {
    validate = a.compile(tool.inputSchema);
  } catch (e: any) {
    throw new ManifestError(`tool "${tool.name}": inputSchema cannot be compiled: ${e.message}`);
  }
  return (args) => (validate(args) ? undefined : a.errorsText(validate.errors, { dataVar: 'args' }));
}
