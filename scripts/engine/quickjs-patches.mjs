// The quickjs-ng the engine is built from, and kiln's edits to it, as data (scripts/build-engine.mjs fetches
// the release, checks its sha256, applies PATCHES to the fetched copy and compiles it). Nothing in git is
// patched. Each patch replaces `from` by `to` in `file` and must match exactly `count` times: a new quickjs-ng
// fails the build at the patch that no longer fits, never at run time. The engine's bytes depend on this file
// (it is one of build-engine.mjs's inputs).

// The engine's JavaScript: quickjs-ng, the newest release a registry carries (PyPI's `quickjs-ng` source
// distribution vendors it verbatim under upstream-quickjs/), fetched at build time and pinned by sha256.
export const QUICKJS = {
  name: 'quickjs-ng',
  version: '0.17.0',
  url: 'https://files.pythonhosted.org/packages/d6/a4/611b1c2e3a505dd66cc03fb6e5963f0550a09ef2bd7c51243a9237d64db8/quickjs_ng-0.17.0.2.tar.gz',
  sha256: '43d2e48272208721a7aaea8e3f02d4b9318f12ef20cc4f5421b59d9a470706ef',
  dir: 'quickjs_ng-0.17.0.2/upstream-quickjs',
};

/** A build-time edit that makes a function reserve `weight` bytes of shadow stack (KILN_WEIGH, below) right
 *  after `opening`, the text that begins its body. */
const weigh = (opening, weight) => ({ file: 'quickjs.c', count: 1, from: opening, to: `${opening}    KILN_WEIGH(${weight});\n` });

export const PATCHES = [
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
  // WeakRef's KeepDuringJob. The specification keeps a WeakRef's target, and whatever deref() returned, alive
  // until the current job ends (AddToKeptObjects / ClearKeptObjects), so `new WeakRef({}).deref()` is the
  // object. quickjs-ng frees an object the moment its last strong reference goes, and a target held only by
  // the expression that made it was gone before deref(): it gave undefined where Node gives the object. The
  // runtime keeps those targets in a list, released when the embedder asks for the next job (the current one
  // has ended) and when the runtime is freed. Keeping one longer than its job is what a collector that has
  // not run yet does; keeping none (when the list cannot grow) is quickjs-ng's behaviour before this.
  { file: 'quickjs.c', count: 1,
    from: '    bool can_block; /* true if Atomics.wait can block */\n',
    to: '    bool can_block; /* true if Atomics.wait can block */\n    JSValue *kiln_kept; /* WeakRef targets kept until the current job ends */\n    uint32_t kiln_kept_len, kiln_kept_size;\n' },
  { file: 'quickjs.c', count: 1,
    from: 'int JS_ExecutePendingJob(JSRuntime *rt, JSContext **pctx)\n{\n    JSContext *ctx;\n    JSJobEntry *e;\n    JSValue res;\n    int i, ret;\n\n',
    to: `static void kiln_clear_kept(JSRuntime *rt)
{
    uint32_t i, n = rt->kiln_kept_len;
    rt->kiln_kept_len = 0;
    for (i = 0; i < n; i++)
        JS_FreeValueRT(rt, rt->kiln_kept[i]);
}

int JS_ExecutePendingJob(JSRuntime *rt, JSContext **pctx)
{
    JSContext *ctx;
    JSJobEntry *e;
    JSValue res;
    int i, ret;

    kiln_clear_kept(rt);
` },
  { file: 'quickjs.c', count: 1,
    from: '    rt->in_free = true;\n    JS_FreeValueRT(rt, rt->current_exception);\n',
    to: '    kiln_clear_kept(rt);\n    js_free_rt(rt, rt->kiln_kept);\n    rt->kiln_kept = NULL;\n    rt->kiln_kept_size = 0;\n    rt->in_free = true;\n    JS_FreeValueRT(rt, rt->current_exception);\n' },
  { file: 'quickjs.c', count: 1,
    from: 'static JSValue js_weakref_constructor(JSContext *ctx, JSValueConst new_target,\n',
    to: `static void kiln_keep(JSContext *ctx, JSValueConst target)
{
    JSRuntime *rt = ctx->rt;
    if (rt->kiln_kept_len == rt->kiln_kept_size) {
        uint32_t size = rt->kiln_kept_size ? rt->kiln_kept_size * 2 : 8;
        JSValue *kept = js_realloc_rt(rt, rt->kiln_kept, size * sizeof(JSValue));
        if (!kept)
            return;
        rt->kiln_kept = kept;
        rt->kiln_kept_size = size;
    }
    rt->kiln_kept[rt->kiln_kept_len++] = js_dup(target);
}

static JSValue js_weakref_constructor(JSContext *ctx, JSValueConst new_target,
` },
  { file: 'quickjs.c', count: 1,
    from: '    insert_weakref_record(arg, wr);\n\n    JS_SetOpaqueInternal(obj, wrd);\n',
    to: '    insert_weakref_record(arg, wr);\n    kiln_keep(ctx, arg);\n\n    JS_SetOpaqueInternal(obj, wrd);\n' },
  { file: 'quickjs.c', count: 1,
    from: '    if (wrd == &js_weakref_sentinel)\n        return JS_UNDEFINED;\n    return js_dup(wrd->target);\n',
    to: '    if (wrd == &js_weakref_sentinel)\n        return JS_UNDEFINED;\n    kiln_keep(ctx, wrd->target);\n    return js_dup(wrd->target);\n' },
  // Atomics. quickjs-ng leaves them out of wasm32-wasi builds, which have no threads: no mutex, no condition
  // variable. The engine is one thread with no other agent, so the operations on ordinary and shared buffers
  // need none (the compiler lowers C11 atomics to plain memory operations when the atomics feature is off):
  // the lock is a no-op and the once-guard a flag. Atomics.wait could only ever wait for its timeout, as no
  // other agent can notify; the runtime's can_block is false (its default, as in a browser's main thread),
  // so wait throws a TypeError before anything waits and no call blocks the instance. The condition-variable
  // functions exist only to compile and never wait.
  { file: 'quickjs.c', count: 1,
    from: '#include "quickjs-c-atomics.h"\n#define CONFIG_ATOMICS\n#endif\n',
    to: `#include "quickjs-c-atomics.h"
#define CONFIG_ATOMICS
#elif defined(__wasi__)
#include "quickjs-c-atomics.h"
#define CONFIG_ATOMICS
#define JS_ONCE_INIT 0
typedef int js_once_t;
typedef int js_mutex_t;
typedef int js_cond_t;
static inline void js_once(js_once_t *guard, void (*callback)(void)) { if (!*guard) { *guard = 1; callback(); } }
static inline void js_mutex_init(js_mutex_t *m) { (void)m; }
static inline void js_mutex_lock(js_mutex_t *m) { (void)m; }
static inline void js_mutex_unlock(js_mutex_t *m) { (void)m; }
static inline void js_cond_init(js_cond_t *c) { (void)c; }
static inline void js_cond_destroy(js_cond_t *c) { (void)c; }
static inline void js_cond_signal(js_cond_t *c) { (void)c; }
static inline void js_cond_wait(js_cond_t *c, js_mutex_t *m) { (void)c; (void)m; }
static inline int js_cond_timedwait(js_cond_t *c, js_mutex_t *m, uint64_t t) { (void)c; (void)m; (void)t; return -1; }
#endif
` },
  { // kiln_seed_random: the per-instance seed glue.c sets (kiln_seed_random_once, at the first Math.random).
    file: 'quickjs.c', count: 1,
    from: 'JSValue JS_ThrowOutOfMemory(JSContext *ctx)\n',
    to: 'void kiln_seed_random(JSContext *ctx, uint64_t seed)\n{\n    ctx->random_state = seed ? seed : 1;\n}\n\nJSValue JS_ThrowOutOfMemory(JSContext *ctx)\n' },
  { // Math.random asks glue.c for the instance's seed the first time it runs in an instance (not at the
    // instance's first export call): an instance that never drew a random number has called no host for one,
    // so a snapshot of it (host/engine/instance.ts) holds no seed another instance would share.
    file: 'quickjs.c', count: 1,
    from: '    v = xorshift64star(&ctx->random_state);\n    /* 1.0 <= u.d < 2 */',
    to: '    if (kiln_random_unseeded)\n        kiln_seed_random_once(ctx);\n    v = xorshift64star(&ctx->random_state);\n    /* 1.0 <= u.d < 2 */' },
  { file: 'quickjs.c', count: 1,
    from: 'static JSValue js_math_random(JSContext *ctx, JSValueConst this_val,\n',
    to: 'extern int kiln_random_unseeded;\nvoid kiln_seed_random_once(JSContext *ctx);\n\nstatic JSValue js_math_random(JSContext *ctx, JSValueConst this_val,\n' },
];

// Regexp backtracking already polls the interrupt handler (lre_check_timeout), stack overflow is a
// RangeError and number formatting rounds correctly without directed rounding modes: quickjs-ng needs no
// other change for wasm32-wasi.
