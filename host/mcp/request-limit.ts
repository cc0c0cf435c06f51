// The size limit of one MCP message over stdio. The SDK's stdio transport closes itself (and stops reading, so
// the server neither answers nor exits) when a line passes its own buffer limit. Lines are therefore cut here
// first: a line over `max` bytes is dropped whole, the client gets a JSON-RPC error for it (with the request's
// id when it can be read from the line's start), and the server goes on reading the next line.
import { Transform, type TransformCallback } from 'node:stream';

/** The largest JSON-RPC message kiln reads from stdin. */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;

const HEAD_BYTES = 4096;

/** The `id` of a JSON-RPC request from the first bytes of its line, if it comes before `params` (as clients
 *  write it). An `"id"` inside params is never taken for the request's. */
export function requestIdHint(head: string): string | number | null {
  const params = head.indexOf('"params"');
  const before = params < 0 ? head : head.slice(0, params);
  const m = /"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?\d{1,16})\s*[,}]/.exec(before);
  if (!m) return null;
  try {
    return JSON.parse(m[1]) as string | number;
  } catch {
    return null;
  }
}

/** Passes whole lines of at most `max` bytes; reports each longer line through `oversize` and drops it. */
export class RequestLineLimit extends Transform {
  private parts: Buffer[] = [];
  private size = 0;
  private head = '';
  private discarding = false;

  constructor(private readonly max: number, private readonly oversize: (id: string | number | null, bytes: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let i = 0;
    while (i < chunk.length) {
      const nl = chunk.indexOf(10, i);
      const end = nl < 0 ? chunk.length : nl + 1;
      const piece = chunk.subarray(i, end);
      i = end;
      if (this.discarding) {
        this.size += piece.length;
        if (nl >= 0) this.endOversize();
        continue;
      }
      if (this.size + piece.length > this.max) {
        if (this.head.length < HEAD_BYTES) this.head = Buffer.concat([...this.parts, piece]).subarray(0, HEAD_BYTES).toString('utf8');
        this.parts = [];
        this.size += piece.length;
        this.discarding = true;
        if (nl >= 0) this.endOversize();
        continue;
      }
      this.parts.push(piece);
      this.size += piece.length;
      if (nl >= 0) {
        this.push(Buffer.concat(this.parts));
        this.parts = [];
        this.size = 0;
      }
    }
    done();
  }

  private endOversize(): void {
    this.oversize(requestIdHint(this.head), this.size);
    this.discarding = false;
    this.head = '';
    this.size = 0;
  }
}
