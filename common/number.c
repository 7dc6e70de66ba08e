/* number.c - plain decimals of measured files; see number.h. */
#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int zb_number_ok(double v) { return isfinite(v) && fabs(v) <= ZB_NUMBER_MAX; }

/* The length of the decimal syntax at s (0: none). */
static size_t decimal_len(const char *s)
{
	size_t i = 0, digits = 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	while (isdigit((unsigned char)s[i]))
		i++, digits++;
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i]))
			i++, digits++;
	}
	if (!digits)
		return 0;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (isdigit((unsigned char)s[j])) {
			while (isdigit((unsigned char)s[j]))
				j++;
			i = j;
		}
	}
	return i;
}

int zb_parse_decimal_prefix(const char *s, const char **end, double *out)
{
	size_t n = decimal_len(s);
	if (!n || n > 64)
		return -1;
	char buf[72];
	memcpy(buf, s, n);
	buf[n] = 0;
	errno = 0;
	char *e;
	double v = strtod(buf, &e);
	if (*e || errno == ERANGE || !zb_number_ok(v))
		return -1;
	if (end)
		*end = s + n;
	*out = v;
	return 0;
}

int zb_parse_decimal(const char *s, double *out)
{
	const char *end;
	double v;
	if (zb_parse_decimal_prefix(s, &end, &v) || *end)
		return -1;
	*out = v;
	return 0;
}

int zb_parse_whole(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	double v;
	if (zb_parse_decimal(s, &v) || v != floor(v) || v < (double)lo || v > (double)hi)
		return -1;
	*out = (int64_t)v;
	return 0;
}
