// console and the value formatting it uses: util.format's placeholders (%s %d %i %f %j %o %O %c %%) and the
// basics of util.inspect — quoting, Map/Set/typed arrays/Date/RegExp/boxed values, class names, errors with
// their stack and cause, getters, circular references (<ref *1> ... [Circular *1]), depth 2, and Node's
// line breaking at 80 columns with short array items grouped in columns. Promise states and proxies cannot
// be seen from JavaScript, so they print as `Promise { <unknown> }` and as their target.
import { host } from './internal.js';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const TYPED_ARRAYS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
const tagOf = (v) => Object.prototype.toString.call(v).slice(8, -1);

function quote(s) {
  const q = !s.includes("'") ? "'" : !s.includes('"') ? '"' : !s.includes('`') && !s.includes('${') ? '`' : "'";
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === q || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch === '\v') out += '\\v';
    else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) out += '\\x' + c.toString(16).toUpperCase().padStart(2, '0');
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\u' + c.toString(16); // a lone surrogate, as Node shows it
    else out += ch;
  }
  return q + out + q;
}

const keyText = (k) => (typeof k === 'symbol' ? `[${k.toString()}]` : IDENTIFIER.test(k) ? k : quote(k));

function functionBase(fn) {
  const src = Function.prototype.toString.call(fn);
  const name = fn.name ? String(fn.name) : '';
  if (/^class\b/.test(src)) {
    const sup = Object.getPrototypeOf(fn);
    return `[class ${name || '(anonymous)'}${sup && sup !== Function.prototype && sup.name ? ` extends ${sup.name}` : ''}]`;
  }
  const kind = tagOf(fn) === 'AsyncFunction' ? 'AsyncFunction' : tagOf(fn) === 'GeneratorFunction' ? 'GeneratorFunction' : tagOf(fn) === 'AsyncGeneratorFunction' ? 'AsyncGeneratorFunction' : 'Function';
  return `[${kind}${name ? `: ${name}` : ' (anonymous)'}]`;
}

function constructorName(v) {
  for (let p = v; p !== null; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, 'constructor');
    if (d && typeof d.value === 'function' && d.value.name) return d.value.name;
  }
  return null;
}

function errorText(e) {
  const head = `${e.name ?? 'Error'}: ${e.message ?? ''}`.replace(/: $/, '');
  const stack = typeof e.stack === 'string' ? e.stack.replace(/\n+$/, '') : '';
  if (!stack) return `[${head}]`;
  return stack.startsWith(head) ? stack : `${head}\n${stack}`;
}

function isBelowBreakLength(output, start, base) {
  let total = output.length + start;
  if (total + output.length > 80) return false;
  for (const o of output) { total += o.length; if (total > 80) return false; }
  return base === '' || !base.includes('\n');
}

// Short array items in columns, as Node prints [1, 2, ..., 30].
function groupArrayElements(output, indentation, outputLength) {
  let totalLength = 0, maxLength = 0;
  const separatorSpace = 2;
  const lengths = output.slice(0, outputLength).map((o) => o.length);
  for (const len of lengths) { totalLength += len + separatorSpace; if (len > maxLength) maxLength = len; }
  const actualMax = maxLength + separatorSpace;
  if (actualMax * 3 + indentation < 80 && (totalLength / actualMax > 5 || maxLength <= 6)) {
    const averageBias = Math.sqrt(actualMax - totalLength / outputLength);
    const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
    const columns = Math.min(Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax), Math.floor((80 - indentation) / actualMax), 4 * 3, 15);
    if (columns <= 1) return output;
    const maxLineLength = [];
    for (let i = 0; i < columns; i++) {
      let lineLength = 0;
      for (let j = i; j < outputLength; j += columns) if (lengths[j] > lineLength) lineLength = lengths[j];
      maxLineLength.push(lineLength + separatorSpace);
    }
    const numeric = output.slice(0, outputLength).every((o) => /^-?[\d.]+n?$|^(NaN|-?Infinity)$/.test(o));
    const grouped = [];
    for (let i = 0; i < outputLength; i += columns) {
      const max = Math.min(i + columns, outputLength);
      let line = '';
      let j = i;
      for (; j < max - 1; j++) {
        const padding = maxLineLength[j - i] + output[j].length - lengths[j];
        line += numeric ? `${output[j]}, `.padStart(padding, ' ') : `${output[j]}, `.padEnd(padding, ' ');
      }
      line += numeric ? output[j].padStart(maxLineLength[j - i] - separatorSpace, ' ') : output[j];
      grouped.push(line);
    }
    for (let i = outputLength; i < output.length; i++) grouped.push(output[i]);
    return grouped;
  }
  return output;
}

function inspect(value, options = {}) {
  const ctx = { depth: options.depth ?? 2, showHidden: !!options.showHidden, seen: [], circular: new Map(), indentationLvl: 0, currentDepth: 0 };
  return formatValue(ctx, value, 0, true);
}

function formatValue(ctx, v, recurseTimes, typedArrayTop) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'undefined': return 'undefined';
    case 'string': return quote(v);
    case 'number': return Object.is(v, -0) ? '-0' : String(v);
    case 'bigint': return `${v}n`;
    case 'boolean': return String(v);
    case 'symbol': return v.toString();
  }
  if (ctx.seen.includes(v)) {
    if (!ctx.circular.has(v)) ctx.circular.set(v, ctx.circular.size + 1);
    return `[Circular *${ctx.circular.get(v)}]`;
  }
  return formatRaw(ctx, v, recurseTimes);
}

function formatRaw(ctx, v, recurseTimes) {
  const tag = tagOf(v);
  const ctor = constructorName(v);
  const prefix = (fallback, size) => {
    const name = ctor ?? `[${fallback}: null prototype]`;
    return size === undefined ? name : `${name}(${size})`;
  };
  let keys = Object.keys(v);
  const symbols = Object.getOwnPropertySymbols(v).filter((s) => Object.getOwnPropertyDescriptor(v, s).enumerable);
  let braces, base = '', extras = 'object', entriesFn = null, noEntries = false;
  if (Array.isArray(v)) {
    keys = keys.filter((k) => !/^(0|[1-9]\d*)$/.test(k) || Number(k) >= v.length);
    braces = [ctor === 'Array' ? '[' : `${prefix('Array', v.length)} [`, ']'];
    extras = 'array';
    entriesFn = () => arrayEntries(ctx, v, recurseTimes);
    if (v.length === 0 && keys.length === 0 && symbols.length === 0) return `${braces[0]}]`;
  } else if (v instanceof Map) {
    braces = [`${prefix('Map', v.size)} {`, '}'];
    entriesFn = () => [...v].map(([k, x]) => `${formatValue(ctx, k, recurseTimes + 1)} => ${formatValue(ctx, x, recurseTimes + 1)}`);
    if (v.size === 0 && keys.length === 0) return `${braces[0]}}`;
  } else if (v instanceof Set) {
    braces = [`${prefix('Set', v.size)} {`, '}'];
    entriesFn = () => [...v].map((x) => formatValue(ctx, x, recurseTimes + 1));
    if (v.size === 0 && keys.length === 0) return `${braces[0]}}`;
  } else if (ArrayBuffer.isView(v) && TYPED_ARRAYS.includes(tag)) {
    keys = keys.filter((k) => !/^(0|[1-9]\d*)$/.test(k));
    braces = [`${prefix(tag, v.length)} [`, ']'];
    extras = 'array';
    entriesFn = () => {
      const out = [];
      const n = Math.min(v.length, 100);
      for (let i = 0; i < n; i++) out.push(typeof v[i] === 'bigint' ? `${v[i]}n` : Object.is(v[i], -0) ? '-0' : String(v[i]));
      if (v.length > n) out.push(`... ${v.length - n} more item${v.length - n > 1 ? 's' : ''}`);
      return out;
    };
    if (v.length === 0 && keys.length === 0) return `${braces[0]}]`;
  } else if (v instanceof ArrayBuffer) {
    const bytes = new Uint8Array(v);
    const hexBytes = Array.from(bytes.subarray(0, 50), (b) => b.toString(16).padStart(2, '0')).join(' ');
    braces = [`${prefix('ArrayBuffer')} {`, '}'];
    entriesFn = () => [`[Uint8Contents]: <${hexBytes}${bytes.length > 50 ? ` ... ${bytes.length - 50} more bytes` : ''}>`, `byteLength: ${v.byteLength}`];
  } else if (typeof v === 'function') {
    base = functionBase(v);
    keys = keys.filter((k) => k !== 'prototype');
    if (keys.length === 0 && symbols.length === 0) return base;
    braces = ['{', '}'];
  } else if (v instanceof RegExp) {
    base = RegExp.prototype.toString.call(v);
    if (keys.filter((k) => k !== 'lastIndex').length === 0 && symbols.length === 0) return base;
    keys = keys.filter((k) => k !== 'lastIndex');
    braces = ['{', '}'];
  } else if (v instanceof Date) {
    base = Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
    if (keys.length === 0 && symbols.length === 0) return base;
    braces = ['{', '}'];
  } else if (v instanceof Error) {
    base = errorText(v);
    keys = keys.filter((k) => k !== 'stack' && k !== 'message');
    const cause = Object.prototype.hasOwnProperty.call(v, 'cause') && !Object.getOwnPropertyDescriptor(v, 'cause').enumerable;
    if (keys.length === 0 && symbols.length === 0 && !cause) return base;
    braces = ['{', '}'];
    if (cause) entriesFn = () => [`[cause]: ${formatValue(ctx, v.cause, recurseTimes + 1)}`];
  } else if (['Number', 'String', 'Boolean', 'BigInt', 'Symbol'].includes(tag) && typeof v.valueOf === 'function') {
    const prim = Object.prototype.valueOf.call(v);
    const inner = tag === 'String' ? quote(String.prototype.valueOf.call(v)) : tag === 'BigInt' ? `${BigInt.prototype.valueOf.call(v)}n` : tag === 'Symbol' ? Symbol.prototype.toString.call(v) : String(prim.valueOf());
    base = `[${tag}: ${inner}]`;
    if (tag === 'String') keys = keys.filter((k) => !/^(0|[1-9]\d*)$/.test(k));
    if (keys.length === 0 && symbols.length === 0) return base;
    braces = ['{', '}'];
  } else if (v instanceof Promise) {
    braces = [`${prefix('Promise')} {`, '}'];
    entriesFn = () => ['<unknown>'];
  } else if (v instanceof WeakMap || v instanceof WeakSet) {
    return `${prefix(tag)} { <items unknown> }`;
  } else {
    const name = ctor === 'Object' ? '' : ctor === null ? '[Object: null prototype] ' : `${ctor} `;
    const custom = tag !== 'Object' && tag !== ctor ? `[${tag}] ` : '';
    braces = [`${name}${custom}{`, '}'];
    if (keys.length === 0 && symbols.length === 0) return `${name}${custom}{}`;
  }
  if (recurseTimes > ctx.depth) {
    return Array.isArray(v) ? '[Array]' : `[${ctor ?? 'Object'}]`;
  }
  ctx.seen.push(v);
  ctx.currentDepth = recurseTimes;
  const output = entriesFn ? entriesFn() : [];
  // array items grouped in columns: not a "... n more items" line, nor the properties after them
  const items = extras === 'array' ? output.length - (output.length && /^\.\.\. \d+ more items?$/.test(output[output.length - 1]) ? 1 : 0) : 0;
  for (const k of [...keys, ...symbols]) output.push(propertyText(ctx, v, k, recurseTimes, extras));
  if (ctx.showHidden && Array.isArray(v)) output.push(`[length]: ${v.length}`);
  ctx.seen.pop();
  let res = reduceToSingleString(ctx, output, base, braces, extras, recurseTimes, items);
  const ref = ctx.circular.get(v);
  if (ref !== undefined) res = `<ref *${ref}> ${res}`;
  return res;
}

function arrayEntries(ctx, v, recurseTimes) {
  const out = [];
  const n = Math.min(v.length, 100);
  let holes = 0;
  const flushHoles = () => { if (holes) { out.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`); holes = 0; } };
  for (let i = 0; i < n; i++) {
    if (!Object.prototype.hasOwnProperty.call(v, i)) { holes++; continue; }
    flushHoles();
    out.push(formatValue(ctx, v[i], recurseTimes + 1));
  }
  flushHoles();
  if (v.length > n) out.push(`... ${v.length - n} more item${v.length - n > 1 ? 's' : ''}`);
  return out;
}

function propertyText(ctx, v, key, recurseTimes, extras) {
  const d = Object.getOwnPropertyDescriptor(v, key);
  let text;
  if (d.get || d.set) text = d.get && d.set ? '[Getter/Setter]' : d.get ? '[Getter]' : '[Setter]';
  else {
    ctx.indentationLvl += 2;
    text = formatValue(ctx, d.value, recurseTimes + 1);
    ctx.indentationLvl -= 2;
  }
  return `${keyText(key)}: ${text}`;
}

function reduceToSingleString(ctx, output, base, braces, extras, recurseTimes, arrayItems) {
  let entries = output.length;
  if (extras === 'array' && arrayItems > 6) output = groupArrayElements(output, ctx.indentationLvl, arrayItems);
  if (ctx.currentDepth - recurseTimes < 3 && entries === output.length) {
    const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
    if (isBelowBreakLength(output, start, base)) {
      const joined = output.join(', ');
      if (!joined.includes('\n')) return `${base ? `${base} ` : ''}${braces[0]} ${joined} ${braces[1]}`;
    }
  }
  const indentation = `\n${' '.repeat(ctx.indentationLvl)}`;
  return `${base ? `${base} ` : ''}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
}

/** util.format: printf-like placeholders in a first string argument, then the rest separated by spaces. */
function format(...args) {
  const show = (x) => (typeof x === 'string' ? x : inspect(x));
  if (typeof args[0] !== 'string') return args.map(show).join(' ');
  const first = args[0];
  if (args.length === 1) return first;
  let a = 1, out = '', last = 0;
  for (let i = first.indexOf('%'); i >= 0 && i < first.length - 1; i = first.indexOf('%', i + 1)) {
    const c = first[i + 1];
    let text;
    if (c === '%') { out += first.slice(last, i) + '%'; last = i + 2; i++; continue; }
    if (a >= args.length) continue;
    const x = args[a];
    switch (c) {
      case 's': text = typeof x === 'string' ? x : typeof x === 'bigint' ? `${x}n` : typeof x === 'symbol' ? x.toString() : typeof x === 'object' && x !== null ? inspect(x, { depth: 0 }) : String(x); break;
      case 'd': text = typeof x === 'bigint' ? `${x}n` : typeof x === 'symbol' ? 'NaN' : formatNumber(Number(x)); break;
      case 'i': text = typeof x === 'bigint' ? `${x}n` : typeof x === 'symbol' ? 'NaN' : formatNumber(parseInt(x)); break;
      case 'f': text = typeof x === 'symbol' ? 'NaN' : formatNumber(parseFloat(x)); break;
      case 'j': try { text = JSON.stringify(x); } catch { text = '[Circular]'; } break;
      case 'o': text = inspect(x, { depth: 4, showHidden: true }); break;
      case 'O': text = inspect(x); break;
      case 'c': text = ''; break;
      default: continue;
    }
    out += first.slice(last, i) + text;
    last = i + 2;
    i++;
    a++;
  }
  out += first.slice(last);
  for (; a < args.length; a++) out += ' ' + show(args[a]);
  return out;
}
const formatNumber = (n) => (Object.is(n, -0) ? '-0' : String(n));

const LEVEL = { debug: 0, log: 1, info: 1, warn: 2, error: 3, trace: 0 };
/** The guest's console: every line goes to the host's log (runtime.log), never to the protocol. */
function makeConsole() {
  const console = {};
  for (const [name, level] of Object.entries(LEVEL)) console[name] = (...args) => host.native.log(level, format(...args));
  const counts = new Map(), timers = new Map();
  console.assert = (ok, ...args) => { if (!ok) host.native.log(3, args.length ? `Assertion failed: ${format(...args)}` : 'Assertion failed'); };
  console.dir = (v, opts) => host.native.log(1, inspect(v, opts));
  console.table = (v) => host.native.log(1, inspect(v));
  console.count = (label = 'default') => { const n = (counts.get(label) ?? 0) + 1; counts.set(label, n); host.native.log(1, `${label}: ${n}`); };
  console.countReset = (label = 'default') => { counts.delete(label); };
  console.time = (label = 'default') => { timers.set(label, performance.now()); };
  console.timeLog = (label = 'default', ...args) => { const t = timers.get(label); if (t !== undefined) host.native.log(1, `${label}: ${(performance.now() - t).toFixed(3)}ms${args.length ? ' ' + format(...args) : ''}`); };
  console.timeEnd = (label = 'default') => { console.timeLog(label); timers.delete(label); };
  console.group = console.groupCollapsed = console.groupEnd = () => {};
  return console;
}

export { inspect, format, makeConsole };
