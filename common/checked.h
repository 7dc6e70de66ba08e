/*
 * checked.h - 64-bit size arithmetic that reports overflow instead of wrapping.
 *
 * Sizes (parameters, bytes, tasks) come from user input multiplied together; a
 * signed overflow there is undefined behaviour and, in practice, a negative count
 * that later becomes a huge allocation. Each helper returns 0 and stores the
 * result, or returns 1 (result unspecified) when it does not fit in int64_t, so a
 * caller chains them: `if (zb_mul64(a, b, &x) || zb_add64(x, c, &x)) fail`.
 */
#ifndef ZB_CHECKED_H
#define ZB_CHECKED_H

#include <stdint.h>

static inline int zb_add64(int64_t a, int64_t b, int64_t *out)
{
	return __builtin_add_overflow(a, b, out);
}

static inline int zb_mul64(int64_t a, int64_t b, int64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

/* a * b * c */
static inline int zb_mul3_64(int64_t a, int64_t b, int64_t c, int64_t *out)
{
	int64_t t;
	return __builtin_mul_overflow(a, b, &t) || __builtin_mul_overflow(t, c, out);
}

/* a * b into an int (the model's fields are int). */
static inline int zb_mul_int(int a, int b, int *out)
{
	return __builtin_mul_overflow(a, b, out);
}

#endif
