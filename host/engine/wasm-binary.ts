// Just enough of the WebAssembly binary format to read an artifact's custom sections, find the engine's core
// modules, and merge the data segments of Wizer's snapshot. Sections are kept as byte ranges; nothing is
// decoded that is not needed.

export interface Section {
  id: number;
  /** Whole section: id byte, size LEB and body. */
  start: number;
  end: number;
  bodyStart: number;
}

export class WasmFormatError extends Error {
  override name = 'WasmFormatError';
}

export function readU32(buf: Uint8Array, pos: number): [value: number, next: number] {
  let result = 0;
  let shift = 0;
  for (;;) {
    if (pos >= buf.length) throw new WasmFormatError('truncated LEB128 number');
    const byte = buf[pos++];
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result >>> 0, pos];
    shift += 7;
    if (shift > 28) throw new WasmFormatError('LEB128 number too large');
  }
}

export function encodeU32(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

function encodeI32(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

const CORE_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const COMPONENT_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

function hasHeader(buf: Uint8Array, header: number[]): boolean {
  return buf.length >= 8 && header.every((b, i) => buf[i] === b);
}

export function isComponent(buf: Uint8Array): boolean {
  return hasHeader(buf, COMPONENT_HEADER);
}

/** The sections of a module or component, from byte `from` (after the header by default). */
export function sections(buf: Uint8Array, from = 8): Section[] {
  if (!hasHeader(buf, CORE_HEADER) && !hasHeader(buf, COMPONENT_HEADER)) {
    throw new WasmFormatError('not a WebAssembly module or component (bad magic or version)');
  }
  const out: Section[] = [];
  let pos = from;
  while (pos < buf.length) {
    const start = pos;
    const id = buf[pos];
    const [size, bodyStart] = readU32(buf, pos + 1);
    const end = bodyStart + size;
    if (end > buf.length) throw new WasmFormatError(`section ${id} runs past the end of the file`);
    out.push({ id, start, end, bodyStart });
    pos = end;
  }
  return out;
}

function section(id: number, body: Uint8Array): Uint8Array {
  return concat([Uint8Array.of(id, ...encodeU32(body.length)), body]);
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

// ---- custom sections ----------------------------------------------------------------------------

export function customSection(name: string, payload: Uint8Array): Uint8Array {
  const nameBytes = new TextEncoder().encode(name);
  return section(0, concat([Uint8Array.from(encodeU32(nameBytes.length)), nameBytes, payload]));
}

/** A custom section's name and where its payload starts. */
export function readCustomName(buf: Uint8Array, s: Section): [name: string, payloadStart: number] {
  const [len, pos] = readU32(buf, s.bodyStart);
  if (pos + len > s.end) throw new WasmFormatError('custom section name runs past its section');
  return [new TextDecoder().decode(buf.subarray(pos, pos + len)), pos + len];
}

/** Payloads of the custom sections named `name`, in order. */
export function readCustomSections(buf: Uint8Array, name: string): Uint8Array[] {
  return sections(buf)
    .filter((s) => s.id === 0)
    .map((s) => [readCustomName(buf, s), s] as const)
    .filter(([[n]]) => n === name)
    .map(([[, payloadStart], s]) => buf.subarray(payloadStart, s.end));
}

/** The buffer without any custom section whose name starts with `prefix`. */
export function stripCustomSections(buf: Uint8Array, prefix: string): Uint8Array {
  const keep = [buf.subarray(0, 8)];
  for (const s of sections(buf)) {
    if (s.id === 0 && readCustomName(buf, s)[0].startsWith(prefix)) continue;
    keep.push(buf.subarray(s.start, s.end));
  }
  return concat(keep);
}

/** The buffer without custom sections, at its top level and in the core modules a component holds: names and
 *  producers are for debuggers, and each byte of the engine is carried by every artifact. */
export function withoutCustomSections(buf: Uint8Array): Uint8Array {
  const keep = [buf.subarray(0, 8)];
  for (const s of sections(buf)) {
    if (s.id === 0) continue;
    if (isComponent(buf) && s.id === COMPONENT_CORE_MODULE) keep.push(section(s.id, withoutCustomSections(buf.subarray(s.bodyStart, s.end))));
    else keep.push(buf.subarray(s.start, s.end));
  }
  return concat(keep);
}

// ---- core modules inside a component ------------------------------------------------------------

const COMPONENT_CORE_MODULE = 1;

/** The core modules of a component, in the order jco's bindings number them (core, core2, ...). */
export function coreModules(component: Uint8Array): Section[] {
  if (!isComponent(component)) throw new WasmFormatError('not a WebAssembly component');
  return sections(component).filter((s) => s.id === COMPONENT_CORE_MODULE);
}

export function moduleBytes(component: Uint8Array, s: Section): Uint8Array {
  return component.subarray(s.bodyStart, s.end);
}

// ---- data segments of a core module -------------------------------------------------------------

const DATA = 11;
const DATA_COUNT = 12;

interface ActiveSegment {
  address: number;
  bytes: Uint8Array;
  /** Byte range of the whole segment inside the module. */
  start: number;
  end: number;
}

function readActiveSegments(mod: Uint8Array): { section: Section | undefined; count: number; segments: ActiveSegment[] } {
  const data = sections(mod).find((s) => s.id === DATA);
  if (!data) return { section: undefined, count: 0, segments: [] };
  let [count, pos] = readU32(mod, data.bodyStart);
  const segments: ActiveSegment[] = [];
  for (let i = 0; i < count; i++) {
    const start = pos;
    const [flags, p1] = readU32(mod, pos);
    pos = p1;
    let address = -1;
    if (flags === 0 || flags === 2) {
      if (flags === 2) pos = readU32(mod, pos)[1];
      if (mod[pos] !== 0x41) throw new WasmFormatError('data segment offset is not an i32.const');
      // sleb128 i32
      let result = 0, shift = 0, byte;
      pos++;
      do {
        byte = mod[pos++];
        result |= (byte & 0x7f) << shift;
        shift += 7;
      } while (byte & 0x80);
      if (shift < 32 && byte & 0x40) result |= ~0 << shift;
      address = result >>> 0;
      if (mod[pos++] !== 0x0b) throw new WasmFormatError('data segment offset expression is not a constant');
    }
    const [len, p2] = readU32(mod, pos);
    const bytes = mod.subarray(p2, p2 + len);
    pos = p2 + len;
    if (address >= 0) segments.push({ address, bytes, start, end: pos });
  }
  return { section: data, count, segments };
}

/** The module with its active data segments sorted by address and merged where fewer than `gap` bytes lie
 *  between them (the gap is written out as zeros, which is what memory holds there). Passive segments keep
 *  their indices (code refers to them by index), so they must all come first, as in Wizer's snapshots; the
 *  active ones must be in memory 0 and not overlap. Otherwise the module is returned unchanged. */
export function mergeDataSegments(mod: Uint8Array, gap: number): { module: Uint8Array; before: number; after: number } {
  const { section: data, count, segments } = readActiveSegments(mod);
  const passive = count - segments.length;
  if (!data || segments.length === 0) return { module: mod, before: count, after: count };
  const [, first] = readU32(mod, data.bodyStart);
  // The passive segments are the bytes between the count and the first active segment.
  const leading = mod.subarray(first, segments[0].start);
  if (segments.some((seg, i) => i > 0 && seg.start !== segments[i - 1].end) || segments[segments.length - 1].end !== data.end) {
    return { module: mod, before: count, after: count };
  }
  const sorted = [...segments].sort((a, b) => a.address - b.address);
  const merged: { address: number; parts: Uint8Array[]; end: number }[] = [];
  for (const seg of sorted) {
    const last = merged[merged.length - 1];
    if (last && seg.address < last.end) throw new WasmFormatError('data segments overlap');
    if (last && seg.address - last.end <= gap) {
      last.parts.push(new Uint8Array(seg.address - last.end), seg.bytes);
      last.end = seg.address + seg.bytes.length;
    } else {
      merged.push({ address: seg.address, parts: [seg.bytes], end: seg.address + seg.bytes.length });
    }
  }
  // Memory starts zeroed: runs of at least `gap` zeros (inside merged segments, or Wizer's own) are not written.
  const pieces: { address: number; bytes: Uint8Array }[] = [];
  for (const m of merged) {
    const bytes = concat(m.parts);
    let i = 0;
    while (i < bytes.length) {
      while (i < bytes.length && bytes[i] === 0) i++;
      if (i >= bytes.length) break;
      const start = i;
      let end = i;
      let j = i;
      while (j < bytes.length) {
        if (bytes[j] !== 0) { end = ++j; continue; }
        let k = j;
        while (k < bytes.length && bytes[k] === 0) k++;
        if (k - j >= gap || k === bytes.length) break;
        j = k;
      }
      pieces.push({ address: m.address + start, bytes: bytes.subarray(start, end) });
      i = end;
    }
  }
  const total = passive + pieces.length;
  const body = concat([
    Uint8Array.from(encodeU32(total)),
    leading,
    ...pieces.map((m) => concat([Uint8Array.of(0x00, 0x41, ...encodeI32(m.address | 0), 0x0b, ...encodeU32(m.bytes.length)), m.bytes])),
  ]);
  const parts: Uint8Array[] = [mod.subarray(0, 8)];
  for (const s of sections(mod)) {
    if (s.id === DATA) parts.push(section(DATA, body));
    else if (s.id === DATA_COUNT) parts.push(section(DATA_COUNT, Uint8Array.from(encodeU32(total))));
    else parts.push(mod.subarray(s.start, s.end));
  }
  return { module: concat(parts), before: count, after: total };
}
