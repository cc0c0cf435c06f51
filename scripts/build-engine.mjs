#!/usr/bin/env node
// Builds the kiln engine: quickjs-ng (fetched from PyPI, pinned by sha256) + guest/ glue + the prelude's
// source, compiled with Debian's clang/lld/wasi-libc into a wasm32-wasi reactor, pre-initialised by Wizer
// (runtime, context and evaluated prelude in the snapshot), wrapped into a component with jco, and
// transpiled once into host bindings. Every artifact is this component, byte for byte, plus custom sections.
//
// Output (build/engine/, never committed): engine.core.wasm, engine.wasm, bindings/, engine.json.
// Usage: node scripts/build-engine.mjs [--out DIR] [--force] [--prelude FILE]
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outDir = resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : join(root, 'build/engine'));
const force = args.includes('--force');
// --prelude FILE: an engine whose prelude is FILE's script instead of kiln's (the boundary fuzzer's attacker
// prelude, which holds the raw natives). Never used for the engine kiln serves with.
const preludeOverride = args.includes('--prelude') ? resolve(args[args.indexOf('--prelude') + 1]) : undefined;

// The engine's JavaScript: quickjs-ng, the newest release a registry carries (PyPI's `quickjs-ng` source
// distribution vendors it verbatim under upstream-quickjs/), fetched at build time and pinned by sha256.
export const QUICKJS = {
  name: 'quickjs-ng',
  version: '0.17.0',
  url: 'https://files.pythonhosted.org/packages/d6/a4/611b1c2e3a505dd66cc03fb6e5963f0550a09ef2bd7c51243a9237d64db8/quickjs_ng-0.17.0.2.tar.gz',
  sha256: '43d2e48272208721a7aaea8e3f02d4b9318f12ef20cc4f5421b59d9a470706ef',
  dir: 'quickjs_ng-0.17.0.2/upstream-quickjs',
};

// Edits applied to the fetched copy (never to anything in git). Each must match exactly `count` times.
/** A build-time edit that makes a function reserve `weight` bytes of shadow stack (KILN_WEIGH, below) right
 *  after `opening`, the text that begins its body. */
const weigh = (opening, weight) => ({ file: 'quickjs.c', count: 1, from: opening, to: `${opening}    KILN_WEIGH(${weight});\n` });

const PATCHES = [
  { // When memory is so short that even the error cannot be allocated, QuickJS throws without an error object
    // and the host could not tell a guest out of memory from any other failure. Record it (kiln_out_of_memory
    // in guest/glue.c), so a handler that fails after running out of memory is reported as such and its
    // guest discarded.
    file: 'quickjs.c', count: 1,
    from: 'JSValue JS_ThrowOutOfMemory(JSContext *ctx)\n{\n    JSRuntime *rt = ctx->rt;\n',
    to: 'extern int kiln_out_of_memory;\nJSValue JS_ThrowOutOfMemory(JSContext *ctx)\n{\n    JSRuntime *rt = ctx->rt;\n    kiln_out_of_memory = 1;\n' },
  { // The context's Math.random state is seeded from the clock when the context is made, which happens once,
    // in the snapshot: the engine's bytes would differ per build. Start from a constant instead (the build
    // stays reproducible); glue.c reseeds it per instance at the first call, so instances still differ.
    file: 'quickjs.c', count: 1,
    from: '    ctx->random_state = js__gettimeofday_us();\n',
    to: '    ctx->random_state = 0x2545F4914F6CDD1DULL;\n' },
  { // The same for performance's time origin (guest/web/process.js installs the guest's own `performance` at load).
    file: 'quickjs.c', count: 1,
    from: '    ctx->time_origin = js__now_ms();\n',
    to: '    ctx->time_origin = 0;\n' },
  { // Typed-array elements read and written by an int index inside the interpreter loop. quickjs-ng sends every
    // typed-array store through JS_SetPropertyValue and every read through js_get_fast_array_element, and in
    // V8's compiled wasm a call out of JS_CallInternal costs more than the access (the interpreter's live
    // values are spilled around it): a Uint8Array store cost about 40 ns against 16 ns in QuickJS 2025, and
    // the benchmark's sieve went 373 -> 317 ms with this (bench/peers, the engines alternated). Only the
    // cases with no conversion and no side effect take this path: an int value,
    // an index below the array's current length (kept up to date on detach and resize), a mutable buffer,
    // and not a BigInt array; everything else falls through to quickjs-ng's own code unchanged. The store
    // releases the array with kiln_free_obj, not quickjs-ng's JS_FreeValue, an out-of-line function: with
    // JS_FreeValue there, 3 sieves in a one-shot `kiln run` (Liftoff code) took 1.38-1.93 s against 1.06-1.73.
    file: 'quickjs.c', count: 1,
    from: 'static JSValue JS_CallInternal(JSContext *caller_ctx, JSValueConst func_obj,\n',
    to: `static inline __attribute__((always_inline)) bool kiln_ta_put_int(JSValueConst obj, JSValueConst prop, JSValueConst val)
{
    JSObject *p;
    uint32_t idx;
    int32_t v;

    if (JS_VALUE_GET_TAG(obj) != JS_TAG_OBJECT || JS_VALUE_GET_TAG(prop) != JS_TAG_INT ||
        JS_VALUE_GET_TAG(val) != JS_TAG_INT)
        return false;
    p = JS_VALUE_GET_OBJ(obj);
    switch (p->class_id) {
    case JS_CLASS_UINT8C_ARRAY: case JS_CLASS_INT8_ARRAY: case JS_CLASS_UINT8_ARRAY:
    case JS_CLASS_INT16_ARRAY: case JS_CLASS_UINT16_ARRAY: case JS_CLASS_INT32_ARRAY:
    case JS_CLASS_UINT32_ARRAY: case JS_CLASS_FLOAT64_ARRAY:
        break;
    default:
        return false;
    }
    idx = JS_VALUE_GET_INT(prop);
    if (idx >= p->u.array.count || p->u.typed_array->buffer->u.array_buffer->immutable)
        return false;
    v = JS_VALUE_GET_INT(val);
    switch (p->class_id) {
    case JS_CLASS_UINT8C_ARRAY: p->u.array.u.uint8_ptr[idx] = v < 0 ? 0 : v > 255 ? 255 : v; break;
    case JS_CLASS_INT8_ARRAY: case JS_CLASS_UINT8_ARRAY: p->u.array.u.uint8_ptr[idx] = v; break;
    case JS_CLASS_INT16_ARRAY: case JS_CLASS_UINT16_ARRAY: p->u.array.u.uint16_ptr[idx] = v; break;
    case JS_CLASS_INT32_ARRAY: case JS_CLASS_UINT32_ARRAY: p->u.array.u.uint32_ptr[idx] = v; break;
    default: p->u.array.u.double_ptr[idx] = v; break;
    }
    return true;
}

static inline __attribute__((always_inline)) bool kiln_ta_get(JSObject *p, uint32_t idx, JSValue *pval)
{
    switch (p->class_id) {
    case JS_CLASS_UINT8C_ARRAY: case JS_CLASS_UINT8_ARRAY:
        if (idx >= p->u.array.count) return false;
        *pval = js_int32(p->u.array.u.uint8_ptr[idx]);
        return true;
    case JS_CLASS_INT32_ARRAY:
        if (idx >= p->u.array.count) return false;
        *pval = js_int32(p->u.array.u.int32_ptr[idx]);
        return true;
    case JS_CLASS_FLOAT64_ARRAY:
        if (idx >= p->u.array.count) return false;
        *pval = js_float64(p->u.array.u.double_ptr[idx]);
        return true;
    default:
        return false;
    }
}

static inline __attribute__((always_inline)) void kiln_free_obj(JSContext *ctx, JSValue v)
{
    void *p = JS_VALUE_GET_PTR(v);
    if (JS_REF_COUNT(p) > 1)
        JS_REF_COUNT(p)--;
    else
        JS_FreeValue(ctx, v);
}

static JSValue JS_CallInternal(JSContext *caller_ctx, JSValueConst func_obj,
` },
  { file: 'quickjs.c', count: 1,
    from: '                sf->cur_pc = pc;\n                ret = JS_SetPropertyValue(ctx, sp[-3], sp[-2], sp[-1], JS_PROP_THROW_STRICT);\n',
    to: '                if (kiln_ta_put_int(sp[-3], sp[-2], sp[-1])) {\n                    kiln_free_obj(ctx, sp[-3]);\n                    sp -= 3;\n                    BREAK;\n                }\n                sf->cur_pc = pc;\n                ret = JS_SetPropertyValue(ctx, sp[-3], sp[-2], sp[-1], JS_PROP_THROW_STRICT);\n' },
  { file: 'quickjs.c', count: 2,
    from: '                    if (js_get_fast_array_element(ctx, p, idx, &val)) {\n',
    to: '                    if (kiln_ta_get(p, idx, &val) || js_get_fast_array_element(ctx, p, idx, &val)) {\n' },
  { // No debug dumps: quickjs-ng enables them whenever NDEBUG is unset, and then every opcode's dispatch reads
    // the runtime's dump flags (JS_DUMP_BYTECODE_STEP), which kiln never sets. Without them the component is
    // 42 KB smaller and a bare 12-million-turn loop takes 210 ms instead of 280. Assertions stay (NDEBUG is
    // not set): a broken invariant inside the engine traps instead of running on; NDEBUG would save 9 KB
    // more and about 3 %. Measured and rejected: a switch instead of computed gotos (the Emscripten
    // build's choice) is 15-25 % slower here.
    file: 'quickjs.c', count: 1,
    from: '#ifndef NDEBUG\n#define ENABLE_DUMPS\n#endif\n',
    to: '' },
  { // A decimal integer of up to 15 digits (Number('42'), JSON's integers, a numeric string from the host)
    // is exact in a double: read it directly instead of through js_atod's arbitrary-precision path, which
    // was 6 % of a guest->host call that returns a number as text (bench/peers hostCalls).
    file: 'quickjs.c', count: 1,
    from: '            d = js_atod(buf, NULL, radix, is_float ? 0 : JS_ATOD_INT_ONLY,\n                        &atod_mem);\n',
    to: `            if (!is_float && radix == 10 && j - is_neg <= 15) {
                int64_t v = 0;
                for (i = is_neg; i < j; i++)
                    v = v * 10 + (buf[i] - '0');
                d = is_neg ? -(double)v : (double)v;
            } else {
                d = js_atod(buf, NULL, radix, is_float ? 0 : JS_ATOD_INT_ONLY,
                            &atod_mem);
            }
` },
  { // `obj[key] = value;` compiled to 5 opcodes instead of 15 when the value is a constant or a variable read.
    // quickjs-ng's parser shuffles the stack so that ToPropertyKey(key) runs before the value when obj is an
    // object and after it when obj is null or undefined (its FIXME says so), which costs every indexed store
    // ten more opcodes: the sieve's `c[j] = 1` was two and a half times a field store. When the value's
    // evaluation is unobservable (a constant, or a read of a local, argument or closure variable that cannot
    // be in its dead zone) both orders are the same program, so the last pass rewrites
    //   swap dup is_undefined_or_null if_true L swap to_propkey swap L: swap V swap to_propkey swap put_array_el
    // (an expression statement: its value is not kept) to `to_propkey V put_array_el`: the key is converted first (running its toString if it has one), then
    // the store, which throws for a null or undefined obj as before. Anything else is left as it was.
    file: 'quickjs.c', count: 1,
    from: '        case OP_swap:\n            // transformation: swap swap -> nothing!\n',
    to: `        case OP_swap:
            if (code_match(&cc, pos_next, OP_dup, OP_is_undefined_or_null, OP_if_true, -1)) {
                /* kl/kc: the source position as the skipped source_locs would have left it, so that errors
                   point where they pointed before (the key's conversion and the store each get theirs) */
                int l1 = cc.label, v, vop, kl = line_num, kc = col_num, tl, tc;
                if (cc.line_num >= 0) { kl = cc.line_num; kc = cc.col_num; }
                if (code_match(&cc, cc.pos, OP_swap, OP_to_propkey, OP_swap, OP_label, -1) && cc.label == l1 &&
                    label_slots[l1].ref_count == 1) {
                    if (cc.line_num >= 0) { kl = cc.line_num; kc = cc.col_num; }
                    tl = kl;
                    tc = kc;
                    if (code_match(&cc, cc.pos, OP_swap, -1)) {
                        if (cc.line_num >= 0) { kl = cc.line_num; kc = cc.col_num; }
                        v = cc.pos;
                        while (v < bc_len && bc_buf[v] == OP_source_loc) {
                            kl = get_u32(bc_buf + v + 1);
                            kc = get_u32(bc_buf + v + 5);
                            v += opcode_info[OP_source_loc].size;
                        }
                        vop = v < bc_len ? bc_buf[v] : -1;
                        if ((vop == OP_push_i32 || vop == OP_push_const || vop == OP_push_atom_value ||
                             vop == OP_undefined || vop == OP_null || vop == OP_push_true || vop == OP_push_false ||
                             vop == OP_get_loc || vop == OP_get_arg || vop == OP_get_var_ref) &&
                            code_match(&cc, v + opcode_info[vop].size, OP_swap, OP_to_propkey, OP_swap,
                                       OP_put_array_el, -1)) {
                            if (cc.line_num >= 0) { kl = cc.line_num; kc = cc.col_num; }
                            label_slots[l1].ref_count--;
                            add_pc2line_info(s, bc_out.size, tl, tc);
                            dbuf_putc(&bc_out, OP_to_propkey);
                            if (vop == OP_push_i32)
                                push_short_int(&bc_out, get_u32(bc_buf + v + 1));
                            else if (vop == OP_get_loc || vop == OP_get_arg || vop == OP_get_var_ref)
                                put_short_code(&bc_out, vop, get_u16(bc_buf + v + 1));
                            else
                                dbuf_put(&bc_out, bc_buf + v, opcode_info[vop].size);
                            line_num = kl;
                            col_num = kc;
                            add_pc2line_info(s, bc_out.size, line_num, col_num);
                            dbuf_putc(&bc_out, OP_put_array_el);
                            pos_next = cc.pos;
                            break;
                        }
                    }
                }
            }
            // transformation: swap swap -> nothing!
` },
  { // Assignment statements to `let` variables: quickjs-ng fuses `dup put_loc drop` into `put_loc` (and
    // `post_inc put_loc drop` into `inc put_loc`) for `var`s and arguments, but not for the checked forms that
    // `let` variables use, so `s += x;` on a let cost 6 opcodes instead of 4 and `i++;` 4 instead of 3. The
    // same fusions for put_loc_check and put_var_ref_check: the dead-zone check stays where it was.
    file: 'quickjs.c', count: 1,
    from: '        case OP_dup:\n            {\n                /* Transformation: dup put_x(n) drop -> put_x(n) */\n',
    to: `        case OP_dup:
            if (code_match(&cc, pos_next, M2(OP_put_loc_check, OP_put_var_ref_check), -1, OP_drop, -1)) {
                if (cc.line_num >= 0) line_num = cc.line_num;
                if (cc.col_num >= 0) col_num = cc.col_num;
                add_pc2line_info(s, bc_out.size, line_num, col_num);
                dbuf_putc(&bc_out, cc.op);
                dbuf_put_u16(&bc_out, cc.idx);
                pos_next = cc.pos;
                break;
            }
            {
                /* Transformation: dup put_x(n) drop -> put_x(n) */
` },
  { file: 'quickjs.c', count: 1,
    from: '                int op1, idx;\n                if (code_match(&cc, pos_next, M3(OP_put_loc, OP_put_arg, OP_put_var_ref), -1, OP_drop, -1)) {\n',
    to: `                int op1, idx;
                if (code_match(&cc, pos_next, M2(OP_put_loc_check, OP_put_var_ref_check), -1, OP_drop, -1)) {
                    if (cc.line_num >= 0) line_num = cc.line_num;
                    if (cc.col_num >= 0) col_num = cc.col_num;
                    add_pc2line_info(s, bc_out.size, line_num, col_num);
                    dbuf_putc(&bc_out, OP_dec + (op - OP_post_dec));
                    dbuf_putc(&bc_out, cc.op);
                    dbuf_put_u16(&bc_out, cc.idx);
                    pos_next = cc.pos;
                    break;
                }
                if (code_match(&cc, pos_next, M3(OP_put_loc, OP_put_arg, OP_put_var_ref), -1, OP_drop, -1)) {
` },
  // Every allocation QuickJS's accounting refuses (the heap limit) or the allocator cannot make sets the
  // glue's out-of-memory flag. Not every such failure reaches JS_ThrowOutOfMemory (patched below): some paths
  // return a bare exception with nothing pending, and the guest then caught null and went on (measured:
  // 'ab'.repeat(5e5).replace(/(a)(b)/g, 'x') under a 64 MiB limit) where the guest must be discarded.
  ...[
    '    if (unlikely(s->malloc_size + (count * size) > s->malloc_limit - 1))\n        return NULL;\n',
    '    if (unlikely(s->malloc_size + size > s->malloc_limit - 1))\n        return NULL;\n',
    '    if (s->malloc_size + size - old_size > s->malloc_limit - 1)\n        return NULL;\n',
  ].map((from) => ({ file: 'quickjs.c', count: 1, from, to: from.replace('        return NULL;\n', '        return kiln_refused();\n') })),
  ...['calloc(rt, count, size)', 'malloc(rt, size)', 'realloc(rt, ptr, size)'].map((call) => ({
    file: 'quickjs.c', count: 1,
    from: `    ptr = js_arena_${call};\n    if (!ptr)\n        return NULL;\n`,
    to: `    ptr = js_arena_${call};\n    if (!ptr)\n        return kiln_refused();\n`,
  })),
  { file: 'quickjs.c', count: 1,
    from: 'void *js_calloc_rt(JSRuntime *rt, size_t count, size_t size)\n{\n',
    to: 'extern int kiln_out_of_memory;\nstatic void *kiln_refused(void)\n{\n    kiln_out_of_memory = 1;\n    return NULL;\n}\n\nvoid *js_calloc_rt(JSRuntime *rt, size_t count, size_t size)\n{\n' },
  // Stack weights. QuickJS's own stack check (a catchable RangeError) measures the wasm shadow stack, but a
  // recursion made of C frames that keep nothing there (JSON.stringify of nested arrays, Array.prototype.flat,
  // a chain of proxies, the parser) grows only the host's native stack, and that overflow is not catchable:
  // it leaves the instance mid-operation, so the host discards it. Each guarded frame that stays on the stack
  // through such a recursion (every js_check_stack_overflow caller but the interpreter's own, whose locals
  // already live on the shadow stack) reserves KILN_STACK_WEIGHT bytes of shadow stack, as do the proxy traps
  // and the parser's unary levels; its assignment-expression and statement levels reserve KILN_PARSE_WEIGHT
  // and each of its eight binary-precedence levels KILN_PARSE_LEVEL_WEIGHT (a parenthesis nests all of them:
  // ~1.5 KB of native stack per level in V8's baseline code), so QuickJS's limit is reached first. glue.c sets that limit from the native stack the host reports (host/engine/stack.ts).
  { file: 'quickjs.c', count: 1,
    from: 'static inline bool js_check_stack_overflow(JSRuntime *rt, size_t alloca_size)\n{\n    uintptr_t sp;\n    sp = js_get_stack_pointer() - alloca_size;\n    return unlikely(sp < rt->stack_limit);\n}\n',
    to: 'static inline bool js_check_stack_overflow_(JSRuntime *rt, size_t alloca_size)\n{\n    uintptr_t sp;\n    sp = js_get_stack_pointer() - alloca_size;\n    return unlikely(sp < rt->stack_limit);\n}\n\n' +
      // The empty asm takes the block's address, so the compiler keeps all n bytes (a plain store would let
      // it shrink the block to the byte it writes).
      '#define KILN_WEIGH(n) ({ char *kiln_w_ = __builtin_alloca(n); __asm__ volatile("" : : "r"(kiln_w_)); (void)0; })\n' +
      '#define KILN_STACK_WEIGHT 128\n#define KILN_PARSE_WEIGHT 256\n#define KILN_PARSE_LEVEL_WEIGHT 64\n' +
      '#define js_check_stack_overflow(rt, n) (KILN_WEIGH(KILN_STACK_WEIGHT), js_check_stack_overflow_(rt, n))\n' },
  { file: 'quickjs.c', count: 1,
    from: '    if (js_check_stack_overflow(rt, alloca_size))\n',
    to: '    if (js_check_stack_overflow_(rt, alloca_size))\n' },
  { file: 'quickjs.c', count: 13, from: ' = get_proxy_method(ctx, &method, ', to: ' = get_proxy_method((KILN_WEIGH(KILN_STACK_WEIGHT), ctx), &method, ' },
  weigh('static __exception int js_parse_assign_expr2(JSParseState *s, int parse_flags)\n{\n    int opcode, op, scope;\n    JSAtom name0 = JS_ATOM_NULL;\n    JSAtom name;\n', 'KILN_PARSE_WEIGHT'),
  weigh('static __exception int js_parse_expr_binary(JSParseState *s, int level,\n                                            int parse_flags)\n{\n    int op, opcode;\n', 'KILN_PARSE_LEVEL_WEIGHT'),
  weigh('static __exception int js_parse_unary(JSParseState *s, int parse_flags)\n{\n    int op;\n', 'KILN_STACK_WEIGHT'),
  weigh('                                                  int decl_mask)\n{\n    JSContext *ctx = s->ctx;\n    JSAtom label_name;\n    int tok;\n', 'KILN_PARSE_WEIGHT'),
  // The fast path for built-in iterators calls their `next` directly, past js_call_c_function's check: a chain
  // of iterator helpers (it.map(f).map(f)...) or of Iterator.concat recursed unchecked.
  { file: 'quickjs.c', count: 1,
    from: '            func = p->u.cfunc.c_function;\n            return func.iterator_next(ctx, enum_obj, argc, argv,\n',
    to: '            if (js_check_stack_overflow(ctx->rt, 0)) {\n                *pdone = false;\n                return JS_ThrowStackOverflow(ctx);\n            }\n            func = p->u.cfunc.c_function;\n            return func.iterator_next(ctx, enum_obj, argc, argv,\n' },
  // A function nested in a function body is parsed past js_parse_statement_or_decl (js_parse_source_element).
  weigh('                                               JSFunctionDef **pfd)\n{\n    JSContext *ctx = s->ctx;\n    JSFunctionDef *fd = s->cur_func;\n', 'KILN_PARSE_WEIGHT'),
  // `new new ... X` recurses in js_parse_postfix_expr itself, `class extends class extends ...` through
  // js_parse_class: neither passes the weighted levels above.
  weigh('static __exception int js_parse_postfix_expr(JSParseState *s, int parse_flags)\n{\n    FuncCallType call_type;\n', 'KILN_STACK_WEIGHT'),
  weigh('                                      JSParseExportEnum export_flag)\n{\n    JSContext *ctx = s->ctx;\n    JSFunctionDef *fd = s->cur_func;\n    JSAtom name = JS_ATOM_NULL, class_name = JS_ATOM_NULL, class_name1;\n', 'KILN_PARSE_WEIGHT'),
  // Defining a property through a proxy takes JS_DefineProperty's large frame per level (measured: a chain of
  // empty proxies overflowed the main thread's native stack at 1,757 levels with the common weight).
  { file: 'quickjs.c', count: 1,
    from: ' = get_proxy_method((KILN_WEIGH(KILN_STACK_WEIGHT), ctx), &method, obj, JS_ATOM_defineProperty);',
    to: ' = get_proxy_method((KILN_WEIGH(3 * KILN_STACK_WEIGHT), ctx), &method, obj, JS_ATOM_defineProperty);' },
  // A parse stopped by a stack overflow (or out of memory) reports that error. Some of the parser's callers
  // report their own SyntaxError about the token where a nested level gave up, over the pending RangeError:
  // `function f(){` nested 100,000 deep said "missing formal parameter", 100,000 `with({})` "invalid property
  // name" (Node: RangeError for both). Other pending errors are still replaced, as before: the parser's
  // lookahead leaves some behind (its "XXX: should clear the exception"), and they name the wrong place.
  { file: 'quickjs.c', count: 1,
    from: '    va_list ap;\n    int backtrace_flags;\n\n    va_start(ap, fmt);\n    JS_ThrowError2(ctx, JS_SYNTAX_ERROR, false, fmt, ap);\n',
    to: '    va_list ap;\n    int backtrace_flags;\n\n    if (kiln_parse_stopped(ctx))\n        return -1;\n    va_start(ap, fmt);\n    JS_ThrowError2(ctx, JS_SYNTAX_ERROR, false, fmt, ap);\n' },
  { file: 'quickjs.c', count: 1,
    from: 'int JS_PRINTF_FORMAT_ATTR(2, 3) js_parse_error(JSParseState *s, JS_PRINTF_FORMAT const char *fmt, ...)\n',
    to: `/* Whether the pending exception is a RangeError or an InternalError (the stack overflow, out of memory). */
static bool kiln_parse_stopped(JSContext *ctx)
{
    JSValue e = ctx->rt->current_exception;
    JSObject *proto;
    if (JS_VALUE_GET_TAG(e) != JS_TAG_OBJECT)
        return false;
    proto = JS_VALUE_GET_OBJ(e)->shape->proto;
    return proto == JS_VALUE_GET_OBJ(ctx->native_error_proto[JS_RANGE_ERROR]) ||
           proto == JS_VALUE_GET_OBJ(ctx->native_error_proto[JS_INTERNAL_ERROR]);
}

int JS_PRINTF_FORMAT_ATTR(2, 3) js_parse_error(JSParseState *s, JS_PRINTF_FORMAT const char *fmt, ...)
` },
  // Promise.any's AggregateError says why, as in V8 and SpiderMonkey (quickjs-ng's message was empty).
  { file: 'quickjs.c', count: 1,
    from: '    if (JS_IsException(obj))\n        return obj;\n    JS_DefinePropertyValueConst(ctx, obj, JS_ATOM_errors, errors,\n',
    to: '    if (JS_IsException(obj))\n        return obj;\n    JS_DefinePropertyValue(ctx, obj, JS_ATOM_message, JS_NewString(ctx, "All promises were rejected"),\n                           JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);\n    JS_DefinePropertyValueConst(ctx, obj, JS_ATOM_errors, errors,\n' },
  // An array met again while it is being joined (it contains itself, directly or not) joins as "", as in V8
  // and SpiderMonkey: quickjs-ng recursed until the stack overflowed (`a.push(a); String(a)` was a RangeError,
  // Node's "1,"). toString, toLocaleString and every string conversion of an array go through join.
  { file: 'quickjs.c', count: 1,
    from: 'static JSValue js_array_join(JSContext *ctx, JSValueConst this_val,\n                             int argc, JSValueConst *argv, int toLocaleString)\n{\n',
    to: `struct kiln_joining { void *obj; struct kiln_joining *prev; };
static struct kiln_joining *kiln_joining; /* the arrays being joined, innermost first */
static JSValue js_array_join1(JSContext *ctx, JSValueConst this_val,
                              int argc, JSValueConst *argv, int toLocaleString);

static JSValue js_array_join(JSContext *ctx, JSValueConst this_val,
                             int argc, JSValueConst *argv, int toLocaleString)
{
    struct kiln_joining me;
    JSValue r;
    if (JS_VALUE_GET_TAG(this_val) != JS_TAG_OBJECT)
        return js_array_join1(ctx, this_val, argc, argv, toLocaleString);
    for (struct kiln_joining *j = kiln_joining; j; j = j->prev) {
        if (j->obj == JS_VALUE_GET_PTR(this_val))
            return JS_AtomToString(ctx, JS_ATOM_empty_string);
    }
    me.obj = JS_VALUE_GET_PTR(this_val);
    me.prev = kiln_joining;
    kiln_joining = &me;
    r = js_array_join1(ctx, this_val, argc, argv, toLocaleString);
    kiln_joining = me.prev;
    return r;
}

static JSValue js_array_join1(JSContext *ctx, JSValueConst this_val,
                              int argc, JSValueConst *argv, int toLocaleString)
{
` },
  // Date.parse as V8 reads the same strings: a second year is no date (quickjs-ng took the "32" of "Jan 32 2024"
  // for the year 1932, then let 2024 replace it: 1 January 2024, where Node says NaN), and an ISO string's
  // "t" and "z" may be lower-case.
  { file: 'quickjs.c', count: 1,
    from: '                if (p - p_start > 2) {\n                    fields[0] = val;\n                    has_year = true;\n                } else\n                if (val < 1 || val > 31) {\n',
    to: '                if ((p - p_start > 2 || val < 1 || val > 31) && has_year) {\n                    return false;\n                } else\n                if (p - p_start > 2) {\n                    fields[0] = val;\n                    has_year = true;\n                } else\n                if (val < 1 || val > 31) {\n' },
  { file: 'quickjs.c', count: 1,
    from: "    if (string_skip_char(sp, &p, 'T')) {\n        *is_local = true;\n",
    to: "    if (string_skip_char(sp, &p, 'T') || string_skip_char(sp, &p, 't')) {\n        *is_local = true;\n" },
  { file: 'quickjs.c', count: 1, from: "    if (sgn != 'Z') {\n        return false;\n", to: "    if (sgn != 'Z' && sgn != 'z') {\n        return false;\n" },
  { // kiln_seed_random: the per-instance reseed glue.c calls.
    file: 'quickjs.c', count: 1,
    from: 'JSValue JS_ThrowOutOfMemory(JSContext *ctx)\n',
    to: 'void kiln_seed_random(JSContext *ctx, uint64_t seed)\n{\n    ctx->random_state = seed ? seed : 1;\n}\n\nJSValue JS_ThrowOutOfMemory(JSContext *ctx)\n' },
];

// Regexp backtracking already polls the interrupt handler (lre_check_timeout), stack overflow is a
// RangeError and number formatting rounds correctly without directed rounding modes: quickjs-ng needs no
// other change for wasm32-wasi.
const QJS_SOURCES = ['quickjs.c', 'libregexp.c', 'libunicode.c', 'dtoa.c'];
const GLUE_SOURCES = ['glue.c'];
// -Os, not -O2: measured here, the -Os interpreter is both 30 % smaller and faster on call-heavy code (fib
// 42 -> 30 ms, sort 132 -> 110 ms; sieve, JSON and no-op calls within noise): V8 compiles and tiers less code.
const CFLAGS = ['--target=wasm32-wasi', '-Os', '-w', '-fno-ident', '-D_GNU_SOURCE'];
// --max-memory: a hard ceiling on any instance's linear memory (QuickJS's own limit is set lower per
// extension at load); past it malloc fails inside the guest, never on the host.
const LDFLAGS = ['--target=wasm32-wasi', '-mexec-model=reactor', '-Wl,--stack-first',
  '-Wl,-z,stack-size=2097152', '-Wl,--max-memory=536870912', '-Wl,--strip-all', '-lm'];

const WASM_OPT_FEATURES = ['--enable-bulk-memory', '--enable-sign-ext', '--enable-nontrapping-float-to-int', '--enable-mutable-globals', '--enable-multivalue', '--enable-reference-types'];

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const log = (msg) => process.stderr.write(`[engine] ${msg}\n`);

async function fetchQuickjs(cacheDir, workDir) {
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, QUICKJS.url.slice(QUICKJS.url.lastIndexOf('/') + 1));
  if (!existsSync(tgz)) {
    log(`fetching ${QUICKJS.name} ${QUICKJS.version} from PyPI`);
    const res = await fetch(QUICKJS.url);
    if (!res.ok) throw new Error(`fetching ${QUICKJS.url} failed: HTTP ${res.status}`);
    writeFileSync(tgz + '.part', Buffer.from(await res.arrayBuffer()));
    renameSync(tgz + '.part', tgz);
  }
  const actual = sha256(readFileSync(tgz));
  if (actual !== QUICKJS.sha256) {
    rmSync(tgz);
    throw new Error(`${tgz} does not match its pinned sha256 (got ${actual}); refusing to build`);
  }
  const src = join(workDir, 'quickjs-src');
  rmSync(src, { recursive: true, force: true });
  mkdirSync(src, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', src, '--strip-components=2', QUICKJS.dir]);
  for (const p of PATCHES) {
    const file = join(src, p.file);
    const text = readFileSync(file, 'utf8');
    const n = text.split(p.from).length - 1;
    if (n !== p.count) throw new Error(`patch for ${p.file} matched ${n} times, expected ${p.count}: ${JSON.stringify(p.from)}`);
    writeFileSync(file, text.split(p.from).join(p.to));
  }
  return src;
}

function run(cmd, argv, cwd) {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, argv, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${cmd} ${argv.join(' ')} exited ${code}`))));
  });
}

async function compileAll(jobs) {
  const queue = [...jobs];
  const workers = Array.from({ length: Math.max(1, cpus().length) }, async () => {
    while (queue.length) { const j = queue.shift(); await run('clang', j.argv, j.cwd); }
  });
  await Promise.all(workers);
}

// Everything the engine's bytes depend on; the build is skipped when engine.json records the same hash.
function inputsHash() {
  const h = createHash('sha256');
  const guestFiles = readdirSync(join(root, 'guest'), { recursive: true, withFileTypes: true }).filter((d) => d.isFile())
    .map((d) => relative(root, join(d.parentPath ?? d.path, d.name))).sort();
  const files = [...guestFiles, 'wit/kiln.wit', 'scripts/build-engine.mjs', 'host/engine/wasm-binary.ts'];
  for (const f of files) h.update(f).update(readFileSync(join(root, f)));
  if (preludeOverride) h.update('prelude').update(readFileSync(preludeOverride));
  const version = (p) => JSON.parse(readFileSync(join(root, 'node_modules', p, 'package.json'), 'utf8')).version;
  h.update(JSON.stringify({ jco: version('@bytecodealliance/jco'), rollup: version('@rollup/wasm-node'), binaryen: version('binaryen'), wizer: version('@bytecodealliance/wizer-linux-x64'), clang: execFileSync('clang', ['--version']).toString().split('\n')[0] }));
  return h.digest('hex');
}

export async function buildEngine() {
  const inputs = inputsHash();
  const infoFile = join(outDir, 'engine.json');
  if (!force && existsSync(infoFile) && JSON.parse(readFileSync(infoFile, 'utf8')).inputs === inputs) {
    log(`up to date (${outDir})`);
    return JSON.parse(readFileSync(infoFile, 'utf8'));
  }
  // The registry tarball is shared; sources and objects are per output directory, so builds never collide.
  const work = join(outDir, '.work');
  const src = await fetchQuickjs(join(root, 'build/cache'), work);
  const objDir = join(work, 'obj');
  rmSync(objDir, { recursive: true, force: true });
  mkdirSync(objDir, { recursive: true });
  const guestDir = join(root, 'guest');
  writeFileSync(join(work, 'prelude.c'), preludeC(await preludeSource()));
  // Compile with relative paths from each source directory so no absolute path reaches the binary.
  const jobs = [
    ...QJS_SOURCES.map((f) => ({ cwd: src, argv: [...CFLAGS, '-c', f, '-o', join(objDir, f + '.o')] })),
    ...GLUE_SOURCES.map((f) => ({ cwd: guestDir, argv: [...CFLAGS, '-I', src, '-c', f, '-o', join(objDir, f + '.o')] })),
    { cwd: work, argv: [...CFLAGS, '-c', 'prelude.c', '-o', join(objDir, 'prelude.c.o')] },
  ];
  log(`compiling ${jobs.length} C files with clang`);
  await compileAll(jobs);
  mkdirSync(outDir, { recursive: true });
  const raw = join(work, 'engine.raw.wasm');
  const objs = [...QJS_SOURCES, ...GLUE_SOURCES, 'prelude.c'].map((f) => join(objDir, f + '.o'));
  await run('clang', [...LDFLAGS, ...objs, '-o', raw], objDir);
  // The snapshot: runtime, context and the evaluated prelude, taken once here instead of in every instance.
  const snap = join(work, 'engine.snap.wasm');
  await run(wizerBinary(), ['--allow-wasi', '--init-func', 'kiln-init', '-o', snap, raw], work);
  // binaryen's size optimisations over the whole linked module (clang optimises per file): about 100 KB less
  // code for V8 to compile in every process, at equal speed (measured with bench/peers: fib, sort, sieve).
  const optimised = join(work, 'engine.opt.wasm');
  await run(join(root, 'node_modules/binaryen/bin/wasm-opt'), [...WASM_OPT_FEATURES, '-Os', snap, '-o', optimised], work);
  // Then the data segments (wasm-opt's memory packing splits them again around every run of zeros).
  const { mergeDataSegments, withoutCustomSections } = await import(pathToFileURL(join(root, 'dist/host/engine/wasm-binary.js')).href);
  const merged = mergeDataSegments(readFileSync(optimised), SEGMENT_GAP);
  const core = join(outDir, 'engine.core.wasm');
  writeFileSync(core, merged.module);
  log(`snapshot: ${merged.before} data segments merged into ${merged.after}`);
  const { componentEmbed, componentNew, transpile } = await import('@bytecodealliance/jco');
  const witSource = readFileSync(join(root, 'wit/kiln.wit'), 'utf8');
  const embedded = await componentEmbed({ binary: readFileSync(core), witSource, world: 'extension' });
  const adapter = readFileSync(join(root, 'node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm'));
  // Without the names of the adapter's functions and of the component's parts (16 KB that every artifact
  // would carry; traps still name the export that failed).
  const component = withoutCustomSections(await componentNew(embedded, [['wasi_snapshot_preview1', adapter]]));
  writeFileSync(join(outDir, 'engine.wasm'), component);
  log(`component ${component.length} bytes, sha256 ${sha256(component)}`);
  const bindings = join(outDir, 'bindings');
  rmSync(bindings, { recursive: true, force: true });
  const { files } = await transpile(component, { name: 'engine', instantiation: 'async', noTypescript: true, quiet: true });
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(bindings, name)), { recursive: true });
    if (name === 'engine.js') writeFileSync(join(bindings, 'engine.cjs'), commonJsBindings(slimBindings(Buffer.from(bytes).toString('utf8'))));
    else writeFileSync(join(bindings, name), bytes);
  }
  const info = {
    id: sha256(`kiln-engine\n${sha256(component)}\n`),
    componentSha256: sha256(component),
    quickjs: { name: QUICKJS.name, version: QUICKJS.version, url: QUICKJS.url, sha256: QUICKJS.sha256 },
    inputs,
  };
  writeFileSync(join(outDir, 'engine.json'), JSON.stringify(info, null, 2) + '\n');
  log(`engine id ${info.id}`);
  return info;
}

/** `js` with `from` (a string, or a regexp) replaced by `to`. It must match exactly `count` times (at least once
 *  when `count` is undefined): jco is pinned, so a new jco fails the build here, not at run time. */
function editBindings(js, from, to, count) {
  const n = typeof from === 'string' ? js.split(from).length - 1 : (js.match(from) ?? []).length;
  if (count !== undefined ? n !== count : n === 0) throw new Error(`bindings edit matched ${n} times, expected ${count ?? 'some'}: ${from}`);
  return typeof from === 'string' ? js.split(from).join(to) : js.replace(from, to);
}

/**
 * The per-call path of jco's generated bindings, made lean. Every import and export wrapper opened and
 * closed an async-task record (startCurrentTask/endCurrentTask: a Map lookup, an object, two array pushes)
 * and built debug-log argument objects that a `process.env.JCO_DEBUG` lookup then threw away; our world is
 * synchronous, so neither does anything for us. utf8Encode encoded every string into a fresh buffer and
 * copied it; now a short ASCII string (a tool name, a small argument, a vars value) is written into guest
 * memory by a loop, and any other up to 4096 characters with encodeInto (TextEncoder.encode of a short string
 * costs several hundred nanoseconds; a cache of encodings missed on every fresh string, such as most vars
 * values, once full). Each edit must match
 * exactly the expected number of times (jco is pinned): a new jco fails the build here, not at run time.
 */
export function slimBindings(js) {
  const edit = (from, to, count) => { js = editBindings(js, from, to, count); };
  // Not a speed edit: a string the guest hands the host keeps a leading U+FEFF. jco's decoder is a default
  // TextDecoder, which drops a byte order mark at the start of every text it decodes: vars.set('\uFEFFabc')
  // and vars.set('abc') were one key, and a log line or URL lost its first character (wasmtime keeps it).
  edit('const utf8Decoder = new TextDecoder();', "const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });", 1);
  // One task record per import and export wrapper: 60 since WIT 0.7.0 (51 before 0.6.0, plus the eight imports
  // of the `fs` interface, plus `runtime.clear-timer`).
  edit(/\n *const _(?:interface|wasm)_call_currentTaskID = startCurrentTask\([^)]*\);/g, '', 60);
  edit(/\n *endCurrentTask\(0\);/g, '', 60);
  // _debugLog(...) statements: their arguments are object literals, so a balanced scan finds each end.
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
    return ptr;`, 1);
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
`, 1);
  edit(/utf8Decoder\.decode\(new Uint8Array\(memory0\.buffer, (ptr\d+), (len\d+)\)\)/g, 'utf8Decode(memory0, $1, $2)', 33);
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
      view.setUint32(arg2 + 4, ptr1, true);`, 1);
  // kiln's own imports straight to their trampolines. jco hands the main module a shim for every import that
  // lowers through its memory (the shim's table is filled once memory exists), so each call went wasm -> shim ->
  // call_indirect -> JS; the trampolines read memory0 and realloc0 only when called, which is always after
  // instantiation, so the main module can import them directly. The WASI adapter's imports keep their shims.
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
 * The bindings as a CommonJS module (bindings/engine.cjs): Node loads it with `require`, which costs ~2 ms,
 * where the first `import()` of an ES module in a process starts Node's ES module loader (~7-10 ms on this
 * machine): a cost of every `kiln` command and of every session worker. jco's module has one export and no
 * imports; its one `import.meta.url` is a default for a `getCoreModule` kiln always passes.
 */
export function commonJsBindings(js) {
  const edit = (from, to) => { js = editBindings(js, from, to, 1); };
  if (/^\s*(import|export)\b/m.test(js.replace(/^export function instantiate\(/m, ''))) {
    throw new Error('bindings (CommonJS): jco emitted an import or export besides `export function instantiate`');
  }
  edit('export function instantiate(', 'function instantiate(');
  edit('import.meta.url', "require('node:url').pathToFileURL(__filename)");
  return `'use strict';\n${js}\nmodule.exports = { instantiate };\n`;
}

/** Data segments closer than this are merged (the zeros between them are written out), and runs of zeros at
 *  least this long are not written at all (memory starts zeroed): Wizer emits one segment per changed
 *  region, and wasm-opt splits them at every run of zeros. 8 is the smallest module (each segment's header
 *  costs about as much as 8 zeros): 5,359 segments, 21 KB less than a gap of 32 (751 segments) at the same
 *  instantiation time, measured here. */
const SEGMENT_GAP = 8;

/** guest/web (bundled) and the prelude's factory as one script whose value is the factory. */
async function preludeSource() {
  if (preludeOverride) return readFileSync(preludeOverride, 'utf8');
  // guest/web/ is ES modules, one concept each; rollup joins them into one function scope (deterministic
  // output, no module loader at run time).
  const { rollup } = await import('@rollup/wasm-node');
  const bundle = await rollup({ input: join(root, 'guest/web/index.js'), treeshake: false, onwarn: (w) => { throw new Error(`guest/web: ${w.message}`); } });
  const { output } = await bundle.generate({ format: 'iife', name: 'kilnWeb', strict: true, indent: false });
  await bundle.close();
  return `(function () {\n${output[0].code}\nconst kilnInstallWeb = kilnWeb.installWeb;\nreturn (\n${readFileSync(join(root, 'guest/prelude.js'), 'utf8')}\n);\n})()`;
}

/** The prelude as a C array, linked into the engine: it belongs to the engine, never to an artifact. */
function preludeC(source) {
  const bytes = Buffer.from(source, 'utf8');
  const lines = [];
  for (let i = 0; i < bytes.length; i += 24) lines.push(Array.from(bytes.subarray(i, i + 24), (b) => `${b}`).join(','));
  return `/* generated by scripts/build-engine.mjs from guest/web/ and guest/prelude.js */\n` +
    `#include <stddef.h>\nchar kiln_prelude_source[] = {\n${lines.join(',\n')},0};\n` +
    `const size_t kiln_prelude_length = ${bytes.length};\n`;
}

function wizerBinary() {
  const bin = join(root, 'node_modules/@bytecodealliance/wizer-linux-x64/wizer');
  if (!existsSync(bin)) throw new Error(`no Wizer binary at ${bin}: run npm ci (the optional package @bytecodealliance/wizer-linux-x64 carries it; the engine is built on x86-64 Linux)`);
  return bin;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildEngine().catch((e) => { console.error(`[engine] build failed: ${e.message}`); process.exit(1); });
}
