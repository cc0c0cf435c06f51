// The BDD runtime inside the guest (kiln bdd): the registration surface step files use (Given/When/Then, hooks,
// parameter types, World), step matching with @cucumber/cucumber-expressions, and running one step or hook per
// host call. It is bundled into the bdd image ahead of the step files (host/bdd/image.ts), so it is guest code:
// untrusted like the rest, and the host checks every capability a step uses against the manifest of the file
// the step comes from (the internal tools `kiln.bdd.<file>` below, whose manifests the host makes itself).
//
// Matching runs here, not on the host: a step definition's regular expression is the author's code, and here
// it runs under the engine's deadline instead of on the server's thread.
import {
  CucumberExpression, CucumberExpressionGenerator, ParameterType, ParameterTypeRegistry, RegularExpression,
} from '@cucumber/cucumber-expressions';
import parseTagExpression from '@cucumber/tag-expressions';

const parameterTypes = new ParameterTypeRegistry();
const steps = []; // { id, keyword, expression, fn, timeout, file, stack, source, type }
const hooks = []; // { id, kind, tags, matches, fn, timeout, name, file, stack }
const customTypes = []; // { id, name, regexps, stack, ... } for the messages
let defaultTimeout = 5000;
let World = null; // setWorldConstructor
let wrapper = null; // setDefinitionFunctionWrapper
let file = 0; // the index of the file whose top level is running (set by the entry: host/bdd/image.ts)
let world = null; // this scenario's World
let ctx = null; // the running call's handler context: page, context, request for the World's fixtures
let attachments = [];
const SKIP = Symbol('kiln.bdd.skip');

const here = () => String(new Error().stack ?? '');
const toError = (what) => new TypeError(`${what}`);

function stepOptions(args, kind) {
  // (pattern, fn) or (pattern, options, fn)
  const [pattern, b, c] = args;
  const fn = typeof b === 'function' ? b : c;
  const options = typeof b === 'object' && b !== null ? b : {};
  if (typeof pattern !== 'string' && !(pattern instanceof RegExp)) throw toError(`${kind}: the pattern must be a string (a Cucumber expression) or a RegExp`);
  if (typeof fn !== 'function') throw toError(`${kind}(${JSON.stringify(String(pattern))}): the step needs a function`);
  if (options.timeout !== undefined && options.timeout !== -1 && !(Number.isFinite(options.timeout) && options.timeout > 0)) throw toError(`${kind}: timeout must be a positive number of milliseconds, or -1 for none`);
  return { pattern, fn, options };
}

function defineStep(keyword) {
  return (...args) => {
    const { pattern, fn, options } = stepOptions(args, keyword);
    const expression = typeof pattern === 'string' ? new CucumberExpression(pattern, parameterTypes) : new RegularExpression(pattern, parameterTypes);
    steps.push({
      id: `s${steps.length}`, keyword, expression, fn, timeout: options.timeout, file, stack: here(),
      source: typeof pattern === 'string' ? pattern : pattern.source,
      type: typeof pattern === 'string' ? 'CUCUMBER_EXPRESSION' : 'REGULAR_EXPRESSION',
    });
  };
}

function defineHook(kind) {
  return (...args) => {
    // (fn), (tags, fn), (options, fn); options: { tags, name, timeout }
    const fn = args.find((a) => typeof a === 'function');
    if (typeof fn !== 'function') throw toError(`${kind}: the hook needs a function`);
    const first = args[0];
    const options = typeof first === 'string' ? { tags: first } : typeof first === 'object' && first !== null ? first : {};
    if (options.tags !== undefined && typeof options.tags !== 'string') throw toError(`${kind}: tags must be a tag expression string such as "@a and not @b"`);
    if (options.tags !== undefined && kind.endsWith('All')) throw toError(`${kind} hooks take no tags: they run once, not per scenario`);
    const tags = options.tags;
    if (options.timeout !== undefined && options.timeout !== -1 && !(Number.isFinite(options.timeout) && options.timeout > 0)) throw toError(`${kind}: timeout must be a positive number of milliseconds, or -1 for none`);
    const matches = tags ? parseTagExpression(tags) : undefined;
    hooks.push({ id: `h${hooks.length}`, kind, tags, matches, fn, timeout: options.timeout, name: options.name, file, stack: here() });
  };
}

function defineParameterType({ name, regexp, transformer, useForSnippets, preferForRegexpMatch } = {}) {
  if (typeof name !== 'string' || !name) throw toError('defineParameterType: name must be a non-empty string');
  const regexps = Array.isArray(regexp) ? regexp : [regexp];
  if (!regexps.every((r) => typeof r === 'string' || r instanceof RegExp)) throw toError(`defineParameterType "${name}": regexp must be a string, a RegExp, or a list of them`);
  const t = typeof transformer === 'function' ? transformer : (s) => s;
  // The transformer runs with the World as `this`, like cucumber-js.
  parameterTypes.defineParameterType(new ParameterType(name, regexps, null, function (...m) { return t.apply(world, m); }, useForSnippets !== false, preferForRegexpMatch === true));
  customTypes.push({ id: `p${customTypes.length}`, name, regexps: regexps.map((r) => (typeof r === 'string' ? r : r.source)), preferForRegularExpressionMatch: preferForRegexpMatch === true, useForSnippets: useForSnippets !== false, stack: here() });
}

// ---- DataTable, as cucumber-js shapes it ------------------------------------------------------------------
class DataTable {
  #raw;
  constructor(rows) { this.#raw = rows.map((r) => r.slice()); }
  raw() { return this.#raw.map((r) => r.slice()); }
  rows() { return this.#raw.slice(1).map((r) => r.slice()); }
  hashes() {
    const [head, ...body] = this.#raw;
    return body.map((r) => Object.fromEntries(head.map((k, i) => [k, r[i]])));
  }
  rowsHash() {
    return Object.fromEntries(this.#raw.map((r) => {
      if (r.length !== 2) throw new Error('rowsHash can only be called on a data table where all rows have exactly two columns');
      return [r[0], r[1]];
    }));
  }
  transpose() { return new DataTable(this.#raw[0] ? this.#raw[0].map((_, i) => this.#raw.map((r) => r[i])) : []); }
}

// ---- the World --------------------------------------------------------------------------------------------
function attach(data, mediaTypeOrOptions) {
  const mediaType = typeof mediaTypeOrOptions === 'string' ? mediaTypeOrOptions : mediaTypeOrOptions?.mediaType ?? (typeof data === 'string' ? 'text/plain' : 'application/octet-stream');
  const fileName = typeof mediaTypeOrOptions === 'object' ? mediaTypeOrOptions?.fileName : undefined;
  // "base64:image/png": data is already base64 (cucumber-js's convention).
  if (typeof data === 'string' && mediaType.startsWith('base64:')) attachments.push({ body: data, mediaType: mediaType.slice(7), contentEncoding: 'BASE64', fileName });
  else if (typeof data === 'string') attachments.push({ body: data, mediaType, contentEncoding: 'IDENTITY', fileName });
  else if (data instanceof Uint8Array || data instanceof ArrayBuffer) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    attachments.push({ body: btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join('')), mediaType, contentEncoding: 'BASE64', fileName });
  } else if (data !== undefined) attachments.push({ body: JSON.stringify(data), mediaType: typeof mediaTypeOrOptions === 'string' ? mediaTypeOrOptions : 'application/json', contentEncoding: 'IDENTITY', fileName });
}
const log = (text) => attachments.push({ body: String(text), mediaType: 'text/x.cucumber.log+plain', contentEncoding: 'IDENTITY' });
function skip() { throw SKIP; }

class DefaultWorld {
  constructor({ parameters, attach: a, log: l }) {
    this.parameters = parameters;
    this.attach = a;
    this.log = l;
  }
}

/** The fixtures on every World, custom or not: they follow the running step's call. */
function fixtures(w, parameters) {
  const define = (k, get) => { if (!Object.hasOwn(w, k)) Object.defineProperty(w, k, { get, configurable: true, enumerable: false }); };
  define('page', () => ctx?.page);
  define('context', () => ctx?.context);
  define('request', () => ctx?.request);
  define('signal', () => ctx?.signal);
  if (!Object.hasOwn(w, 'parameters')) w.parameters = parameters;
  if (typeof w.attach !== 'function') w.attach = attach;
  if (typeof w.log !== 'function') w.log = log;
  w.skip = skip;
  return w;
}

// ---- running one step or hook -----------------------------------------------------------------------------
const errorOf = (e) => (e instanceof Error ? { message: `${e.name}: ${e.message}`, stack: String(e.stack ?? '') } : { message: `Error: ${typeof e === 'string' ? e : JSON.stringify(e) ?? String(e)}`, stack: '' });

async function runFn(fn, self, args) {
  attachments = [];
  const started = Date.now();
  let status = 'PASSED';
  let error;
  try {
    const wrapped = wrapper ? wrapper(fn) ?? fn : fn;
    // A step declared with one more parameter than it is given takes a callback, as in cucumber-js:
    // done() passes, done(error) fails, done(null, 'pending') is pending.
    const value = fn.length === args.length + 1
      ? await new Promise((resolve, reject) => {
        const r = wrapped.apply(self, [...args, (err, result) => (err ? reject(err) : resolve(result))]);
        if (r && typeof r.then === 'function') reject(new Error('a step that takes a callback must not return a promise (cucumber-js refuses it too)'));
      })
      : await wrapped.apply(self, args);
    if (value === 'pending') status = 'PENDING';
    else if (value === 'skipped') status = 'SKIPPED';
  } catch (e) {
    if (e === SKIP) status = 'SKIPPED';
    else {
      status = 'FAILED';
      error = errorOf(e);
    }
  }
  return { status, error, attachments, durationMs: Date.now() - started };
}

function argumentOf(step) {
  if (step.argument?.dataTable) return new DataTable(step.argument.dataTable.rows.map((r) => r.cells.map((c) => c.value)));
  if (step.argument?.docString) return step.argument.docString.content;
  return undefined;
}

function matchesOf(text) {
  const out = [];
  for (const s of steps) {
    const args = s.expression.match(text);
    if (args) out.push({ s, args });
  }
  return out;
}

const group = (g) => ({ start: g.start, value: g.value, children: (g.children ?? []).map(group) });

const SNIPPET_KEYWORD = { Context: 'Given', Action: 'When', Outcome: 'Then' };

function snippet(text, keywordType, argument) {
  const generated = new CucumberExpressionGenerator(() => parameterTypes.parameterTypes).generateExpressions(text)[0];
  const names = generated.parameterNames.slice();
  if (argument?.dataTable) names.push('dataTable');
  if (argument?.docString) names.push('docString');
  const fn = SNIPPET_KEYWORD[keywordType] ?? 'Given';
  const source = generated.source.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  return `${fn}('${source}', function (${names.join(', ')}) {\n  // Write code here that turns the phrase above into concrete actions\n  return 'pending';\n});`;
}

const ops = {
  /** What the files registered, for the host's messages and matching. */
  setup: () => ({
    steps: steps.map((s) => ({ id: s.id, source: s.source, type: s.type, file: s.file, stack: s.stack, timeout: s.timeout ?? defaultTimeout })),
    hooks: hooks.map((h) => ({ id: h.id, kind: h.kind, tags: h.tags, name: h.name, file: h.file, stack: h.stack, timeout: h.timeout ?? defaultTimeout })),
    parameterTypes: customTypes,
    defaultTimeout,
  }),
  /** Which step definitions match each text (with their arguments), and a snippet for those none matches. */
  match: ({ steps: texts }) => texts.map(({ text, type, argument }) => {
    const found = matchesOf(text);
    return found.length === 0
      ? { ids: [], snippet: snippet(text, type, argument) }
      : { ids: found.map((m) => m.s.id), args: found.map((m) => m.args.map((a) => ({ group: group(a.group), parameterTypeName: a.parameterType.name }))) };
  }),
  /** Which scenario hooks apply to a pickle with these tags. */
  hooksFor: ({ tags }) => hooks.filter((h) => !h.matches || h.matches.evaluate(tags)).map((h) => h.id),
  begin: ({ parameters }) => {
    const Ctor = World ?? DefaultWorld;
    try {
      world = fixtures(new Ctor({ parameters, attach, log }), parameters);
      return null;
    } catch (e) {
      world = null;
      return { error: errorOf(e) };
    }
  },
  end: () => {
    world = null;
    return null;
  },
  step: async ({ id, text, argument }) => {
    const s = steps.find((x) => x.id === id);
    if (!s) throw new Error(`no step definition ${id}`);
    const args = s.expression.match(text);
    if (!args) throw new Error(`step definition ${id} no longer matches "${text}"`);
    const values = args.map((a) => a.getValue(world));
    const resolved = await Promise.all(values);
    const extra = argumentOf({ argument });
    return runFn(s.fn, world, extra === undefined ? resolved : [...resolved, extra]);
  },
  hook: async ({ id, pickle, result, testCaseStartedId, willBeRetried }) => {
    const h = hooks.find((x) => x.id === id);
    if (!h) throw new Error(`no hook ${id}`);
    if (h.kind === 'BeforeAll' || h.kind === 'AfterAll') return runFn(h.fn, {}, []);
    const arg = { pickle, gherkinDocument: undefined, testCaseStartedId, ...(result ? { result, willBeRetried } : {}) };
    return runFn(h.fn, world, [arg]);
  },
};

async function handle(c) {
  ctx = c;
  try {
    const f = ops[c.args?.op];
    if (!f) throw new Error(`unknown bdd op ${c.args?.op}`);
    return await f(c.args);
  } finally {
    ctx = null;
  }
}

const cucumber = {
  Given: defineStep('Given'), When: defineStep('When'), Then: defineStep('Then'), defineStep: defineStep('defineStep'),
  And: defineStep('And'), But: defineStep('But'),
  Before: defineHook('Before'), After: defineHook('After'), BeforeAll: defineHook('BeforeAll'), AfterAll: defineHook('AfterAll'),
  BeforeStep: defineHook('BeforeStep'), AfterStep: defineHook('AfterStep'),
  defineParameterType,
  setDefaultTimeout: (ms) => {
    if (!(Number.isFinite(ms) && ms > 0)) throw toError('setDefaultTimeout: a positive number of milliseconds');
    defaultTimeout = ms;
  },
  setWorldConstructor: (C) => {
    if (typeof C !== 'function') throw toError('setWorldConstructor: a class or constructor function');
    World = C;
  },
  setDefinitionFunctionWrapper: (w) => {
    if (typeof w !== 'function') throw toError('setDefinitionFunctionWrapper: a function');
    wrapper = w;
  },
  setParallelCanAssign: () => {}, // accepted, inert: kiln distributes whole scenarios across workers
  DataTable,
  World: DefaultWorld,
};
for (const [k, v] of Object.entries(cucumber)) Object.defineProperty(globalThis, k, { value: v, writable: true, configurable: true, enumerable: false });

// The entry (host/bdd/image.ts) tells which file's top level runs next, and, last, the internal tools: one per
// file, each with the manifest the host made for that file.
Object.defineProperty(globalThis, '__kilnBdd', {
  value: Object.freeze({
    file: (i) => { file = i; },
    tools: (allows) => allows.forEach((allow, i) => defineTool({ name: `kiln.bdd.${i}`, allow, handler: handle })),
    cucumber,
  }),
  configurable: true,
});
