/*
 * number.h - numbers as measured files write them (TSV tables, JSON lines of a
 * harness, the published suite): plain decimals only.
 *
 * strtod also reads "nan", "inf", "infinity", hexadecimal ("0x1p3") and values that
 * overflow to inf or lose all precision ("1e308" becomes inf once multiplied by
 * bytes per GiB). A measurement is none of these: zb_parse_decimal takes
 * [+-]digits[.digits][(e|E)[+-]digits] (or .digits), finite and at most
 * ZB_NUMBER_MAX in magnitude, and nothing else, so a reader can refuse the rest
 * with "file:line: bad step_ms 'nan'".
 */
#ifndef ZB_NUMBER_H
#define ZB_NUMBER_H

#include <stdint.h>

/* The largest magnitude of a measured value: 1e15 ms is 30 000 years, 1e15 GiB more
 * memory than exists; times its unit (1e9 bytes per GiB) it stays far from
 * overflow. */
#define ZB_NUMBER_MAX 1e15

/* The decimal at the start of s; *end (may be NULL) gets the first byte after it.
 * 0 with *out, or -1 when s does not start with one (or it is out of range). */
int zb_parse_decimal_prefix(const char *s, const char **end, double *out);

/* The whole of s as one decimal: 0 with *out, or -1. */
int zb_parse_decimal(const char *s, double *out);

/* A decimal that is a whole number in [lo, hi]: 0 with *out, or -1. */
int zb_parse_whole(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* A number read by a JSON parser (jansson gives any double, 1e308 too): 1 when it
 * is finite and at most ZB_NUMBER_MAX in magnitude. */
int zb_number_ok(double v);

#endif
