/*
 * Force-included into QuickJS when it is compiled for wasm32-wasi (see scripts/build-engine.mjs).
 *
 * wasi-libc has only FE_TONEAREST, but QuickJS's Number.prototype.toFixed / toPrecision /
 * toExponential decide ties by printing with FE_DOWNWARD and FE_UPWARD. Turning that off (as Javy did)
 * makes (2.5).toFixed(0) "2" instead of "3". Instead we keep QuickJS's algorithm and emulate the two
 * directed modes for exactly the two formats it prints under them (rounding.c).
 */
#ifndef KILN_WASI_COMPAT_H
#define KILN_WASI_COMPAT_H
#include <fenv.h>
#include <stddef.h>
#ifndef FE_UPWARD
#define FE_DOWNWARD 0x400
#define FE_UPWARD 0x800
int kiln_fesetround(int mode);
int kiln_snprintf(char *buf, size_t size, const char *fmt, ...);
#define fesetround kiln_fesetround
#define snprintf kiln_snprintf
#endif
#endif
