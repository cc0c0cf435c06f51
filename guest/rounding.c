/*
 * Directed rounding for QuickJS's number formatting on WASI (see wasi-compat.h).
 *
 * musl's printf prints the exact decimal expansion of a double when given enough precision, so
 * rounding toward +inf or -inf is a matter of truncating that expansion and, when anything non-zero
 * was cut off, stepping the magnitude up by one unit in the last place for the right sign.
 */
#include <fenv.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FE_DOWNWARD 0x400
#define FE_UPWARD 0x800

static int round_mode = FE_TONEAREST;

int kiln_fesetround(int mode) {
  round_mode = mode;
  return 0;
}

/* Add one unit in the last place to the decimal digits d[0..n); returns 1 on carry out. */
static int bump(char *d, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (d[i] == '9') { d[i] = '0'; continue; }
    d[i]++;
    return 0;
  }
  return 1;
}

static int all_zero(const char *s) {
  for (; *s; s++) if (*s >= '1' && *s <= '9') return 0;
  return 1;
}

/* "%.*f" of |x| rounded in `mode`, with sign. */
static int directed_fixed(char *buf, size_t size, double x, int prec, int away_if_inexact) {
  static char exact[2048], digits[2048];
  int neg = signbit(x);
  snprintf(exact, sizeof exact, "%.*f", prec + 1100, fabs(x));
  char *dot = strchr(exact, '.');
  int int_len = (int)(dot - exact);
  memcpy(digits + 1, exact, int_len);
  memcpy(digits + 1 + int_len, dot + 1, prec);
  int n = int_len + prec;
  digits[0] = '0';
  if (away_if_inexact && !all_zero(dot + 1 + prec)) bump(digits, n + 1);
  const char *d = digits[0] == '0' ? digits + 1 : digits;
  int lead = digits[0] == '0' ? int_len : int_len + 1;
  return prec > 0 ? snprintf(buf, size, "%s%.*s.%.*s", neg ? "-" : "", lead, d, prec, d + lead)
                  : snprintf(buf, size, "%s%.*s", neg ? "-" : "", lead, d);
}

/* "%+.*e" of |x| rounded in `mode`, with sign. */
static int directed_exp(char *buf, size_t size, double x, int prec, int away_if_inexact) {
  static char exact[2048], digits[2048];
  int neg = signbit(x);
  snprintf(exact, sizeof exact, "%.*e", prec + 800, fabs(x));
  char *e = strchr(exact, 'e');
  int exp10 = atoi(e + 1);
  *e = 0;
  digits[0] = exact[0];
  memcpy(digits + 1, exact + 2, prec);
  digits[prec + 1] = 0;
  if (away_if_inexact && !all_zero(exact + 2 + prec) && bump(digits, prec + 1)) {
    digits[0] = '1'; /* 9.99 -> 10.0: shift into the exponent */
    exp10++;
  }
  char mant[2048];
  if (prec > 0) snprintf(mant, sizeof mant, "%c.%s", digits[0], digits + 1);
  else snprintf(mant, sizeof mant, "%c", digits[0]);
  return snprintf(buf, size, "%c%se%c%02d", neg ? '-' : '+', mant, exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

int kiln_snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int is_exp = strcmp(fmt, "%+.*e") == 0, is_fixed = strcmp(fmt, "%.*f") == 0;
  if (round_mode == FE_TONEAREST || (!is_exp && !is_fixed)) {
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
  }
  int prec = va_arg(ap, int);
  double x = va_arg(ap, double);
  va_end(ap);
  int away = (round_mode == FE_UPWARD) != (signbit(x) != 0);
  return is_exp ? directed_exp(buf, size, x, prec, away) : directed_fixed(buf, size, x, prec, away);
}
