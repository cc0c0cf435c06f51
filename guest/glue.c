/*
 * kiln engine glue: the core-module side of the `kiln:extension` world (wit/kiln.wit).
 *
 * Hand-written canonical-ABI lowering for a deliberately small set of types: strings, u32, bool, enum,
 * option<string>, result<string,string>, result<list<u8>,string>, list<string>. Every import is a call
 * out to the host; every check happens there. This file only moves bytes and drives QuickJS.
 *
 * Invariants kept here:
 *  - The guest never blocks: imports that need I/O return an op id, outcomes arrive via `complete`.
 *  - After every export call the QuickJS job queue is drained, so the host only ever sees a guest
 *    that is waiting on host operations (or idle).
 *  - Strings the host hands us (export parameters, import results) were allocated with our
 *    `cabi_realloc`; we own and free them. Strings we return are freed in the matching post-return.
 *  - The prelude (guest/prelude.js + guest/web/*.js) is linked into the engine and evaluated by `kiln-init`,
 *    which Wizer runs once at build time: every instance starts from that snapshot. An artifact brings only
 *    the extension's bytecode, handed to `load`; nothing in it can replace the prelude.
 *  - `kiln-init` runs inside Wizer, where no kiln import may be called: everything that needs the host
 *    (the interrupt handler, the stack top) is set up at the first export call instead, and Math.random's
 *    seed at its first use.
 */
#include <stdint.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "quickjs.h"

#define WIT_VERSION "0.7.0"
#define IMPORT(iface, name) \
  __attribute__((import_module("kiln:extension/" iface "@" WIT_VERSION), import_name(name)))
#define EXPORT(name) __attribute__((export_name("kiln:extension/guest@" WIT_VERSION "#" name)))
#define POST_RETURN(name) __attribute__((export_name("cabi_post_kiln:extension/guest@" WIT_VERSION "#" name)))

/* ---- imports ---------------------------------------------------------------------------------- */
IMPORT("commands", "run") extern uint32_t imp_commands_run(uint32_t, const char *, size_t);
IMPORT("commands", "start") extern uint32_t imp_commands_start(uint32_t, const char *, size_t);
IMPORT("commands", "status") extern uint32_t imp_commands_status(uint32_t, const char *, size_t);
IMPORT("commands", "stop") extern uint32_t imp_commands_stop(uint32_t, const char *, size_t);
IMPORT("http", "fetch") extern uint32_t imp_http_fetch(uint32_t, const char *, size_t, const uint8_t *, size_t);
IMPORT("http", "read") extern uint32_t imp_http_read(uint32_t, uint32_t);
IMPORT("http", "abort") extern void imp_http_abort(uint32_t);
IMPORT("http", "discard") extern void imp_http_discard(uint32_t);
IMPORT("browser", "call") extern uint32_t imp_browser_call(uint32_t, const char *, size_t);
IMPORT("plugins", "call") extern uint32_t imp_plugins_call(uint32_t, const char *, size_t);
IMPORT("fs", "read-file") extern uint32_t imp_fs_read_file(uint32_t, const char *, size_t);
IMPORT("fs", "write-file") extern uint32_t imp_fs_write_file(uint32_t, const char *, size_t, const uint8_t *, size_t);
IMPORT("fs", "append-file") extern uint32_t imp_fs_append_file(uint32_t, const char *, size_t, const uint8_t *, size_t);
IMPORT("fs", "readdir") extern uint32_t imp_fs_readdir(uint32_t, const char *, size_t);
IMPORT("fs", "stat") extern uint32_t imp_fs_stat(uint32_t, const char *, size_t);
IMPORT("fs", "mkdir") extern uint32_t imp_fs_mkdir(uint32_t, const char *, size_t);
IMPORT("fs", "rm") extern uint32_t imp_fs_rm(uint32_t, const char *, size_t);
IMPORT("fs", "rename") extern uint32_t imp_fs_rename(uint32_t, const char *, size_t);
IMPORT("vars", "get") extern void imp_vars_get(const char *, size_t, void *ret);
IMPORT("vars", "set") extern void imp_vars_set(const char *, size_t, const char *, size_t, void *ret);
IMPORT("vars", "delete") extern uint32_t imp_vars_delete(const char *, size_t);
IMPORT("vars", "keys") extern void imp_vars_keys(void *ret);
IMPORT("runtime", "log") extern void imp_runtime_log(uint32_t, const char *, size_t);
IMPORT("runtime", "sleep") extern uint32_t imp_runtime_sleep(uint32_t);
IMPORT("runtime", "clear-timer") extern void imp_runtime_clear_timer(uint32_t);
IMPORT("runtime", "progress") extern void imp_runtime_progress(uint32_t, const char *, size_t);
IMPORT("runtime", "finish") extern void imp_runtime_finish(uint32_t, uint32_t, const char *, size_t);
IMPORT("runtime", "interrupted") extern uint32_t imp_runtime_interrupted(void);
IMPORT("runtime", "parse-url") extern void imp_runtime_parse_url(const char *, size_t, uint32_t, const char *, size_t, void *ret);
IMPORT("runtime", "set-url-part") extern void imp_runtime_set_url_part(const char *, size_t, uint32_t, const char *, size_t, void *ret);
IMPORT("crypto", "random-bytes") extern void imp_crypto_random_bytes(uint32_t, void *ret);
IMPORT("crypto", "digest") extern void imp_crypto_digest(uint32_t, const uint8_t *, size_t, void *ret);
IMPORT("intl", "call") extern void imp_intl_call(const char *, size_t, const char *, size_t, const char *, size_t, void *ret);
IMPORT("crypto", "hmac") extern void imp_crypto_hmac(uint32_t, const uint8_t *, size_t, const uint8_t *, size_t, void *ret);

/* A tagged string as the canonical ABI lays out option<string> / result<_, string> / result<string, _>. */
typedef struct { uint8_t tag; char *ptr; size_t len; } tagged_str;
typedef struct { char *ptr; size_t len; } str;

__attribute__((export_name("cabi_realloc")))
void *cabi_realloc(void *old, size_t old_size, size_t align, size_t new_size) {
  (void)old_size; (void)align; /* malloc aligns to 16, the largest alignment the ABI asks of us */
  if (new_size == 0) return (void *)align;
  void *p = realloc(old, new_size);
  if (!p) abort();
  return p;
}

/* ---- QuickJS state ---------------------------------------------------------------------------- */
static JSRuntime *rt;
static JSContext *ctx;
static JSValue internal; /* what the prelude's factory returned, in the snapshot: { configure, invoke, ... } */
/* The factory's functions, looked up once instead of by name on every call. */
enum { F_CONFIGURE, F_INVOKE, F_COMPLETE, F_BEGIN_SCRIPT, F_END_SCRIPT, F_COMPLETE_BYTES, F_CANCEL, F_COUNT };
static const char *const internal_names[F_COUNT] = {"configure", "invoke", "complete", "beginScript", "endScript", "completeBytes", "cancel"};
static JSValue internal_fns[F_COUNT];
static void cache_internal(void);
static int loaded;
static int entered;      /* the first export call has set up what the snapshot could not */

/* Free a buffer the host handed us. An empty string or list may arrive as pointer 1 with length 0,
 * never allocated: only a non-empty buffer was. */
static void free_owned(void *p, size_t len) {
  if (len) free(p);
}

static char *dup_bytes(const char *p, size_t len) {
  char *s = malloc(len + 1);
  if (!s) abort();
  memcpy(s, p, len);
  s[len] = 0;
  return s;
}

/* A WIT string is Unicode scalar values. quickjs-ng writes a lone surrogate as its 3-byte WTF-8 form (ED A0..BF
 * xx), which wasmtime refuses (the guest traps) and jco's decoder turns into three U+FFFD. Every text the guest
 * hands the host goes through well_formed: each lone surrogate becomes one U+FFFD (EF BF BD, the same 3 bytes),
 * as String.prototype.toWellFormed and TextEncoder do. In place: such bytes only ever appear in a buffer the
 * conversion allocated (an ASCII string's own bytes are returned as they are, and hold no 0xED). */
static size_t well_formed(char *s, size_t len) {
  size_t n = 0;
  char *end = s + len;
  for (char *p = s; (p = memchr(p, 0xED, (size_t)(end - p))) != NULL;) {
    if (end - p >= 3 && ((unsigned char)p[1] & 0xE0) == 0xA0) {
      p[0] = (char)0xEF; p[1] = (char)0xBF; p[2] = (char)0xBD;
      p += 3;
      n++;
    } else {
      p++;
    }
  }
  return n;
}

/* JS_ToCStringLen for a text bound for the host: well-formed (see well_formed). */
static const char *host_text(JSContext *c, size_t *len, JSValueConst v) {
  const char *s = JS_ToCStringLen(c, len, v);
  if (s) well_formed((char *)s, *len);
  return s;
}

/* "message\nstack" of the pending exception, malloc'ed. */
static char *exception_text(size_t *out_len) {
  JSValue exc = JS_GetException(ctx);
  size_t ml = 0, sl = 0; /* lengths, not strlen: a message may hold NUL characters */
  const char *msg = JS_ToCStringLen(ctx, &ml, exc);
  const char *stack = NULL;
  JSValue st = JS_UNDEFINED;
  if (JS_IsObject(exc)) {
    st = JS_GetPropertyStr(ctx, exc, "stack");
    if (JS_IsString(st)) stack = JS_ToCStringLen(ctx, &sl, st);
  }
  const char *m = msg ? msg : "unknown error";
  if (!msg) ml = strlen(m);
  if (!stack) sl = 0;
  char *out = malloc(ml + sl + 2);
  if (!out) abort();
  memcpy(out, m, ml);
  size_t n = ml;
  if (sl) { out[n++] = '\n'; memcpy(out + n, stack, sl); n += sl; }
  out[n] = 0;
  well_formed(out, n);
  if (msg) JS_FreeCString(ctx, msg);
  if (stack) JS_FreeCString(ctx, stack);
  JS_FreeValue(ctx, st);
  JS_FreeValue(ctx, exc);
  *out_len = n;
  return out;
}

static void log_text(uint32_t level, const char *s, size_t len) { imp_runtime_log(level, s, len); }

int kiln_out_of_memory; /* set by the patched allocator and JS_ThrowOutOfMemory (see scripts/build-engine.mjs) */
static const char oom_text[] = "InternalError: out of memory";

/* Unhandled rejections, as the engine reports them: a promise rejected with no handler is held here until the
 * job queue is empty, and logged then unless a handler was attached meanwhile (as Node reports them). */
#define MAX_UNHANDLED 32
static struct { JSValue promise, reason; } unhandled[MAX_UNHANDLED];
static int n_unhandled;

static void log_rejection(JSValueConst reason) {
  JSValue stack = JS_IsObject(reason) ? JS_GetPropertyStr(ctx, reason, "stack") : JS_UNDEFINED;
  size_t tl = 0, sl = 0; /* lengths, not strlen: a message may hold NUL characters */
  const char *r = JS_ToCStringLen(ctx, &tl, reason);
  const char *st = JS_IsString(stack) ? JS_ToCStringLen(ctx, &sl, stack) : NULL;
  const char *text = r ? r : "(a value that cannot be shown)";
  if (!r) tl = strlen(text);
  if (!st) sl = 0;
  while (sl && st[sl - 1] == '\n') sl--;
  static const char prefix[] = "Uncaught (in promise) ";
  char *line = malloc(sizeof prefix + tl + sl + 2);
  if (line) {
    size_t n = 0;
    memcpy(line, prefix, sizeof prefix - 1); n += sizeof prefix - 1;
    memcpy(line + n, text, tl); n += tl;
    if (sl) { line[n++] = '\n'; memcpy(line + n, st, sl); n += sl; }
    well_formed(line, n);
    log_text(3, line, n);
    free(line);
  }
  if (r) JS_FreeCString(ctx, r);
  if (st) JS_FreeCString(ctx, st);
  JS_FreeValue(ctx, stack);
  JS_FreeValue(ctx, JS_GetException(ctx)); /* a throwing toString or stack getter is not the guest's failure */
}

/* The promise whose outcome an export reports itself (the module's evaluation, at load): its rejection is
 * the load's error, not an unhandled rejection to log as well. */
static void *caller_reports;

static void track_rejection(JSContext *c, JSValueConst promise, JSValueConst reason, bool is_handled, void *opaque) {
  (void)opaque;
  if (!is_handled && JS_VALUE_GET_PTR(promise) == caller_reports) return;
  if (is_handled) {
    for (int i = 0; i < n_unhandled; i++) {
      if (JS_VALUE_GET_PTR(unhandled[i].promise) != JS_VALUE_GET_PTR(promise)) continue;
      JS_FreeValue(c, unhandled[i].promise);
      JS_FreeValue(c, unhandled[i].reason);
      unhandled[i] = unhandled[--n_unhandled];
      return;
    }
    return;
  }
  if (n_unhandled == MAX_UNHANDLED) { log_rejection(reason); return; }
  unhandled[n_unhandled].promise = JS_DupValue(c, promise);
  unhandled[n_unhandled].reason = JS_DupValue(c, reason);
  n_unhandled++;
}

static void report_unhandled(void) {
  int n = n_unhandled;
  JSValue reasons[MAX_UNHANDLED];
  for (int i = 0; i < n; i++) {
    reasons[i] = unhandled[i].reason;
    JS_FreeValue(ctx, unhandled[i].promise);
  }
  n_unhandled = 0; /* logging may run guest code (toString): what it rejects is tracked afresh */
  for (int i = 0; i < n; i++) {
    if (!kiln_out_of_memory) log_rejection(reasons[i]);
    JS_FreeValue(ctx, reasons[i]);
  }
}

/* Run every pending job. If the guest ran out of memory and no handler's failure reported it (the promise
 * machinery may itself have failed, leaving a handler that will never settle), tell the host: it discards
 * the instance. */
static void drain_jobs(void) {
  JSContext *c;
  for (;;) {
    int r = JS_ExecutePendingJob(rt, &c);
    if (r == 0) {
      if (n_unhandled == 0) break;
      report_unhandled(); /* logging may run guest code (toString) that queues more jobs: drain again */
      continue;
    }
    if (r < 0) {
      size_t n;
      char *t = exception_text(&n);
      if (!kiln_out_of_memory) log_text(3, t, n); /* out of memory is reported below, not as "null" */
      free(t);
    }
  }
  if (kiln_out_of_memory) {
    kiln_out_of_memory = 0;
    imp_runtime_finish(0, 1, oom_text, sizeof oom_text - 1);
  }
}

/* ---- natives handed to the prelude (never placed on globalThis) -------------------------------- */
typedef uint32_t (*op_import)(uint32_t, const char *, size_t);
static const op_import op_imports[] = {
  imp_commands_run, imp_commands_start, imp_commands_status, imp_commands_stop,
  imp_browser_call, imp_plugins_call,
  imp_fs_read_file, imp_fs_readdir, imp_fs_stat, imp_fs_mkdir, imp_fs_rm, imp_fs_rename,
};

static JSValue n_op(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv, int magic) {
  uint32_t inv;
  size_t len;
  if (JS_ToUint32(c, &inv, argv[0])) return JS_EXCEPTION;
  const char *s = host_text(c, &len, argv[1]);
  if (!s) return JS_EXCEPTION;
  uint32_t op = op_imports[magic](inv, s, len);
  JS_FreeCString(c, s);
  return JS_NewUint32(c, op);
}

/* httpFetch / fsWriteFile / fsAppendFile (inv, requestJson, ArrayBuffer | undefined) -> op. The buffer is looked
 * up after the request's conversion (which could run guest code that detaches it), right before the call. */
typedef uint32_t (*op_bytes_import)(uint32_t, const char *, size_t, const uint8_t *, size_t);
static const op_bytes_import op_bytes_imports[] = {imp_http_fetch, imp_fs_write_file, imp_fs_append_file};

static JSValue n_op_bytes(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv, int magic) {
  uint32_t inv;
  size_t len, body_len = 0;
  uint8_t *body = NULL;
  if (JS_ToUint32(c, &inv, argv[0])) return JS_EXCEPTION;
  const char *s = host_text(c, &len, argv[1]);
  if (!s) return JS_EXCEPTION;
  if (!JS_IsUndefined(argv[2])) {
    body = JS_GetArrayBuffer(c, &body_len, argv[2]);
    if (!body) { JS_FreeCString(c, s); return JS_EXCEPTION; }
  }
  uint32_t op = op_bytes_imports[magic](inv, s, len, body ? body : (const uint8_t *)1, body_len);
  JS_FreeCString(c, s);
  return JS_NewUint32(c, op);
}

/* httpRead(inv, body) -> op;  httpAbort(op);  httpDiscard(body) */
static JSValue n_http_u32(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv, int magic) {
  uint32_t a, b = 0;
  if (JS_ToUint32(c, &a, argv[0])) return JS_EXCEPTION;
  if (magic == 0 && JS_ToUint32(c, &b, argv[1])) return JS_EXCEPTION;
  switch (magic) {
    case 0: return JS_NewUint32(c, imp_http_read(a, b));
    case 1: imp_http_abort(a); return JS_UNDEFINED;
    default: imp_http_discard(a); return JS_UNDEFINED;
  }
}

/* parseUrl(input, base | undefined) -> JSON text; throws TypeError for an invalid URL */
static JSValue n_parse_url(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t il, bl = 0;
  const char *base = NULL;
  const char *input = host_text(c, &il, argv[0]);
  if (!input) return JS_EXCEPTION;
  if (argc > 1 && !JS_IsUndefined(argv[1])) {
    base = host_text(c, &bl, argv[1]);
    if (!base) { JS_FreeCString(c, input); return JS_EXCEPTION; }
  }
  tagged_str r;
  imp_runtime_parse_url(input, il, base != NULL, base ? base : (const char *)1, bl, &r);
  JS_FreeCString(c, input);
  if (base) JS_FreeCString(c, base);
  if (r.tag) {
    char *msg = dup_bytes(r.ptr, r.len);
    free_owned(r.ptr, r.len);
    JS_ThrowTypeError(c, "%s", msg);
    free(msg);
    return JS_EXCEPTION;
  }
  JSValue v = JS_NewStringLen(c, r.ptr, r.len);
  free_owned(r.ptr, r.len);
  return v;
}

/* setUrlPart(href, part 0..9, value) -> JSON text, as parseUrl; throws TypeError when the href setter fails */
static JSValue n_set_url_part(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t hl, vl;
  uint32_t part;
  if (JS_ToUint32(c, &part, argv[1])) return JS_EXCEPTION;
  if (part > 9) return JS_ThrowRangeError(c, "unknown URL part");
  const char *href = host_text(c, &hl, argv[0]);
  if (!href) return JS_EXCEPTION;
  const char *value = host_text(c, &vl, argv[2]);
  if (!value) { JS_FreeCString(c, href); return JS_EXCEPTION; }
  tagged_str r;
  imp_runtime_set_url_part(href, hl, part, value, vl, &r);
  JS_FreeCString(c, href);
  JS_FreeCString(c, value);
  if (r.tag) {
    char *msg = dup_bytes(r.ptr, r.len);
    free_owned(r.ptr, r.len);
    JS_ThrowTypeError(c, "%s", msg);
    free(msg);
    return JS_EXCEPTION;
  }
  JSValue v = JS_NewStringLen(c, r.ptr, r.len);
  free_owned(r.ptr, r.len);
  return v;
}

/* intl(spec, op, args) -> JSON text of the result; an error comes back as {error: "Name: message"}, which
 * guest/web/intl.js rethrows as that error type. */
static JSValue n_intl(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t sl, ol, al;
  const char *spec = host_text(c, &sl, argv[0]);
  if (!spec) return JS_EXCEPTION;
  const char *op = host_text(c, &ol, argv[1]);
  if (!op) { JS_FreeCString(c, spec); return JS_EXCEPTION; }
  const char *args = host_text(c, &al, argv[2]);
  if (!args) { JS_FreeCString(c, spec); JS_FreeCString(c, op); return JS_EXCEPTION; }
  tagged_str r;
  imp_intl_call(spec, sl, op, ol, args, al, &r);
  JS_FreeCString(c, spec);
  JS_FreeCString(c, op);
  JS_FreeCString(c, args);
  JSValue text = JS_NewStringLen(c, r.ptr, r.len);
  free_owned(r.ptr, r.len);
  if (!r.tag || JS_IsException(text)) return text;
  JSValue o = JS_NewObject(c);
  JS_SetPropertyStr(c, o, "error", text);
  return o;
}

/* How a handler's result travels (the prelude's wire): resultKind(v) is 1 when v's prototype chain holds
 * Uint8Array.prototype or ArrayBuffer.prototype (bytes), else 2 when v has the kiln.content marker, else 0 (as
 * it is); 3 when a Proxy is on the chain, which the prelude judges with instanceof and `in` itself (its traps
 * are guest code). The prototypes and the marker are the prelude's, handed over once by resultKinds (in the
 * snapshot): no global a guest replaces changes them. Every call's result goes through this, and the two
 * instanceof and the `in` it replaces were ~6 % of a no-op call. */
static JSValue kind_u8_proto, kind_ab_proto;
static JSAtom kind_content = JS_ATOM_NULL;

static JSValue n_result_kinds(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  if (kind_content != JS_ATOM_NULL || !JS_IsObject(argv[0]) || !JS_IsObject(argv[1]) || !JS_IsSymbol(argv[2]))
    return JS_ThrowTypeError(c, "resultKinds: bad arguments");
  kind_u8_proto = JS_DupValue(c, argv[0]);
  kind_ab_proto = JS_DupValue(c, argv[1]);
  kind_content = JS_ValueToAtom(c, argv[2]);
  return JS_UNDEFINED;
}

static JSValue n_result_kind(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  JSValueConst v = argv[0];
  if (!JS_IsObject(v)) return JS_NewInt32(c, 0);
  if (kind_content == JS_ATOM_NULL) return JS_NewInt32(c, 3);
  if (JS_IsProxy(v)) return JS_NewInt32(c, 3);
  int kind = 0;
  JSValue p = JS_GetPrototype(c, v); /* not a Proxy: a plain read, no guest code */
  while (JS_IsObject(p)) {
    if (JS_IsProxy(p)) { kind = 3; break; }
    void *o = JS_VALUE_GET_PTR(p);
    if (o == JS_VALUE_GET_PTR(kind_u8_proto) || o == JS_VALUE_GET_PTR(kind_ab_proto)) { kind = 1; break; }
    JSValue next = JS_GetPrototype(c, p);
    JS_FreeValue(c, p);
    p = next;
  }
  JS_FreeValue(c, p);
  if (kind) return JS_NewInt32(c, kind);
  /* No Proxy on the chain: HasProperty runs no guest code. */
  int has = JS_HasProperty(c, v, kind_content);
  if (has < 0) return JS_EXCEPTION;
  return JS_NewInt32(c, has ? 2 : 0);
}

/* memoryUsage() -> [bytes malloc'ed by QuickJS, bytes of the wasm linear memory] */
static JSValue n_memory_usage(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  JSMemoryUsage u;
  JS_ComputeMemoryUsage(rt, &u);
  JSValue a = JS_NewArray(c);
  JS_SetPropertyUint32(c, a, 0, JS_NewFloat64(c, (double)u.malloc_size));
  JS_SetPropertyUint32(c, a, 1, JS_NewFloat64(c, (double)__builtin_wasm_memory_size(0) * 65536.0));
  return a;
}

/* hrtime() -> [seconds, nanoseconds] of the monotonic clock */
static JSValue n_hrtime(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  JSValue a = JS_NewArray(c);
  JS_SetPropertyUint32(c, a, 0, JS_NewFloat64(c, (double)ts.tv_sec));
  JS_SetPropertyUint32(c, a, 1, JS_NewFloat64(c, (double)ts.tv_nsec));
  return a;
}

/* nowMs() -> milliseconds of the monotonic clock, as one number (the timers read it on every setTimeout) */
static JSValue n_now_ms(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return JS_NewFloat64(c, (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

static JSValue n_sleep(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  uint32_t ms;
  if (JS_ToUint32(c, &ms, argv[0])) return JS_EXCEPTION;
  return JS_NewUint32(c, imp_runtime_sleep(ms));
}

static JSValue n_clear_timer(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  uint32_t op;
  if (JS_ToUint32(c, &op, argv[0])) return JS_EXCEPTION;
  imp_runtime_clear_timer(op);
  return JS_UNDEFINED;
}

/* drainJobs(): run the pending jobs now (the timers run each one's microtasks before the next, as Node does). */
static JSValue n_drain_jobs(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  drain_jobs();
  return JS_UNDEFINED;
}

static JSValue n_log(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  uint32_t level;
  size_t len;
  if (JS_ToUint32(c, &level, argv[0])) return JS_EXCEPTION;
  const char *s = host_text(c, &len, argv[1]);
  if (!s) return JS_EXCEPTION;
  imp_runtime_log(level > 3 ? 1 : level, s, len);
  JS_FreeCString(c, s);
  return JS_UNDEFINED;
}

/* progress(inv, json) */
static JSValue n_progress(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  uint32_t inv;
  size_t len;
  if (JS_ToUint32(c, &inv, argv[0])) return JS_EXCEPTION;
  const char *s = host_text(c, &len, argv[1]);
  if (!s) return JS_EXCEPTION;
  imp_runtime_progress(inv, s, len);
  JS_FreeCString(c, s);
  return JS_UNDEFINED;
}

static JSValue n_finish(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  uint32_t inv;
  size_t len;
  if (JS_ToUint32(c, &inv, argv[0])) return JS_EXCEPTION;
  int ok = JS_ToBool(c, argv[1]);
  if (kiln_out_of_memory) {
    /* The guest ran out of its heap during this or an earlier run: say so, whatever it managed to throw, and
     * also when it caught that and returned (what it returned may be missing what it could not allocate). */
    kiln_out_of_memory = 0;
    imp_runtime_finish(inv, 1, oom_text, sizeof oom_text - 1);
    return JS_UNDEFINED;
  }
  /* A result is JSON.stringify's text, in which the language escapes lone surrogates, but JSON.rawJSON can
   * put one in raw (and the guest can replace JSON.stringify): results are made well-formed too. */
  const char *s = host_text(c, &len, argv[2]);
  if (!s) return JS_EXCEPTION;
  imp_runtime_finish(inv, ok ? 0 : 1, s, len);
  JS_FreeCString(c, s);
  return JS_UNDEFINED;
}

/* A vars key or value as the host will store it. One with a lone surrogate is refused: made well-formed, two
 * different keys would name one entry, and a value would come back other than it was set. */
static const char *vars_text(JSContext *c, size_t *len, JSValueConst v, const char *what) {
  const char *s = JS_ToCStringLen(c, len, v);
  if (s && well_formed((char *)s, *len)) {
    JS_FreeCString(c, s);
    JS_ThrowTypeError(c, "vars %s must be well-formed Unicode: it has a lone surrogate (%s.toWellFormed() replaces "
                      "each with U+FFFD)", what, what);
    return NULL;
  }
  return s;
}

/* The guest's vars.get itself (the prelude installs this function as it is: it is the one synchronous host
 * call, often made in a loop, and a JavaScript wrapper around it was a second call each time). */
static JSValue n_vars_get(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len;
  if (!JS_IsString(argv[0])) return JS_ThrowTypeError(c, "vars key must be a string");
  const char *k = vars_text(c, &len, argv[0], "key");
  if (!k) return JS_EXCEPTION;
  tagged_str r;
  imp_vars_get(k, len, &r);
  JS_FreeCString(c, k);
  if (!r.tag) return JS_UNDEFINED;
  JSValue v = JS_NewStringLen(c, r.ptr, r.len);
  free_owned(r.ptr, r.len);
  return v;
}

static JSValue n_vars_set(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t kl, vl;
  const char *k = vars_text(c, &kl, argv[0], "key");
  if (!k) return JS_EXCEPTION;
  const char *v = vars_text(c, &vl, argv[1], "value");
  if (!v) { JS_FreeCString(c, k); return JS_EXCEPTION; }
  tagged_str r;
  imp_vars_set(k, kl, v, vl, &r);
  JS_FreeCString(c, k);
  JS_FreeCString(c, v);
  if (!r.tag) return JS_UNDEFINED;
  char *msg = dup_bytes(r.ptr, r.len);
  free_owned(r.ptr, r.len);
  JS_ThrowRangeError(c, "%s", msg);
  free(msg);
  return JS_EXCEPTION;
}

static JSValue n_vars_delete(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len;
  const char *k = vars_text(c, &len, argv[0], "key");
  if (!k) return JS_EXCEPTION;
  uint32_t r = imp_vars_delete(k, len);
  JS_FreeCString(c, k);
  return JS_NewBool(c, r != 0);
}

static JSValue n_vars_keys(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  struct { str *items; size_t len; } r;
  imp_vars_keys(&r);
  JSValue arr = JS_NewArray(c);
  for (size_t i = 0; i < r.len; i++) {
    JS_SetPropertyUint32(c, arr, i, JS_NewStringLen(c, r.items[i].ptr, r.items[i].len));
    free_owned(r.items[i].ptr, r.items[i].len);
  }
  free_owned(r.items, r.len);
  return arr;
}


/* ---- crypto: the host's entropy and hashes ------------------------------------------------------------ */
typedef struct { uint8_t *ptr; size_t len; } bytes_ret;

/* fillRandom(Uint8Array): fills the whole view (the caller checks the 65536-byte limit). */
static JSValue n_fill_random(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len;
  uint8_t *dest = JS_GetUint8Array(c, &len, argv[0]);
  if (!dest) return JS_EXCEPTION;
  if (len > 65536) return JS_ThrowRangeError(c, "at most 65536 random bytes at once");
  bytes_ret r;
  imp_crypto_random_bytes((uint32_t)len, &r);
  dest = JS_GetUint8Array(c, &len, argv[0]); /* the host call cannot run JS, but look again anyway */
  if (dest && r.len == len) memcpy(dest, r.ptr, len);
  free_owned(r.ptr, r.len);
  return JS_UNDEFINED;
}

/* digest(algorithm 0..3, Uint8Array) -> Uint8Array;  hmac(algorithm, key Uint8Array, data Uint8Array) -> Uint8Array */
static JSValue n_digest(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv, int magic) {
  uint32_t alg;
  size_t kl = 0, dl;
  const uint8_t *key = NULL;
  if (JS_ToUint32(c, &alg, argv[0])) return JS_EXCEPTION;
  if (alg > 3) return JS_ThrowRangeError(c, "unknown hash");
  if (magic) {
    key = JS_GetUint8Array(c, &kl, argv[1]);
    if (!key) return JS_EXCEPTION;
  }
  const uint8_t *data = JS_GetUint8Array(c, &dl, argv[magic ? 2 : 1]);
  if (!data) return JS_EXCEPTION;
  bytes_ret r;
  if (magic) imp_crypto_hmac(alg, kl ? key : (const uint8_t *)1, kl, dl ? data : (const uint8_t *)1, dl, &r);
  else imp_crypto_digest(alg, dl ? data : (const uint8_t *)1, dl, &r);
  JSValue out = JS_NewUint8ArrayCopy(c, r.ptr, r.len);
  free_owned(r.ptr, r.len);
  return out;
}

/* ---- UTF-8, linear time (TextEncoder, TextDecoder, body reading) ------------------------------------- */

/* utf8Encode(wellFormedString) -> Uint8Array. The caller passes a well-formed string (toWellFormed): QuickJS
 * keeps lone surrogates as 3-byte sequences, WHATWG's encoder writes U+FFFD for them. */
static JSValue n_utf8_encode(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len;
  const char *s = JS_ToCStringLen(c, &len, argv[0]);
  if (!s) return JS_EXCEPTION;
  JSValue out = JS_NewUint8ArrayCopy(c, (const uint8_t *)s, len);
  JS_FreeCString(c, s);
  return out;
}

/* utf8EncodeInto(wellFormedString, Uint8Array) -> [read (UTF-16 units), written (bytes)]: whole characters
 * only, as many as fit. */
static JSValue n_utf8_encode_into(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len, room;
  uint8_t *dest = JS_GetUint8Array(c, &room, argv[1]);
  if (!dest) return JS_EXCEPTION;
  const char *s = JS_ToCStringLen(c, &len, argv[0]);
  if (!s) return JS_EXCEPTION;
  size_t i = 0, read = 0;
  while (i < len) {
    uint8_t b = (uint8_t)s[i];
    size_t n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
    if (i + n > room) break;
    i += n;
    read += n == 4 ? 2 : 1;
  }
  /* the string's conversion may have run a toString that detached or shrank the buffer: look again */
  dest = JS_GetUint8Array(c, &room, argv[1]);
  if (!dest || i > room) { JS_FreeCString(c, s); return dest ? JS_ThrowRangeError(c, "encodeInto: the destination shrank") : JS_EXCEPTION; }
  memcpy(dest, s, i);
  JS_FreeCString(c, s);
  JSValue r = JS_NewArray(c);
  JS_SetPropertyUint32(c, r, 0, JS_NewFloat64(c, (double)read));
  JS_SetPropertyUint32(c, r, 1, JS_NewFloat64(c, (double)i));
  return r;
}

/* utf8Decode(Uint8Array, fatal, stream) -> string, or with stream [string, pending bytes]. The WHATWG UTF-8
 * decoder (Encoding Standard 4.1): one U+FFFD per maximal invalid subpart; with `stream`, an incomplete
 * sequence at the end is left for the next call; with `fatal`, any error throws a TypeError. */
static JSValue n_utf8_decode(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
  size_t len;
  const uint8_t *in = JS_GetUint8Array(c, &len, argv[0]);
  if (!in) return JS_EXCEPTION;
  int fatal = JS_ToBool(c, argv[1]), stream = JS_ToBool(c, argv[2]);
  size_t ascii = 0;
  while (ascii < len && in[ascii] < 0x80) ascii++;
  JSValue str;
  size_t pending = 0;
  if (ascii == len) {
    str = JS_NewStringLen(c, (const char *)in, len);
  } else {
    uint16_t *out = js_malloc(c, (len + 1) * sizeof(uint16_t));
    if (!out) return JS_EXCEPTION;
    size_t o = 0, start = 0;
    uint32_t cp = 0, needed = 0, seen = 0, lower = 0x80, upper = 0xbf;
    for (size_t i = 0; i < ascii; i++) out[o++] = in[i];
    for (size_t i = ascii; i < len; i++) {
      uint8_t b = in[i];
      if (needed == 0) {
        start = i;
        if (b < 0x80) { out[o++] = b; continue; }
        if (b >= 0xc2 && b <= 0xdf) { needed = 1; cp = b & 0x1f; }
        else if (b >= 0xe0 && b <= 0xef) { if (b == 0xe0) lower = 0xa0; if (b == 0xed) upper = 0x9f; needed = 2; cp = b & 0xf; }
        else if (b >= 0xf0 && b <= 0xf4) { if (b == 0xf0) lower = 0x90; if (b == 0xf4) upper = 0x8f; needed = 3; cp = b & 0x7; }
        else goto error;
        continue;
      }
      if (b < lower || b > upper) {
        cp = needed = seen = 0; lower = 0x80; upper = 0xbf;
        i--; /* the byte starts over */
        goto error;
      }
      lower = 0x80; upper = 0xbf;
      cp = (cp << 6) | (b & 0x3f);
      if (++seen < needed) continue;
      if (cp >= 0x10000) { cp -= 0x10000; out[o++] = 0xd800 + (cp >> 10); out[o++] = 0xdc00 + (cp & 0x3ff); }
      else out[o++] = cp;
      cp = needed = seen = 0;
      continue;
    error:
      if (fatal) { js_free(c, out); return JS_ThrowTypeError(c, "The encoded data was not valid for encoding utf-8"); }
      out[o++] = 0xfffd;
    }
    if (needed) {
      if (stream) pending = len - start;
      else if (fatal) { js_free(c, out); return JS_ThrowTypeError(c, "The encoded data was not valid for encoding utf-8"); }
      else out[o++] = 0xfffd;
    }
    str = JS_NewStringUTF16(c, out, o);
    js_free(c, out);
  }
  if (JS_IsException(str) || !stream) return str;
  JSValue r = JS_NewArray(c);
  JS_SetPropertyUint32(c, r, 0, str);
  JS_SetPropertyUint32(c, r, 1, JS_NewUint32(c, (uint32_t)pending));
  return r;
}

static JSValue make_natives(void) {
  static const char *op_names[] = {
    "commandsRun", "commandsStart", "commandsStatus", "commandsStop",
    "browserCall", "pluginsCall",
    "fsReadFile", "fsReaddir", "fsStat", "fsMkdir", "fsRm", "fsRename",
  };
  JSValue o = JS_NewObject(ctx);
  for (int i = 0; i < (int)(sizeof(op_names) / sizeof(op_names[0])); i++)
    JS_SetPropertyStr(ctx, o, op_names[i],
                      JS_NewCFunctionMagic(ctx, n_op, op_names[i], 2, JS_CFUNC_generic_magic, i));
  JS_SetPropertyStr(ctx, o, "httpFetch", JS_NewCFunctionMagic(ctx, n_op_bytes, "httpFetch", 3, JS_CFUNC_generic_magic, 0));
  JS_SetPropertyStr(ctx, o, "fsWriteFile", JS_NewCFunctionMagic(ctx, n_op_bytes, "fsWriteFile", 3, JS_CFUNC_generic_magic, 1));
  JS_SetPropertyStr(ctx, o, "fsAppendFile", JS_NewCFunctionMagic(ctx, n_op_bytes, "fsAppendFile", 3, JS_CFUNC_generic_magic, 2));
  JS_SetPropertyStr(ctx, o, "httpRead", JS_NewCFunctionMagic(ctx, n_http_u32, "httpRead", 2, JS_CFUNC_generic_magic, 0));
  JS_SetPropertyStr(ctx, o, "httpAbort", JS_NewCFunctionMagic(ctx, n_http_u32, "httpAbort", 1, JS_CFUNC_generic_magic, 1));
  JS_SetPropertyStr(ctx, o, "httpDiscard", JS_NewCFunctionMagic(ctx, n_http_u32, "httpDiscard", 1, JS_CFUNC_generic_magic, 2));
  JS_SetPropertyStr(ctx, o, "parseUrl", JS_NewCFunction(ctx, n_parse_url, "parseUrl", 2));
  JS_SetPropertyStr(ctx, o, "setUrlPart", JS_NewCFunction(ctx, n_set_url_part, "setUrlPart", 3));
  JS_SetPropertyStr(ctx, o, "intl", JS_NewCFunction(ctx, n_intl, "intl", 3));
  JS_SetPropertyStr(ctx, o, "hrtime", JS_NewCFunction(ctx, n_hrtime, "hrtime", 0));
  JS_SetPropertyStr(ctx, o, "nowMs", JS_NewCFunction(ctx, n_now_ms, "nowMs", 0));
  JS_SetPropertyStr(ctx, o, "fillRandom", JS_NewCFunction(ctx, n_fill_random, "fillRandom", 1));
  JS_SetPropertyStr(ctx, o, "digest", JS_NewCFunctionMagic(ctx, n_digest, "digest", 2, JS_CFUNC_generic_magic, 0));
  JS_SetPropertyStr(ctx, o, "hmac", JS_NewCFunctionMagic(ctx, n_digest, "hmac", 3, JS_CFUNC_generic_magic, 1));
  JS_SetPropertyStr(ctx, o, "utf8Encode", JS_NewCFunction(ctx, n_utf8_encode, "utf8Encode", 1));
  JS_SetPropertyStr(ctx, o, "utf8EncodeInto", JS_NewCFunction(ctx, n_utf8_encode_into, "utf8EncodeInto", 2));
  JS_SetPropertyStr(ctx, o, "utf8Decode", JS_NewCFunction(ctx, n_utf8_decode, "utf8Decode", 3));
  JS_SetPropertyStr(ctx, o, "memoryUsage", JS_NewCFunction(ctx, n_memory_usage, "memoryUsage", 0));
  JS_SetPropertyStr(ctx, o, "resultKinds", JS_NewCFunction(ctx, n_result_kinds, "resultKinds", 3));
  JS_SetPropertyStr(ctx, o, "resultKind", JS_NewCFunction(ctx, n_result_kind, "resultKind", 1));
  JS_SetPropertyStr(ctx, o, "sleep", JS_NewCFunction(ctx, n_sleep, "sleep", 1));
  JS_SetPropertyStr(ctx, o, "clearTimer", JS_NewCFunction(ctx, n_clear_timer, "clearTimer", 1));
  JS_SetPropertyStr(ctx, o, "drainJobs", JS_NewCFunction(ctx, n_drain_jobs, "drainJobs", 0));
  JS_SetPropertyStr(ctx, o, "log", JS_NewCFunction(ctx, n_log, "log", 2));
  JS_SetPropertyStr(ctx, o, "finish", JS_NewCFunction(ctx, n_finish, "finish", 3));
  JS_SetPropertyStr(ctx, o, "progress", JS_NewCFunction(ctx, n_progress, "progress", 2));
  JS_SetPropertyStr(ctx, o, "varsGet", JS_NewCFunction(ctx, n_vars_get, "get", 1));
  JS_SetPropertyStr(ctx, o, "varsSet", JS_NewCFunction(ctx, n_vars_set, "varsSet", 2));
  JS_SetPropertyStr(ctx, o, "varsDelete", JS_NewCFunction(ctx, n_vars_delete, "varsDelete", 1));
  JS_SetPropertyStr(ctx, o, "varsKeys", JS_NewCFunction(ctx, n_vars_keys, "varsKeys", 0));
  return o;
}

/* ---- runtime setup ---------------------------------------------------------------------------- */
/* The wasm shadow stack is 2 MiB (see the link flags). QuickJS must hit its own limit, a catchable
 * RangeError, before either real stack runs out: this shadow stack, and the host's native stack, which every
 * wasm frame also uses (scripts/build-engine.mjs weighs the C recursions that use only the native one). The
 * host sets the limit at load from its thread's native stack (config.stackLimit, host/engine/stack.ts); until
 * then (the snapshot, `compile`) it is what Node's main thread, the smallest, allows. */
#define JS_STACK_LIMIT (384u * 1024u)
#define JS_STACK_LIMIT_MIN (64u * 1024u)
#define JS_STACK_LIMIT_MAX (1792u * 1024u) /* 256 KiB below it stay for C code past the last check */

/* QuickJS calls this every JS_INTERRUPT_COUNTER_INIT (10000) steps; non-zero stops the running code. */
static int interrupt_handler(JSRuntime *r, void *opaque) {
  (void)r; (void)opaque;
  return imp_runtime_interrupted() != 0;
}

extern char kiln_prelude_source[]; /* not const: zeroed once evaluated, so the snapshot does not carry it */
extern const size_t kiln_prelude_length;
void kiln_seed_random(JSContext *ctx, uint64_t seed); /* added to quickjs.c by scripts/build-engine.mjs */

/* The prelude compiled in a runtime of its own, then freed: its bytecode (without its source text, which
 * functions keep for toString, and without debug information: line tables, file name; the host drops the
 * prelude's frames anyway, host/engine/prelude-frames.ts) in a malloc'd buffer. The parser's temporaries
 * then leave no holes between the engine's long-lived objects, which the snapshot writes into every
 * instance's memory page by page. */
static uint8_t *compile_prelude(size_t *len) {
  JSRuntime *r = JS_NewRuntime();
  JSContext *c = r ? JS_NewContext(r) : NULL;
  if (!c) abort();
  JSValue fn = JS_Eval(c, kiln_prelude_source, kiln_prelude_length, "kiln:prelude", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
  if (JS_IsException(fn)) abort(); /* the prelude does not compile: the engine build fails here */
  size_t n;
  uint8_t *bc = JS_WriteObject(c, &n, fn, JS_WRITE_OBJ_BYTECODE | JS_WRITE_OBJ_STRIP_SOURCE | JS_WRITE_OBJ_STRIP_DEBUG);
  JS_FreeValue(c, fn);
  if (!bc) abort();
  uint8_t *copy = malloc(n);
  if (!copy) abort();
  memcpy(copy, bc, n);
  js_free(c, bc);
  JS_FreeContext(c);
  JS_FreeRuntime(r);
  memset(kiln_prelude_source, 0, kiln_prelude_length); /* the snapshot carries neither copy of the source */
  /* Moved to the bottom of the space the runtime left, so the engine's objects follow it without a gap. */
  uint8_t *low = malloc(n);
  if (!low) abort();
  memcpy(low, copy, n);
  free(copy);
  *len = n;
  return low;
}

/* Runtime, context and the prelude's factory. Run by Wizer at build time (the snapshot), or on first use. */
static void ensure_runtime(void) {
  if (rt) return;
  size_t n;
  uint8_t *bc = compile_prelude(&n);
  rt = JS_NewRuntime();
  if (!rt) abort();
  JS_SetMaxStackSize(rt, JS_STACK_LIMIT);
  ctx = JS_NewContext(rt);
  if (!ctx) abort();
  JSValue stripped = JS_ReadObject(ctx, bc, n, JS_READ_OBJ_BYTECODE);
  free(bc);
  if (JS_IsException(stripped)) abort();
  JSValue factory = JS_EvalFunction(ctx, stripped);
  if (JS_IsException(factory)) abort();
  /* The factory installs the whole guest API now, once: an instance only configures it at load. */
  JSValue natives = make_natives();
  internal = JS_Call(ctx, factory, JS_UNDEFINED, 1, &natives);
  JS_FreeValue(ctx, natives);
  JS_FreeValue(ctx, factory);
  if (JS_IsException(internal)) abort();
  cache_internal();
}

/* Zero the stack below the caller: Wizer snapshots all of memory, and the dead frames of the init (clock
 * readings among them) would make every build's bytes differ. */
__attribute__((noinline)) static void scrub_stack(void) {
  uint8_t dead[256 * 1024];
  memset(dead, 0, sizeof dead);
  __asm__ volatile("" : : "r"(dead) : "memory"); /* the zeros are never read: keep the compiler from dropping them */
}

/* Zero the allocator's free memory: compiling the prelude and building the engine leave freed but dirty
 * blocks, which Wizer would write into every engine as data. Take every free block the heap holds (without
 * growing memory), zero it, and give it back: only the allocator's own bookkeeping stays non-zero.
 *
 * Giving them back merges neighbouring blocks, and the allocator leaves the merged blocks' headers where
 * they were: a few words in every 64 KiB of free memory, each one a page every instance would be written
 * (measured: 18 of the snapshot's 169 pages). So the blocks taken are recorded (address, size), and once
 * all are back, the headers of those merged into the block before them are zeroed — all but the first 32
 * bytes of each run of neighbours, where the merged block's own header and free-list links live (dlmalloc's
 * largest free-chunk header, 8 words). */
#define SCRUB_RECORDS 4096
typedef struct { uintptr_t at; size_t size; } scrub_chunk; /* a chunk taken: its header's address, its size */

static int by_address(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void scrub_free_memory(void) {
  void *taken = NULL; /* the blocks taken, chained through their first word */
  scrub_chunk scrub_taken[SCRUB_RECORDS]; /* in this frame (noinline), which scrub_stack zeroes next */
  size_t count = 0;
  size_t pages = __builtin_wasm_memory_size(0);
  for (size_t size = 1u << 16; size >= 16; size >>= 2) {
    for (;;) {
      void **p = malloc(size);
      if (!p) break;
      if (__builtin_wasm_memory_size(0) != pages) { free(p); break; } /* it grew the heap: stop at this size */
      memset(p, 0, malloc_usable_size(p)); /* the chunk's slack past `size` is dirty too */
      *p = taken;
      taken = p;
      if (count < SCRUB_RECORDS) { /* dlmalloc: the chunk starts 8 bytes before the block; its size word is at +4 */
        scrub_taken[count].at = (uintptr_t)p - 8;
        scrub_taken[count].size = ((size_t *)p)[-1] & ~(size_t)7;
        count++;
      }
    }
  }
  while (taken) {
    void *next = *(void **)taken;
    *(void **)taken = NULL;
    free(taken);
    taken = next;
  }
  qsort(scrub_taken, count, sizeof scrub_taken[0], by_address);
  uintptr_t run = 0; /* where the current run of neighbouring chunks starts */
  for (size_t i = 0; i < count; i++) {
    uintptr_t at = scrub_taken[i].at, end = at + scrub_taken[i].size;
    if (i == 0 || scrub_taken[i - 1].at + scrub_taken[i - 1].size != at) { run = at; continue; }
    uintptr_t from = at > run + 32 ? at : run + 32, to = end < at + 32 ? end : at + 32;
    if (from < to) memset((void *)from, 0, to - from);
  }
  if (count == SCRUB_RECORDS) abort(); /* some were not recorded: raise SCRUB_RECORDS (the build fails here) */
}

__attribute__((export_name("kiln-init"))) void kiln_init(void) {
  ensure_runtime();
  scrub_free_memory();
  scrub_stack();
}

/* What every export does first. The snapshot was taken at another stack depth, with no interrupt handler
 * (it calls the host) and no Math.random seed (kiln_seed_random_once). */
static void enter(void) {
  ensure_runtime();
  JS_UpdateStackTop(rt);
  if (entered) return;
  entered = 1;
  JS_SetInterruptHandler(rt, interrupt_handler, NULL);
  JS_SetHostPromiseRejectionTracker(rt, track_rejection, NULL);
}

/* Math.random (not a cryptographic generator) is seeded from the host's entropy, per instance, when it first
 * runs there (quickjs.c calls this): a guest that draws no random number asks the host for none. */
int kiln_random_unseeded = 1;

void kiln_seed_random_once(JSContext *c) {
  kiln_random_unseeded = 0;
  bytes_ret r;
  uint64_t seed = 0;
  imp_crypto_random_bytes(sizeof seed, &r);
  if (r.len == sizeof seed) memcpy(&seed, r.ptr, sizeof seed);
  free_owned(r.ptr, r.len);
  kiln_seed_random(c, seed);
}

/* ---- return areas ----------------------------------------------------------------------------- */
static tagged_str ret_area;

static tagged_str *ret_ok(char *p, size_t len) { ret_area.tag = 0; ret_area.ptr = p; ret_area.len = len; return &ret_area; }
static tagged_str *ret_err(char *p, size_t len) { ret_area.tag = 1; ret_area.ptr = p; ret_area.len = len; return &ret_area; }
static tagged_str *ret_err_str(const char *msg) { return ret_err(dup_bytes(msg, strlen(msg)), strlen(msg)); }
static tagged_str *ret_exception(void) { size_t n; char *t = exception_text(&n); return ret_err(t, n); }

static tagged_str *ret_js_string(JSValue v) {
  size_t len;
  const char *s = host_text(ctx, &len, v);
  JS_FreeValue(ctx, v);
  if (!s) return ret_exception();
  char *out = dup_bytes(s, len);
  JS_FreeCString(ctx, s);
  return ret_ok(out, len);
}

/* ---- exports ---------------------------------------------------------------------------------- */
/* Evaluate bytecode made by `compile`. A module's evaluation is a promise (top-level await); so is an async
 * script's (its value is {value: <last expression>}). */
static JSValue eval_bytecode(const uint8_t *buf, size_t len, const char *module_url) {
  JSValue obj = JS_ReadObject(ctx, buf, len, JS_READ_OBJ_BYTECODE);
  if (JS_IsException(obj)) return obj;
  if (JS_VALUE_GET_TAG(obj) == JS_TAG_MODULE) {
    if (JS_ResolveModule(ctx, obj) < 0) {
      JS_FreeValue(ctx, obj);
      return JS_EXCEPTION;
    }
    if (module_url) {
      JSValue meta = JS_GetImportMeta(ctx, JS_VALUE_GET_PTR(obj));
      if (JS_IsException(meta)) { JS_FreeValue(ctx, obj); return meta; }
      JS_DefinePropertyValueStr(ctx, meta, "url", JS_NewString(ctx, module_url), JS_PROP_C_W_E);
      JS_FreeValue(ctx, meta);
    }
  }
  return JS_EvalFunction(ctx, obj);
}

/* Applies config.memoryLimit and config.stackLimit (clamped to what the shadow stack holds); returns
 * config.moduleUrl (the extension's import.meta.url) malloc'ed, or NULL. */
static char *apply_config(const char *config, size_t config_len) {
  char *text = dup_bytes(config, config_len); /* the parser wants a NUL after the text */
  JSValue cfg = JS_ParseJSON(ctx, text, config_len, "config");
  free(text);
  JSValue lim = JS_GetPropertyStr(ctx, cfg, "memoryLimit");
  double limit = 0;
  if (JS_IsNumber(lim) && JS_ToFloat64(ctx, &limit, lim) == 0 && limit > 0) JS_SetMemoryLimit(rt, (size_t)limit);
  JS_FreeValue(ctx, lim);
  JSValue stk = JS_GetPropertyStr(ctx, cfg, "stackLimit");
  double stack = 0;
  if (JS_IsNumber(stk) && JS_ToFloat64(ctx, &stack, stk) == 0 && stack > 0) {
    if (stack < JS_STACK_LIMIT_MIN) stack = JS_STACK_LIMIT_MIN;
    if (stack > JS_STACK_LIMIT_MAX) stack = JS_STACK_LIMIT_MAX;
    JS_SetMaxStackSize(rt, (size_t)stack);
  }
  JS_FreeValue(ctx, stk);
  char *url = NULL;
  JSValue u = JS_GetPropertyStr(ctx, cfg, "moduleUrl");
  if (JS_IsString(u)) {
    size_t n;
    const char *p = JS_ToCStringLen(ctx, &n, u);
    if (p) { url = dup_bytes(p, n); JS_FreeCString(ctx, p); }
  }
  JS_FreeValue(ctx, u);
  JS_FreeValue(ctx, cfg);
  if (JS_HasException(ctx)) JS_FreeValue(ctx, JS_GetException(ctx));
  return url;
}

/* A module's evaluation promise after the job queue drained: its rejection, or an error if it still waits. */
static tagged_str *module_outcome(JSValue promise) {
  JSPromiseStateEnum state = JS_PromiseState(ctx, promise);
  if (state == JS_PROMISE_REJECTED) {
    JS_Throw(ctx, JS_PromiseResult(ctx, promise));
    JS_FreeValue(ctx, promise);
    return ret_exception();
  }
  JS_FreeValue(ctx, promise);
  if (state != JS_PROMISE_PENDING) return NULL;
  static const char msg[] = "Error: the extension's top level is still awaiting after it ran: top-level await may wait "
                            "on promises and imports, not on timers or host operations (do that in a handler)";
  /* Where the top level started its first host operation (the prelude's topLevelWait: its stack, whose frames
   * the host maps to the author's file and line), after the message. */
  JSValue fn = JS_GetPropertyStr(ctx, internal, "topLevelWait");
  JSValue where = JS_Call(ctx, fn, internal, 0, NULL);
  JS_FreeValue(ctx, fn);
  size_t n = 0;
  const char *w = JS_IsString(where) ? JS_ToCStringLen(ctx, &n, where) : NULL;
  JS_FreeValue(ctx, where);
  if (JS_HasException(ctx)) JS_FreeValue(ctx, JS_GetException(ctx));
  if (!w || n == 0) {
    if (w) JS_FreeCString(ctx, w);
    return ret_err_str(msg);
  }
  size_t len = sizeof msg - 1 + 1 + n;
  char *text = malloc(len);
  if (!text) { JS_FreeCString(ctx, w); return ret_err_str(msg); }
  memcpy(text, msg, sizeof msg - 1);
  text[sizeof msg - 1] = '\n';
  memcpy(text + sizeof msg, w, n);
  JS_FreeCString(ctx, w);
  return ret_err(text, len);
}

EXPORT("load") tagged_str *exp_load(char *config, size_t config_len, uint8_t *image, size_t image_len) {
  enter();
  if (loaded) {
    free_owned(config, config_len);
    free_owned(image, image_len);
    return ret_err_str("the extension is already loaded in this instance");
  }
  loaded = 1;
  /* The heap limit comes from the host's config; apply it before any extension code runs. */
  char *module_url = apply_config(config, config_len);
  JSValue cfg = JS_NewStringLen(ctx, config, config_len);
  free_owned(config, config_len);
  JSValue r = JS_IsFunction(ctx, internal_fns[F_CONFIGURE]) ? JS_Call(ctx, internal_fns[F_CONFIGURE], internal, 1, &cfg) : JS_UNDEFINED;
  JS_FreeValue(ctx, cfg);
  if (JS_IsException(r)) { free(module_url); free_owned(image, image_len); return ret_exception(); }
  JS_FreeValue(ctx, r);
  if (image_len) {
    JSValue r = eval_bytecode(image, image_len, module_url);
    free_owned(image, image_len);
    free(module_url);
    if (JS_IsException(r)) return ret_exception();
    if (JS_IsPromise(r)) { /* already rejected (the top level threw), or it may be while the jobs run */
      caller_reports = JS_VALUE_GET_PTR(r);
      track_rejection(ctx, r, JS_UNDEFINED, true, NULL);
    }
    drain_jobs();
    tagged_str *failed = JS_IsPromise(r) ? module_outcome(r) : (JS_FreeValue(ctx, r), NULL);
    caller_reports = NULL;
    if (failed) return failed;
  } else {
    free(module_url);
  }
  drain_jobs();
  JSValue fn = JS_GetPropertyStr(ctx, internal, "manifest");
  JSValue m = JS_Call(ctx, fn, internal, 0, NULL);
  JS_FreeValue(ctx, fn);
  if (JS_IsException(m)) return ret_exception();
  return ret_js_string(m);
}

POST_RETURN("load") void post_load(tagged_str *r) { free(r->ptr); }

static void cache_internal(void) {
  for (int i = 0; i < F_COUNT; i++) internal_fns[i] = JS_GetPropertyStr(ctx, internal, internal_names[i]);
  if (JS_HasException(ctx)) JS_FreeValue(ctx, JS_GetException(ctx));
}

static void call_internal(int which, int argc, JSValue *argv) {
  JSValue r = JS_Call(ctx, internal_fns[which], internal, argc, argv);
  for (int i = 0; i < argc; i++) JS_FreeValue(ctx, argv[i]);
  if (JS_IsException(r)) {
    size_t n;
    char *t = exception_text(&n);
    log_text(3, t, n);
    free(t);
  }
  JS_FreeValue(ctx, r);
  drain_jobs();
}

EXPORT("invoke") void exp_invoke(uint32_t inv, char *tool, size_t tool_len, char *args, size_t args_len) {
  if (!loaded || JS_IsUndefined(internal)) {
    static const char msg[] = "the extension is not loaded";
    imp_runtime_finish(inv, 1, msg, sizeof msg - 1);
  } else {
    JSValue argv[3] = {JS_NewUint32(ctx, inv), JS_NewStringLen(ctx, tool, tool_len),
                       JS_NewStringLen(ctx, args, args_len)};
    call_internal(F_INVOKE, 3, argv);
  }
  free_owned(tool, tool_len);
  free_owned(args, args_len);
}

EXPORT("complete") void exp_complete(uint32_t op, uint32_t is_err, char *p, size_t len) {
  if (loaded && !JS_IsUndefined(internal)) {
    JSValue argv[3] = {JS_NewUint32(ctx, op), JS_NewBool(ctx, !is_err), JS_NewStringLen(ctx, p, len)};
    call_internal(F_COMPLETE, 3, argv);
  }
  free_owned(p, len);
}

EXPORT("cancel") void exp_cancel(uint32_t inv, char *reason, size_t reason_len) {
  if (loaded && !JS_IsUndefined(internal)) {
    JSValue argv[2] = {JS_NewUint32(ctx, inv), JS_NewStringLen(ctx, reason, reason_len)};
    call_internal(F_CANCEL, 2, argv);
  }
  free_owned(reason, reason_len);
}

EXPORT("run-script") void exp_run_script(uint32_t inv, uint8_t *bc, size_t bc_len) {
  if (!loaded || JS_IsUndefined(internal)) {
    static const char msg[] = "the script host is not loaded";
    imp_runtime_finish(inv, 1, msg, sizeof msg - 1);
    free_owned(bc, bc_len);
    return;
  }
  JSValue begin[1] = {JS_NewUint32(ctx, inv)};
  call_internal(F_BEGIN_SCRIPT, 1, begin);
  JSValue value = eval_bytecode(bc, bc_len, NULL);
  free_owned(bc, bc_len);
  int ok = !JS_IsException(value);
  if (!ok) value = JS_GetException(ctx);
  JSValue end[3] = {JS_NewUint32(ctx, inv), JS_NewBool(ctx, ok), value};
  call_internal(F_END_SCRIPT, 3, end);
}

EXPORT("complete-bytes") void exp_complete_bytes(uint32_t op, uint32_t is_err, uint8_t *p, size_t len) {
  if (loaded && !JS_IsUndefined(internal)) {
    JSValue payload = is_err ? JS_NewStringLen(ctx, (const char *)p, len) : JS_NewArrayBufferCopy(ctx, p, len);
    JSValue argv[3] = {JS_NewUint32(ctx, op), JS_NewBool(ctx, !is_err), payload};
    call_internal(F_COMPLETE_BYTES, 3, argv);
  }
  free_owned(p, len);
}

EXPORT("compile") tagged_str *exp_compile(char *src, size_t src_len, char *name, size_t name_len, uint32_t module) {
  enter();
  /* QuickJS wants a NUL-terminated source; the host's buffer has exactly src_len bytes. */
  char *source = dup_bytes(src, src_len);
  char *filename = dup_bytes(name, name_len);
  free_owned(src, src_len);
  free_owned(name, name_len);
  /* A global script is compiled async: it may await at top level, and its value is {value: <last expression>}. */
  int flags = JS_EVAL_FLAG_COMPILE_ONLY | (module ? JS_EVAL_TYPE_MODULE : JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC);
  JSValue fn = JS_Eval(ctx, source, src_len, filename, flags);
  free(source);
  free(filename);
  if (JS_IsException(fn)) return ret_exception();
  size_t size;
  uint8_t *bc = JS_WriteObject(ctx, &size, fn, JS_WRITE_OBJ_BYTECODE);
  JS_FreeValue(ctx, fn);
  if (!bc) return ret_exception();
  char *out = dup_bytes((const char *)bc, size);
  js_free(ctx, bc);
  return ret_ok(out, size);
}

POST_RETURN("compile") void post_compile(tagged_str *r) { free(r->ptr); }
