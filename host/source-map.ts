// Mapping guest stack traces back to the extension's own files. QuickJS reports `file:line` of the bundle
// (it has no columns), so each bundle line maps to the first original position on it.
import { decodedMappings, TraceMap, type SourceMapInput } from '@jridgewell/trace-mapping';

export const BUNDLE_PREFIX = 'bundle:';

export class StackMapper {
  private readonly trace: TraceMap;
  constructor(private readonly bundleName: string, map: unknown) {
    this.trace = new TraceMap(map as SourceMapInput);
  }

  /** The original `source:line` of a bundle line, if the map knows it. */
  original(line: number): { source: string; line: number } | undefined {
    const segments = decodedMappings(this.trace)[line - 1] ?? [];
    for (const seg of segments) {
      if (seg.length >= 4) return { source: this.trace.sources[seg[1]!] ?? '?', line: seg[2]! + 1 };
    }
    return undefined;
  }

  /** `text` with every `bundle:<name>:<line>` replaced by the original `source:line`, and kiln's own prelude
   *  frames left out (they are the API's insides, not the author's code). */
  rewrite(text: string): string {
    const escaped = (BUNDLE_PREFIX + this.bundleName).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return text.split('\n').filter((l) => !/^\s+at .*\(kiln:prelude[:)]/.test(l)).join('\n').replace(new RegExp(`${escaped}:(\\d+)`, 'g'), (whole, line) => {
      const o = this.original(Number(line));
      return o ? `${o.source}:${o.line}` : whole;
    });
  }

  /** The original location of the first stack frame in the extension's own code. */
  firstLocation(text: string): string | undefined {
    const escaped = (BUNDLE_PREFIX + this.bundleName).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const m = new RegExp(`${escaped}:(\\d+)`).exec(text);
    const o = m && this.original(Number(m[1]));
    return o ? `${o.source}:${o.line}` : undefined;
  }
}
