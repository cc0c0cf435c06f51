// kiln's edits to the host bindings jco generates for the engine (build/engine/bindings/engine.cjs), as data:
// LEAN_BINDINGS, the per-call path made lean, then COMMONJS_BINDINGS, the module made CommonJS. Each is a list
// of steps applied in order by scripts/build-engine.mjs: an edit replaces `from` (a string, or a regexp) by `to`
// and must match exactly `count` times; a function step is an edit that needs a scan, and checks its own
// count. jco is pinned, so a new jco fails the build at the step that no longer fits, never at run time. The
// engine's bytes depend on this file (it is one of build-engine.mjs's inputs).

/** An edit: `from` replaced by `to`, matched exactly `count` times. */
const edit = (from, to, count) => ({ from, to, count });

/** The _debugLog(...) statements removed: their arguments are object literals, so a balanced scan finds each
 *  end. */
function withoutDebugLogs(js) {
  let out = '', at = 0, removed = 0;
  for (let i = js.indexOf('_debugLog('); i >= 0; i = js.indexOf('_debugLog(', at)) {
    let depth = 0, j = i + '_debugLog'.length;
    for (; j < js.length; j++) {
      const c = js[j];
      if (c === '(' || c === '{' || c === '[') depth++;
      else if (c === ')' || c === '}' || c === ']') { if (--depth === 0) break; }
      else if (c === "'" || c === '"') { const q = c; for (j++; js[j] !== q; j++) if (js[j] === '\\') j++; }
    }
    if (js[j + 1] !== ';') throw new Error(`bindings: a _debugLog call that is not a statement at ${i}`);
    out += js.slice(at, i);
    at = j + 2;
    removed++;
  }
  js = out + js.slice(at);
  // 206 since WIT 0.7.0: 179 before 0.6.0, and three per import of the `fs` interface and `runtime.clear-timer`.
  if (removed !== 206) throw new Error(`bindings: removed ${removed} _debugLog statements, expected 206`);
  return js;
}

/** kiln's own imports straight to their trampolines. jco hands the main module a shim for every import that
 *  lowers through its memory (the shim's table is filled once memory exists), so each call went wasm -> shim ->
 *  call_indirect -> JS; the trampolines read memory0 and realloc0 only when called, which is always after
 *  instantiation, so the main module can import them directly. The WASI adapter's imports keep their shims. */
function directKilnImports(js) {
  const fixup = /instantiateCore\(yield module3, \{\n    '': \{\n      \$imports: exports0\.\$imports,\n((?:      '\d+': [\w.$]+,\n)+)/.exec(js);
  if (!fixup) throw new Error('bindings: the shim table fix-up was not found');
  const target = new Map([...fixup[1].matchAll(/'(\d+)': ([\w.$]+),/g)].map((m) => [m[1], m[2]]));
  const start = js.indexOf('instantiateCore(yield module0, {');
  const end = js.indexOf('    wasi_snapshot_preview1: {', start);
  if (start < 0 || end < 0) throw new Error('bindings: the main module\'s imports were not found');
  let direct = 0;
  const kilnImports = js.slice(start, end).replace(/exports0\['(\d+)'\]/g, (m, n) => {
    const t = target.get(n);
    if (!t || !/^trampoline\d+$/.test(t)) throw new Error(`bindings: kiln import shim ${n} is not a trampoline (${t})`);
    direct++;
    return t;
  });
  // 28 kiln imports go through a shim since WIT 0.6.0.
  if (direct !== 28) throw new Error(`bindings: ${direct} kiln imports lowered through shims, expected 28`);
  js = js.slice(0, start) + kilnImports + js.slice(end);
  return js;
}

/**
 * The per-call path of jco's generated bindings, made lean. Every import and export wrapper opened and
 * closed an async-task record (startCurrentTask/endCurrentTask: a Map lookup, an object, two array pushes)
 * and built debug-log argument objects that a `process.env.JCO_DEBUG` lookup then threw away; our world is
 * synchronous, so neither does anything for us. utf8Encode encoded every string into a fresh buffer and
 * copied it; now a short ASCII string (a tool name, a small argument, a vars value) is written into guest
 * memory by a loop, and any other up to 4096 characters with encodeInto (TextEncoder.encode of a short string
 * costs several hundred nanoseconds; a cache of encodings missed on every fresh string, such as most vars
 * values, once full).
 */
export const LEAN_BINDINGS = [
  // Not a speed edit: a string the guest hands the host keeps a leading U+FEFF. jco's decoder is a default
  // TextDecoder, which drops a byte order mark at the start of every text it decodes: vars.set('\uFEFFabc')
  // and vars.set('abc') were one key, and a log line or URL lost its first character (wasmtime keeps it).
  edit('const utf8Decoder = new TextDecoder();', "const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });", 1),
  // One task record per import and export wrapper: 60 since WIT 0.7.0 (51 before 0.6.0, plus the eight imports
  // of the `fs` interface, plus `runtime.clear-timer`).
  edit(/\n *const _(?:interface|wasm)_call_currentTaskID = startCurrentTask\([^)]*\);/g, '', 60),
  edit(/\n *endCurrentTask\(0\);/g, '', 60),
  withoutDebugLogs,
  edit(`    let buf = utf8Encoder.encode(s);
    let ptr = realloc(0, 0, 1, buf.length);
    new Uint8Array(memory.buffer).set(buf, ptr);
    utf8EncodedLen = buf.length;
    return ptr;`, `    const n = s.length;
    if (n <= 64) {
      let i = 0;
      while (i < n && s.charCodeAt(i) < 0x80) i++;
      if (i === n) {
        const ptr = realloc(0, 0, 1, n);
        const out = new Uint8Array(memory.buffer, ptr, n);
        for (let j = 0; j < n; j++) out[j] = s.charCodeAt(j);
        utf8EncodedLen = n;
        return ptr;
      }
    }
    if (s.length <= 4096) {
      const ptr = realloc(0, 0, 1, s.length * 3);
      utf8EncodedLen = utf8Encoder.encodeInto(s, new Uint8Array(memory.buffer, ptr, s.length * 3)).written;
      return ptr;
    }
    let buf = utf8Encoder.encode(s);
    let ptr = realloc(0, 0, 1, buf.length);
    new Uint8Array(memory.buffer).set(buf, ptr);
    utf8EncodedLen = buf.length;
    return ptr;`, 1),
  // Strings the guest hands the host (a vars key, a log line, a handler's JSON result) are mostly short ASCII:
  // read byte by byte from a view kept until memory grows, not through TextDecoder, whose call costs more
  // than the loop for up to 32 bytes (~100 against ~65 ns here). Anything else, a byte from 0x80 up included,
  // goes to the same decoder as before, so the text is the same.
  edit(`  const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });
`, `  const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let u8 = new Uint8Array(0);
  function utf8Decode(mem, ptr, len) {
    const bytes = u8.buffer === mem.buffer ? u8 : (u8 = new Uint8Array(mem.buffer));
    const end = ptr + len;
    if (len <= 32 && ptr >= 0 && len >= 0 && end <= bytes.length) {
      let s = '';
      let i = ptr;
      for (; i < end; i++) {
        const c = bytes[i];
        if (c >= 0x80) break;
        s += String.fromCharCode(c);
      }
      if (i === end) return s;
    }
    // (out of bounds, this throws the RangeError it always did)
    return utf8Decoder.decode(new Uint8Array(mem.buffer, ptr, len));
  }
`, 1),
  edit(/utf8Decoder\.decode\(new Uint8Array\(memory0\.buffer, (ptr\d+), (len\d+)\)\)/g, 'utf8Decode(memory0, $1, $2)', 33),
  // vars.get, the one synchronous import a guest calls in loops: its option<string> result is written with one
  // DataView after the string is lowered, not three (each looked up the memory's buffer twice).
  edit(`      dataView(memory0).setInt8(arg2 + 0, 1, true);
      var ptr1 = utf8Encode(e, realloc0, memory0);
      var len1 = utf8EncodedLen;
      dataView(memory0).setUint32(arg2 + 8, len1, true);
      dataView(memory0).setUint32(arg2 + 4, ptr1, true);`, `      var ptr1 = utf8Encode(e, realloc0, memory0);
      var len1 = utf8EncodedLen;
      const view = dataView(memory0);
      view.setInt8(arg2 + 0, 1, true);
      view.setUint32(arg2 + 8, len1, true);
      view.setUint32(arg2 + 4, ptr1, true);`, 1),
  directKilnImports,
];

/**
 * The bindings as a CommonJS module (bindings/engine.cjs): Node loads it with `require`, which costs ~2 ms,
 * where the first `import()` of an ES module in a process starts Node's ES module loader (~7-10 ms on this
 * machine): a cost of every `kiln` command and of every session worker. jco's module has one export and no
 * imports; its one `import.meta.url` is a default for a `getCoreModule` kiln always passes.
 */
export const COMMONJS_BINDINGS = [
  (js) => {
    if (/^\s*(import|export)\b/m.test(js.replace(/^export function instantiate\(/m, ''))) {
      throw new Error('bindings (CommonJS): jco emitted an import or export besides `export function instantiate`');
    }
    return js;
  },
  edit('export function instantiate(', 'function instantiate(', 1),
  edit('import.meta.url', "require('node:url').pathToFileURL(__filename)", 1),
  (js) => `'use strict';\n${js}\nmodule.exports = { instantiate };\n`,
];
