// Mapping guest stack traces back to the extension's own files. quickjs-ng reports `file:line:column` of the
// bundle (1-based line and column); each position maps to the original `source:line:column` through the
// bundle's source map.
import { createRequire } from 'node:module';
import type { SourceMapInput, TraceMap } from '@jridgewell/trace-mapping';

type TraceMapping = typeof import('@jridgewell/trace-mapping');
let traceMapping: TraceMapping | undefined;
/** The source-map reader, loaded when a stack is first mapped (never for a call that does not fail). */
const tm = (): TraceMapping => (traceMapping ??= createRequire(import.meta.url)('@jridgewell/trace-mapping') as TraceMapping);

export const BUNDLE_PREFIX = 'bundle:';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class StackMapper {
  private readonly trace: TraceMap;
  private readonly position: RegExp;
  constructor(private readonly bundleName: string, map: unknown) {
    this.trace = new (tm().TraceMap)(map as SourceMapInput);
    this.position = new RegExp(`${escape(BUNDLE_PREFIX + this.bundleName)}:(\\d+)(?::(\\d+))?`, 'g');
  }

  /** The original `source:line:column` of a bundle position (1-based), if the map knows it. */
  original(line: number, column = 1): string | undefined {
    // A frame's column may sit between mapped segments: the nearest segment before it (GREATEST_LOWER_BOUND),
    // else the next one on the line.
    let o = tm().originalPositionFor(this.trace, { line, column: Math.max(0, column - 1) });
    if (o.source === null) o = tm().originalPositionFor(this.trace, { line, column: Math.max(0, column - 1), bias: 1 });
    if (o.source === null || o.line === null) return undefined;
    return `${o.source}:${o.line}:${(o.column ?? 0) + 1}`;
  }

  /** `text` with every `bundle:<name>:<line>:<column>` replaced by the original `source:line:column`. */
  rewrite(text: string): string {
    return text.replace(this.position, (whole, line, column) => this.original(Number(line), column ? Number(column) : 1) ?? whole);
  }

  /** The original location of the first stack frame in the extension's own code. */
  firstLocation(text: string): string | undefined {
    this.position.lastIndex = 0;
    const m = this.position.exec(text);
    this.position.lastIndex = 0;
    return m ? this.original(Number(m[1]), m[2] ? Number(m[2]) : 1) : undefined;
  }
}
