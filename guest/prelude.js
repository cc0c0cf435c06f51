// The kiln prelude: the JavaScript API an extension sees inside the guest.
//
// This script evaluates to a factory. The engine calls it once, in its snapshot, with the native bridge
// (guest/glue.c); at load it calls configure(config) on what the factory returned, before the extension's
// module runs. Nothing the factory does may depend on the instance: that is configure's. The natives stay in this
// closure; nothing of the bridge is placed on globalThis. Nothing here is trusted by the host: every
// capability call is checked on the host side of the WIT boundary.
(function kilnPrelude(native) {
  'use strict';
  const config = {}; // filled by configure() at load
  const tools = new Map(); // name -> { manifest, handler }
  const steps = []; // BDD registrations, recorded for the bdd host
  const pending = new Map(); // op id -> { inv, resolve, reject }
  let current = 0; // the invocation whose code is running now (0: top level)

  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

  // ---- host operations -------------------------------------------------------------------------
  // fn(inv, requestJson) calls a native that starts a host operation and returns its op id. The op's
  // outcome arrives through complete (JSON) or completeBytes (an ArrayBuffer).
  // The stack of the first op the top level started (inv 0): if the module is still awaiting when its jobs
  // have run, the build's error names where (topLevelWait).
  let topLevelOp;
  function startOp(fn, inv, request) {
    if (inv === 0 && topLevelOp === undefined) topLevelOp = String(new Error().stack ?? '');
    const op = fn(inv, JSON.stringify(request === undefined ? null : request));
    if (op === 0) return { op, done: Promise.reject(tooManyOps()) };
    const done = new Promise((resolve, reject) => pending.set(op, { inv, resolve, reject }));
    return { op, done };
  }
  const hostCall = (fn, inv, request) => startOp(fn, inv, request).done;
  // Op 0: the host refused the operation, and keeps nothing for it: the guest fails the call itself.
  function tooManyOps() {
    const e = new Error('a guest may have at most 1024 operations in flight; await some first');
    e.name = 'KilnError';
    return e;
  }

  // "Name: message" from the host, optionally followed by "\n    at ..." frames (a failed plugins[] callee's
  // own stack, already mapped to its sources): those frames become the error's stack.
  // '{"name", "message", "fields"}': an error with fields of its own (CommandError's exitCode, signal, stdout,
  // stderr), each copied only if it is a string, a number or null.
  // fs errors carry Node's code, errno, syscall, path (as the guest gave it) and dest.
  const ERROR_FIELDS = ['exitCode', 'signal', 'stdout', 'stderr', 'code', 'errno', 'syscall', 'path', 'dest'];
  const ERROR_TYPES = { TypeError, RangeError };
  function hostError(text) {
    if (text.startsWith('{')) {
      try {
        const { name, message, fields } = JSON.parse(text);
        const e = new (Object.hasOwn(ERROR_TYPES, name) ? ERROR_TYPES[name] : Error)(String(message));
        e.name = String(name);
        for (const k of ERROR_FIELDS) {
          const v = fields && fields[k];
          if (v === null || typeof v === 'string' || typeof v === 'number') e[k] = v;
        }
        return e;
      } catch {
        // not ours: read it as "Name: message" below
      }
    }
    const nl = text.indexOf('\n    at ');
    const head = nl < 0 ? text : text.slice(0, nl);
    let name = 'Error', message = head;
    const m = /^([A-Za-z_$][\w$]*): ([\s\S]*)$/.exec(head); // a class's own name too (NotFound), as Node keeps it
    if (m) { name = m[1]; message = m[2]; }
    const e = new Error(message);
    if (name !== 'Error') e.name = name;
    if (nl >= 0) e.stack = text.slice(nl + 1) + '\n';
    return e;
  }

  // Cancellation (guest.cancel): each running invocation's AbortController, made on first use of ctx.signal, and
  // the reasons of invocations cancelled while running. Both forget an invocation when it finishes.
  const live = new Set(); // invocations started and not finished
  const cancels = new Map(); // inv -> AbortController
  const cancelled = new Map(); // inv -> reason
  const finish = (inv, ok, text) => {
    live.delete(inv);
    // Nearly every call made no signal and was not cancelled: two size checks instead of two deletes.
    if (cancels.size !== 0) cancels.delete(inv);
    if (cancelled.size !== 0) cancelled.delete(inv);
    if (live.size === 0 && pending.size !== 0) forgetIdleWork();
    native.finish(inv, ok, text);
  };
  // With no call in flight the host drops every timer and op this guest started (when the last call ends, and
  // when the top level has run): so does the guest, or what it waited for would stay in `pending` for the
  // session's life, and a wake-up the host dropped would keep its timers from asking for another. (A guest
  // with timers waiting has a wake-up pending: with nothing pending there is nothing to forget, and a call
  // costs two size checks.)
  function forgetIdleWork() {
    if (pending.size !== 0) pending.clear();
    web.timersIdle();
  }

  // ---- the web platform (guest/web/): fetch, URL, streams, console, crypto, process, ... ---------------
  const web = kilnInstallWeb(native, {
    define, startOp, current: () => current, setCurrent: (inv) => { current = inv; }, pending, uncaught: (e) => uncaught(e),
  });
  const abortError = (reason) => new web.DOMException(String(reason), 'AbortError');
  const show = (v) => (typeof v === 'string' ? v : web.inspect(v));
  define('console', web.makeConsole());

  // ---- timers (guest/web/timers.js) and microtasks --------------------------------------------------
  // An exception thrown by a timer's callback (or a browser event listener) is logged as uncaught, with its
  // stack, and the call goes on.
  const uncaught = (e) => {
    const text = e instanceof Error ? `${e.name}: ${e.message}${e.stack ? `\n${e.stack}` : ''}` : show(e);
    native.log(3, `Uncaught ${text}`);
  };
  define('queueMicrotask', (fn) => {
    if (typeof fn !== 'function') throw new TypeError('queueMicrotask: the callback must be a function');
    Promise.resolve().then(fn);
  });

  // ---- vars: the session's string store ----------------------------------------------------------
  const str = (v, what) => {
    if (typeof v !== 'string') throw new TypeError(`vars ${what} must be a string`);
    return v;
  };
  define('vars', Object.freeze({
    // get is the native itself, which checks its key (guest/glue.c): the one synchronous host call, often
    // made in a loop.
    get: native.varsGet,
    set: (k, v) => { native.varsSet(str(k, 'key'), str(v, 'value')); },
    has: (k) => native.varsGet(str(k, 'key')) !== undefined,
    delete: (k) => native.varsDelete(str(k, 'key')),
    keys: () => native.varsKeys(),
  }));


  // ---- defineTool and plugins --------------------------------------------------------------------
  function fail(msg) { throw new TypeError(`defineTool: ${msg}`); }
  const why = (e) => {
    try { return String(e instanceof Error ? e.message : e).slice(0, 300); } catch { return 'a value that cannot be described'; }
  };
  // A Standard Schema validator (zod 4, valibot, arktype: an object with `~standard.validate`) as a schema. At
  // build (config.build) it is asked for its JSON Schema, the way the MCP SDK asks: `~standard.jsonSchema.input()`
  // for inputSchema, `.output()` for outputSchema, draft 2020-12; the copy the host gets is JSON, checked there as
  // a hand-written schema is. Its validate runs on every call's arguments after the host's check (invoke).
  function standardOf(name, field, schema) {
    const std = schema['~standard'];
    if (std === undefined) return undefined;
    if (std === null || typeof std !== 'object' || typeof std.validate !== 'function')
      fail(`tool "${name}": ${field}["~standard"] is not a Standard Schema: it needs a validate function`);
    return std;
  }
  function jsonSchemaOf(name, field, std) {
    const io = field === 'inputSchema' ? 'input' : 'output';
    let conv, vendor, json;
    try {
      conv = std.jsonSchema;
      vendor = JSON.stringify(String(std.vendor).slice(0, 40));
    } catch (e) {
      fail(`tool "${name}": reading ${field}'s ~standard failed: ${why(e)}`);
    }
    if (conv === null || typeof conv !== 'object' || typeof conv[io] !== 'function') {
      fail(`tool "${name}": ${field} is a Standard Schema (vendor ${vendor}) that cannot write itself as JSON Schema (it has no ~standard.jsonSchema.${io}()): use zod 4.2 or later, wrap a valibot schema in toStandardJsonSchema() from @valibot/to-json-schema, or write ${field} as JSON Schema`);
    }
    try {
      json = JSON.parse(JSON.stringify(conv[io]({ target: 'draft-2020-12' })) ?? 'null');
    } catch (e) {
      fail(`tool "${name}": ${field}'s ~standard.jsonSchema.${io}() failed to give JSON Schema: ${why(e)}`);
    }
    if (json === null || typeof json !== 'object' || Array.isArray(json)) fail(`tool "${name}": ${field}'s ~standard.jsonSchema.${io}() did not give a JSON Schema object`);
    // As the SDK does: a root without `type` (a discriminated union's oneOf) is an object when it has to be one.
    if (json.type === undefined && (io === 'input' || 'properties' in json || 'required' in json || 'additionalProperties' in json)) return { type: 'object', ...json };
    return json;
  }
  // The arguments as the tool's Standard Schema gives them (its transforms, defaults and refinements applied), or
  // an InvalidArgumentsError naming the issues: [value], or [undefined, promise] when the validator is asynchronous.
  function standardArgs(tool, args) {
    const settle = (r) => {
      if (r === null || typeof r !== 'object') throw new TypeError(`tool "${tool.manifest.name}": its inputSchema's validate did not return a result`);
      if (!r.issues || r.issues.length === 0) return r.value;
      const issues = Array.from(r.issues).slice(0, 10).map((i) => {
        const path = Array.isArray(i?.path) ? i.path.map((p) => String(p !== null && typeof p === 'object' ? p.key : p)).join('.') : '';
        return path ? `${path}: ${i.message}` : String(i?.message);
      });
      const e = new Error(`arguments for "${tool.manifest.name}" do not match its inputSchema: ${issues.join('; ')}`);
      e.name = 'InvalidArgumentsError';
      throw e;
    };
    const r = tool.input.validate(args);
    return r !== null && typeof r === 'object' && typeof r.then === 'function' ? [undefined, Promise.resolve(r).then(settle)] : [settle(r)];
  }
  function defineTool(manifest, handler) {
    if (manifest === null || typeof manifest !== 'object') fail('expects a manifest object');
    const h = handler === undefined ? manifest.handler : handler;
    const { name } = manifest;
    if (typeof name !== 'string' || name.trim() === '') fail('`name` must be a non-empty string');
    if (tools.has(name)) fail(`a tool named "${name}" is already defined`);
    if (typeof h !== 'function') fail(`tool "${name}" needs a handler function`);
    if (manifest.description !== undefined && typeof manifest.description !== 'string') fail(`tool "${name}": description must be a string`);
    const std = {};
    for (const field of ['inputSchema', 'outputSchema']) {
      const schema = manifest[field];
      if (schema === undefined) continue;
      if (schema === null || (typeof schema !== 'object' && typeof schema !== 'function')) fail(`tool "${name}": ${field} must be a JSON Schema object or a Standard Schema`);
      std[field] = standardOf(name, field, schema);
      if (std[field] === undefined && typeof schema === 'function') fail(`tool "${name}": ${field} must be a JSON Schema object or a Standard Schema`);
    }
    if (manifest.exposeAsTool !== undefined && typeof manifest.exposeAsTool !== 'boolean') fail(`tool "${name}": exposeAsTool must be a boolean`);
    if (manifest.timeoutMs !== undefined && !(Number.isFinite(manifest.timeoutMs) && manifest.timeoutMs > 0))
      fail(`tool "${name}": timeoutMs must be a positive number`);
    for (const k of ['cpuMs', 'memoryLimitBytes'])
      if (manifest[k] !== undefined && !(Number.isFinite(manifest[k]) && manifest[k] > 0)) fail(`tool "${name}": ${k} must be a positive number`);
    if (manifest.allow !== undefined && (manifest.allow === null || typeof manifest.allow !== 'object'))
      fail(`tool "${name}": allow must be an object`);
    const m = {
      name,
      title: manifest.title,
      description: manifest.description,
      // A validator's JSON Schema is asked for only at build; a served guest's manifest is read for its names.
      inputSchema: std.inputSchema === undefined ? manifest.inputSchema : config.build ? jsonSchemaOf(name, 'inputSchema', std.inputSchema) : undefined,
      outputSchema: std.outputSchema === undefined ? manifest.outputSchema : config.build ? jsonSchemaOf(name, 'outputSchema', std.outputSchema) : undefined,
      annotations: manifest.annotations,
      exposeAsTool: manifest.exposeAsTool === true,
      timeoutMs: manifest.timeoutMs,
      cpuMs: manifest.cpuMs,
      memoryLimitBytes: manifest.memoryLimitBytes,
      allow: manifest.allow === undefined ? {} : JSON.parse(JSON.stringify(manifest.allow)),
    };
    // Any other key goes to the host too, which refuses it with a did-you-mean: a typo such as exposeAsToool
    // must fail the build, not be dropped silently.
    for (const k of Object.keys(manifest)) if (!(k in m) && k !== 'handler') m[k] = true;
    tools.set(name, { manifest: m, handler: h, input: std.inputSchema, browser: Array.isArray(m.allow.browser) && m.allow.browser.length > 0 });
  }
  define('defineTool', defineTool);

  define('plugins', new Proxy(Object.freeze({}), {
    get: (_t, name) => (typeof name !== 'string' ? undefined :
      (args) => hostCall(native.pluginsCall, current, { tool: name, args: args === undefined ? null : args })),
    has: () => true,
  }));


  // ---- BDD registration surface (recorded; consumed by the bdd host) -----------------------------
  const record = (kind) => (...a) => { steps.push({ kind, pattern: typeof a[0] === 'string' ? a[0] : String(a[0]) }); };
  for (const k of ['Given', 'When', 'Then', 'defineStep', 'And', 'But', 'Before', 'After', 'BeforeAll',
    'AfterAll', 'BeforeStep', 'AfterStep', 'defineParameterType'])
    define(k, record(k));
  for (const k of ['setDefaultTimeout', 'setDefinitionFunctionWrapper', 'setWorldConstructor', 'setParallelCanAssign'])
    define(k, () => {});

  // ---- the handler context -----------------------------------------------------------------------
  // page, context and locators: every method is one browser.call op, checked on the host. The guest holds page
  // ids the host issued and locator chains it replays; no host object crosses.
  const PAGE_METHODS = ['goto', 'url', 'title', 'content', 'setContent', 'click', 'dblclick', 'fill', 'type', 'press',
    'check', 'uncheck', 'selectOption', 'hover', 'focus', 'waitForSelector', 'waitForURL', 'waitForLoadState',
    'waitForTimeout', 'textContent', 'innerText', 'innerHTML', 'getAttribute', 'inputValue', 'isVisible', 'isChecked',
    'setViewportSize', 'goBack', 'reload'];
  const LOCATOR_STEPS = ['locator', 'getByRole', 'getByText', 'getByLabel', 'getByTestId', 'getByPlaceholder'];
  const LOCATOR_METHODS = ['click', 'dblclick', 'fill', 'type', 'press', 'check', 'uncheck', 'selectOption', 'hover',
    'focus', 'textContent', 'innerText', 'innerHTML', 'getAttribute', 'inputValue', 'isVisible', 'isChecked', 'count',
    'allTextContents', 'waitFor'];
  // Arguments as JSON; a RegExp (getByText(/^Sign/i), { name: /go/i }) travels marked, and the host makes it a
  // RegExp again where the browser, not the host, matches it (locator steps).
  const jsonArgs = (args) => JSON.parse(JSON.stringify(args, (_k, v) => (v instanceof RegExp ? { '$kiln.regexp': [v.source, v.flags] } : v)) ?? '[]');
  // page.on('console' | 'dialog', fn): the host keeps what a page says and asks; an answer to a call made while
  // listeners exist carries what is new, and the listeners hear it before the call's promise settles.
  // Listeners belong to the page object of one handler call. Dialogs have already been dismissed.
  function pageCall(inv, page, listeners, request) {
    if (!listeners || (listeners.console.length === 0 && listeners.dialog.length === 0)) return hostCall(native.browserCall, inv, request);
    return hostCall(native.browserCall, inv, { ...request, events: true }).then((answer) => {
      if (!answer || typeof answer !== 'object' || !('events' in answer)) return answer; // bytes: events come next time
      const ev = answer.events || {};
      for (const m of ev.console || []) for (const fn of listeners.console) {
        try { fn(Object.freeze({ type: () => m.type, text: () => m.text })); } catch (e) { uncaught(e); }
      }
      for (const d of ev.dialogs || []) for (const fn of listeners.dialog) {
        try { fn(Object.freeze({ type: () => d.type, message: () => d.message, accept: async () => {}, dismiss: async () => {} })); } catch (e) { uncaught(e); }
      }
      return answer.value;
    });
  }
  function makeLocator(inv, page, chain, listeners) {
    const call = (method, args) => pageCall(inv, page, listeners, { target: 'locator', page, chain, method, args: jsonArgs(args) });
    const loc = {};
    for (const m of LOCATOR_METHODS) loc[m] = (...args) => call(m, args);
    for (const s of LOCATOR_STEPS) loc[s] = (...args) => makeLocator(inv, page, [...chain, [s, ...jsonArgs(args)]], listeners);
    loc.nth = (i) => makeLocator(inv, page, [...chain, ['nth', Number(i)]], listeners);
    loc.first = () => makeLocator(inv, page, [...chain, ['first']], listeners);
    loc.last = () => makeLocator(inv, page, [...chain, ['last']], listeners);
    loc.all = async () => { const n = await call('count', []); return Array.from({ length: n }, (_, i) => loc.nth(i)); };
    return Object.freeze(loc);
  }
  function makePage(inv, page) {
    const listeners = { console: [], dialog: [] };
    const call = (method, args) => pageCall(inv, page, listeners, { target: 'page', page, method, args });
    const p = {};
    for (const m of PAGE_METHODS) p[m] = (...args) => call(m, jsonArgs(args));
    for (const s of LOCATOR_STEPS) p[s] = (...args) => makeLocator(inv, page, [[s, ...jsonArgs(args)]], listeners);
    p.on = (event, fn) => {
      if (event !== 'console' && event !== 'dialog') throw new TypeError(`page.on: kiln delivers 'console' and 'dialog' events, not ${JSON.stringify(String(event))}`);
      if (typeof fn !== 'function') throw new TypeError('page.on needs a listener function');
      listeners[event].push(fn);
      return p;
    };
    p.off = (event, fn) => {
      const list = listeners[event] || [];
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
      return p;
    };
    // A function runs in the page with one JSON argument; its JSON-serialisable result comes back.
    p.evaluate = (fn, arg) => call('evaluate', typeof fn === 'function' ? [String(fn), true, arg === undefined ? null : arg] : [String(fn), false, null]);
    p.consoleMessages = () => call('consoleMessages', []);
    p.dialogs = () => call('dialogs', []);
    p.screenshot = async (options) => new Uint8Array(await call('screenshot', [options === undefined ? {} : jsonArgs([options])[0]]));
    return Object.freeze(p);
  }
  function makeContext(inv) {
    const call = (method, args) => hostCall(native.browserCall, inv, { target: 'context', method, args: jsonArgs(args) });
    return Object.freeze({
      cookies: (...a) => call('cookies', a),
      addCookies: (...a) => call('addCookies', a),
      clearCookies: () => call('clearCookies', []),
      newPage: async () => makePage(inv, await call('newPage', [])),
      pages: async () => (await call('pages', [])).map((id) => makePage(inv, id)),
    });
  }

  // One per call. Its capability objects are made on first use (most handlers touch one of them, or none),
  // and its getters live on the class: an object literal with four accessors cost ~5× as much per call. Its
  // invocation is kept in a WeakMap of the prelude's, not in private fields: a class with fields runs a field
  // initialiser and adds each field to every instance, ~10 % of a no-op call with three of them. Like the
  // fields, the WeakMap is out of the guest's reach.
  const contexts = new WeakMap(); // HandlerContext -> its invocation
  const browserContexts = new WeakSet(); // the contexts whose tool declares allow.browser
  const madeFor = new WeakMap(); // HandlerContext -> the objects its getters made, once one has
  const invOf = (c) => {
    const inv = contexts.get(c);
    if (inv === undefined) throw new TypeError('not a handler context');
    return inv;
  };
  const madeOf = (c) => {
    let m = madeFor.get(c);
    if (!m) madeFor.set(c, (m = {}));
    return m;
  };
  /** Whether this call's tool declares allow.browser (and the server has a browser): else page is undefined. */
  const browserOk = (c) => config.browser === true && browserContexts.has(c);
  class HandlerContext {
    constructor(inv, args, allowBrowser) {
      this.args = args;
      contexts.set(this, inv);
      if (allowBrowser) browserContexts.add(this);
    }
    get commands() {
      const inv = invOf(this);
      const m = madeOf(this);
      return (m.commands ??= Object.freeze({
        run: (name, vars) => hostCall(native.commandsRun, inv, { name, vars: vars === undefined ? {} : vars }),
        start: (name) => hostCall(native.commandsStart, inv, { name }),
        status: (name) => hostCall(native.commandsStatus, inv, { name }),
        stop: (name) => hostCall(native.commandsStop, inv, { name }),
      }));
    }
    get request() { const inv = invOf(this); const m = madeOf(this); return (m.request ??= web.requestClient(() => inv)); }
    /** The workspace's files, like node:fs/promises (guest/web/fs.js). Present for every tool: the host refuses
     *  each call a tool's allow.fs does not cover, with the setting to add. */
    get fs() { const inv = invOf(this); const m = madeOf(this); return (m.fs ??= web.makeFs(inv)); }
    /** Report progress to the caller (MCP notifications/progress, when the client asked for it). A getter, so
     *  that `({ progress }) => progress(1)` works as `commands` does. */
    get progress() {
      const inv = invOf(this);
      const m = madeOf(this);
      return (m.progress ??= (progress, total, message) => {
        if (typeof progress !== 'number' || !Number.isFinite(progress)) throw new TypeError('progress must be a finite number');
        native.progress(inv, JSON.stringify({ progress, total, message: message === undefined ? undefined : String(message) }));
      });
    }
    /** An AbortSignal that aborts when the caller cancels this call (guest.cancel), with an AbortError. */
    get signal() {
      const inv = invOf(this);
      const m = madeOf(this);
      if (m.signal) return m.signal;
      let c = cancels.get(inv);
      if (!c) {
        c = new web.AbortController();
        // Made after its call was cancelled, or after it finished: it is born aborted (see `cancel` below).
        if (cancelled.has(inv) || !live.has(inv)) c.abort(abortError(cancelled.get(inv) ?? 'the call has ended'));
        else cancels.set(inv, c);
      }
      return (m.signal = c.signal);
    }
    get page() { const inv = invOf(this); return browserOk(this) ? (madeOf(this).page ??= makePage(inv, 0)) : undefined; }
    get context() { const inv = invOf(this); return browserOk(this) ? (madeOf(this).context ??= makeContext(inv)) : undefined; }
  }

  // "Name: message\nstack"; an error's cause (fetch's TypeError carries the network detail there) is named on
  // the first line, the way a reader of the tool's error needs it.
  // Total: what a handler throws may be a Proxy whose traps throw (or a revoked one); describing it must not
  // throw in turn, or the call would never finish and be stopped only at its deadline.
  function errorText(e) {
    try {
      return describeError(e);
    } catch {
      return 'Error: the handler threw a value that cannot be described (reading it threw)';
    }
  }
  function describeError(e) {
    if (!(e instanceof Error)) return `Error: ${show(e)}`;
    let head = `${e.name}: ${e.message}`;
    for (let c = e.cause, depth = 0; c !== undefined && depth < 3; c = c instanceof Error ? c.cause : undefined, depth++) {
      head += ` (cause: ${c instanceof Error ? `${c.name}: ${c.message}` : show(c)})`;
    }
    return e.stack ? `${head}\n${e.stack}` : head;
  }

  // What a handler returns travels as JSON; bytes (an image) and kiln.content([...]) (text, images and links
  // together) travel marked, and the host turns them into MCP content (host/mcp/result.ts), checking them.
  const CONTENT = Symbol('kiln.content');
  const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;
  const base64 = (v) => web.bytesToBase64(v instanceof ArrayBuffer ? new Uint8Array(v) : v);
  function content(parts) {
    if (!Array.isArray(parts)) throw new TypeError('kiln.content takes an array of parts: strings, image bytes, or { type: "resource_link", uri, name }');
    return Object.freeze({ [CONTENT]: parts.slice() });
  }
  function contentPart(p) {
    if (typeof p === 'string') return { type: 'text', text: p };
    if (isBytes(p)) return { type: 'image', '$kiln.bytes': base64(p) };
    if (p && p.type === 'image' && isBytes(p.data)) return { type: 'image', '$kiln.bytes': base64(p.data), mimeType: p.mimeType };
    return p;
  }
  // Bytes and kiln.content(...) travel marked, anything else as it is. The native tells which (guest/glue.c),
  // judging against this realm's own Uint8Array, ArrayBuffer and marker: 0 as it is (every non-object too),
  // 1 bytes, 2 content, 3 a Proxy is involved (then instanceof and `in` here decide, running its traps).
  const [U8, AB] = [Uint8Array, ArrayBuffer];
  native.resultKinds(U8.prototype, AB.prototype, CONTENT);
  function wire(v, kind) {
    if (kind === 1) return { '$kiln.bytes': base64(v) };
    if (kind === 2) return { '$kiln.content': v[CONTENT].map(contentPart) };
    if (v instanceof U8 || v instanceof AB) return { '$kiln.bytes': base64(v) };
    if (CONTENT in v) return { '$kiln.content': v[CONTENT].map(contentPart) };
    return v;
  }
  const notJson = (e) => new TypeError(`the handler's result is not JSON-serialisable: ${e.message}`);

  // A Promise (or any thenable) inside a result would travel as {} — a forgotten `await` — so a result whose
  // JSON holds "{}" is walked once more, as JSON.stringify walks it (after toJSON, skipping what it skips), and
  // the first thenable found is the handler's error, naming where it is. Only then: the common path pays for
  // one substring search. The walk is JSON.stringify's own, so it ends where that ends (cycles, depth).
  const FOUND = Symbol('kiln.thenable');
  const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
  function thenableError(out) {
    const paths = new Map();
    let found;
    try {
      JSON.stringify(out, function (key, value) {
        const at = paths.get(this);
        const path = at === undefined ? 'result' : Array.isArray(this) ? `${at}[${key}]` : IDENTIFIER.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
        if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
          if (value instanceof Promise) { found = `${path} is a Promise`; throw FOUND; }
          if (typeof value.then === 'function') { found = `${path} is a thenable (it has a then method)`; throw FOUND; }
          paths.set(value, path);
        }
        return value;
      });
    } catch {
      // FOUND, or a getter or Proxy trap that throws on this second walk: nothing more to say than the first
    }
    return found === undefined ? undefined : new TypeError(`${found}: did you forget await?`);
  }

  function toJson(v) {
    let out, s;
    try {
      const kind = native.resultKind(v);
      out = v === undefined ? null : kind === 0 ? v : wire(v, kind);
      s = JSON.stringify(out);
    } catch (e) {
      throw notJson(e);
    }
    const thenable = s !== undefined && s.includes('{}') ? thenableError(out) : undefined;
    if (thenable) throw thenable;
    return s === undefined ? 'null' : s;
  }

  // A result that cannot be serialised is the handler's error, not the engine's. (toJson's work, inline: this
  // is every call's path, and each function call of the prelude is a cost of every call.)
  function finishWith(inv, v) {
    let out, text;
    try {
      const kind = native.resultKind(v);
      out = v === undefined ? null : kind === 0 ? v : wire(v, kind);
      text = JSON.stringify(out);
    } catch (e) {
      let error;
      try { error = notJson(e); } catch (e2) { error = e2; } // what was thrown may have no message (null)
      finish(inv, false, errorText(error));
      return;
    }
    const thenable = text !== undefined && text.includes('{}') ? thenableError(out) : undefined;
    if (thenable) { finish(inv, false, errorText(thenable)); return; }
    finish(inv, true, text === undefined ? 'null' : text);
  }

  // An op's outcome: its continuation runs as the invocation that started it (see `current`).
  function settle(op, ok, value) {
    const p = pending.get(op);
    if (!p) return;
    pending.delete(op);
    current = p.inv;
    if (ok) p.resolve(value);
    else p.reject(hostError(value));
  }

  // ---- what the engine calls -----------------------------------------------------------------------
  return {
    // The per-instance part of the prelude, at load: the config, the host marker, `process`, `performance`.
    configure(configJson) {
      Object.assign(config, JSON.parse(configJson));
      const marker = Object.freeze({ host: config.host, version: '0.1.0', content });
      define('kiln', marker);
      define('ferridriver', marker); // extensions written to the ferridriver contract run unchanged
      web.configure(config);
    },
    // Asked when the module still awaits after its jobs ran: the stack of the host operation it started first.
    topLevelWait() {
      return topLevelOp ?? '';
    },
    // Asked once, when the top level has run: the host drops what it left pending, and so does the guest.
    manifest() {
      forgetIdleWork();
      return JSON.stringify({ tools: [...tools.values()].map((t) => t.manifest), steps: steps.length });
    },
    invoke(inv, name, argsJson) {
      current = inv;
      live.add(inv);
      const tool = tools.get(name);
      if (!tool) { finish(inv, false, `Error: no tool named "${name}" in this extension`); return; }
      let args;
      try { args = JSON.parse(argsJson); } catch (e) { finish(inv, false, `TypeError: arguments are not JSON: ${e.message}`); return; }
      let result;
      try {
        if (tool.input === undefined) result = tool.handler(new HandlerContext(inv, args, tool.browser));
        else {
          // The tool's own validator, on arguments the host has checked: the handler gets what it makes of them.
          const [given, later] = standardArgs(tool, args);
          result = later === undefined
            ? tool.handler(new HandlerContext(inv, given, tool.browser))
            : later.then((a) => { current = inv; return tool.handler(new HandlerContext(inv, a, tool.browser)); });
        }
      } catch (e) {
        finish(inv, false, errorText(e));
        return;
      }
      // A synchronous handler finishes now, without a promise turn; a thenable is awaited. (Reading `then` runs
      // guest code when the result is a Proxy or has a getter: what it throws is the handler's error.)
      let then;
      try {
        then = result === null || (typeof result !== 'object' && typeof result !== 'function') ? undefined : result.then;
      } catch (e) {
        finish(inv, false, errorText(e));
        return;
      }
      if (typeof then !== 'function') {
        finishWith(inv, result);
        return;
      }
      Promise.resolve(result)
        .then((v) => finishWith(inv, v))
        .then(undefined, (e) => finish(inv, false, errorText(e)));
    },
    complete(op, ok, text) {
      settle(op, ok, ok ? (text === '' ? undefined : JSON.parse(text)) : text);
    },
    beginScript(inv) {
      current = inv;
      live.add(inv);
    },
    endScript(inv, ok, value) {
      current = inv;
      if (!ok) { finish(inv, false, errorText(value)); return; }
      // A script runs as an async script: its value is a promise of {value: <last expression>}, awaited too.
      Promise.resolve(value)
        .then((completion) => completion.value)
        .then((v) => finish(inv, true, toJson(v)))
        .then(undefined, (e) => finish(inv, false, errorText(e)));
    },
    completeBytes(op, ok, payload) {
      settle(op, ok, payload);
    },
    // The caller cancelled `inv`: its ctx.signal aborts, then what it awaits from the host (fetches, commands,
    // tool calls; the host has already stopped them) rejects with an AbortError. Its timers still fire: a
    // handler that ignores the signal is stopped by the host soon after.
    cancel(inv, reason) {
      if (!live.has(inv) || cancelled.has(inv)) return;
      current = inv;
      cancelled.set(inv, reason);
      const c = cancels.get(inv);
      if (c) c.abort(abortError(reason));
      for (const [op, p] of pending) {
        if (p.inv !== inv || p.timer) continue;
        pending.delete(op);
        current = inv;
        p.reject(abortError(reason));
      }
    },
  };
})
