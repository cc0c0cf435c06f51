// A tool's result as MCP content. The guest is untrusted, so its result is data to check, never a shape to
// pass on: kiln builds every content block itself.
//
//  - A string is sent as plain text.
//  - A plain object is sent as JSON text and as `structuredContent` (MCP requires structured content to be an
//    object; an array, a number or null is JSON text only).
//  - Bytes (a Uint8Array or ArrayBuffer; the prelude marks them `{"$kiln.bytes": base64}`) are an image: PNG,
//    JPEG, GIF or WebP, told by their first bytes, never by what the guest says.
//  - `kiln.content([...])` (marked `{"$kiln.content": [...]}`) is mixed content: text, images and
//    `resource_link`s, each checked.
//  - The whole result is at most [limits] maxResultBytes.
import { InvalidResultError, KilnError } from '../errors.js';

/** A result past the operator's size limit: clients drop the connection on huge messages, so it is refused. */
export class ResultTooLargeError extends KilnError {
  override name = 'ResultTooLargeError';
}

export type Content =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; title?: string; description?: string; mimeType?: string };
export type ToolResult = {
  content: Content[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

const MAX_PARTS = 100;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const SIGNATURES: [string, number[]][] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const only = (v: Record<string, unknown>, key: string) => Object.keys(v).length === 1 && Object.hasOwn(v, key);

/** The image type of base64 `data`, from its first bytes. */
export function imageType(data: string): string | undefined {
  if (typeof data !== 'string' || data.length % 4 !== 0 || !BASE64.test(data)) return undefined;
  const head = Buffer.from(data.slice(0, 24), 'base64');
  for (const [type, sig] of SIGNATURES) if (sig.every((b, i) => head[i] === b)) return type;
  if (head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}

function image(data: unknown, declared: unknown, where: string): Content {
  const type = imageType(data as string);
  if (!type) throw new InvalidResultError(`${where} are bytes, but not a PNG, JPEG, GIF or WebP image; return text (e.g. base64 yourself) for other bytes`);
  if (declared !== undefined && declared !== type) throw new InvalidResultError(`${where} is ${type}, not the ${String(declared).slice(0, 40)} it declares`);
  return { type: 'image', data: data as string, mimeType: type };
}

function resourceLink(p: Record<string, unknown>, where: string): Content {
  const str = (k: string, required = false) => {
    if (p[k] === undefined && !required) return undefined;
    if (typeof p[k] !== 'string' || (p[k] as string).length > 2048) throw new InvalidResultError(`${where}: ${k} must be a string of at most 2048 characters`);
    return p[k] as string;
  };
  const uri = str('uri', true)!;
  if (!URL.canParse(uri)) throw new InvalidResultError(`${where}: uri ${JSON.stringify(uri.slice(0, 80))} is not a URL`);
  // Schemes that run code or carry a document where a client shows a link are not resources.
  if (/^(javascript|data|vbscript|blob):/i.test(uri)) throw new InvalidResultError(`${where}: a resource_link may not use the ${uri.split(':')[0].toLowerCase()}: scheme`);
  const link: Content = { type: 'resource_link', uri, name: str('name', true)! };
  for (const k of ['title', 'description', 'mimeType'] as const) {
    const v = str(k);
    if (v !== undefined) link[k] = v;
  }
  return link;
}

function part(p: unknown, i: number): Content {
  const where = `part ${i} of kiln.content`;
  if (!isRecord(p)) throw new InvalidResultError(`${where} must be a string, image bytes, or { type: "resource_link", uri, name }`);
  if (p.type === 'text' && typeof p.text === 'string') return { type: 'text', text: p.text };
  if (p.type === 'image') return image(p['$kiln.bytes'] ?? p.data, p.mimeType, where);
  if (p.type === 'resource_link') return resourceLink(p, where);
  throw new InvalidResultError(`${where} has type ${JSON.stringify(p.type ?? null).slice(0, 40)}; kiln sends text, image and resource_link parts`);
}

const size = (c: Content[]) => c.reduce((n, b) => n + (b.type === 'text' ? Buffer.byteLength(b.text) : b.type === 'image' ? b.data.length : Buffer.byteLength(JSON.stringify(b))), 0);

/** `value`, a tool's result, as MCP content; InvalidResultError when it cannot be sent. */
export function toolResult(value: unknown, maxBytes: number, name: string): ToolResult {
  let result: ToolResult;
  if (typeof value === 'string') {
    result = { content: [{ type: 'text', text: value }] };
  } else if (isRecord(value) && only(value, '$kiln.bytes')) {
    result = { content: [image(value['$kiln.bytes'], undefined, `the result of ${name}`)] };
  } else if (isRecord(value) && only(value, '$kiln.content')) {
    const parts = value['$kiln.content'];
    if (!Array.isArray(parts) || parts.length > MAX_PARTS) throw new InvalidResultError(`${name} returned kiln.content with more than ${MAX_PARTS} parts`);
    result = { content: parts.map(part) };
  } else {
    const text = JSON.stringify(value ?? null);
    result = { content: [{ type: 'text', text }], ...(isRecord(value) ? { structuredContent: value } : {}) };
  }
  // Text counts once even when it is also structured content (the JSON text is that content's size).
  const bytes = size(result.content);
  if (bytes > maxBytes) {
    throw new ResultTooLargeError(`${name} returned ${bytes} bytes of content; results are limited to ${maxBytes} bytes ([limits] maxResultBytes in kiln.toml)`);
  }
  return result;
}
