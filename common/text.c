/* text.c - names without control characters, text shown on one line; see text.h. */
#include "common/text.h"

#include <stdio.h>
#include <string.h>

static int is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

const char *zb_text_control(const char *s)
{
	for (; *s; s++)
		if (is_control((unsigned char)*s))
			return s;
	return NULL;
}

const char *zb_text_show(const char *s, char *buf, size_t n)
{
	size_t j = 0;
	if (n == 0)
		return buf;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		size_t need = is_control(c) ? 4 : 1;
		if (j + need + 4 > n) { /* room for "..." and the NUL */
			snprintf(buf + j, n - j, "...");
			return buf;
		}
		if (is_control(c))
			j += (size_t)snprintf(buf + j, n - j, "\\x%02x", c);
		else
			buf[j++] = (char)c;
	}
	buf[j] = 0;
	return buf;
}

zb_status zb_text_check_name(const char *what, const char *s, zb_error *err)
{
	const char *c = zb_text_control(s);
	if (!c)
		return ZB_OK;
	char shown[160];
	return zb_fail(err, ZB_E_INPUT, "%s '%s' has a control character (0x%02x)", what,
		       zb_text_show(s, shown, sizeof shown), (unsigned char)*c);
}
