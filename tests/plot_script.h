/*
 * plot_script.h - what gnuplot parses in a generated plot script, for the tests and
 * the fuzz harness that check no input byte reaches it outside a quoted field.
 *
 * plot_script_bare() reads the script as gnuplot's lexer does and returns it with
 * the content of every single-quoted string removed (the quotes kept). Inside a
 * single-quoted string gnuplot expands nothing. It fails, saying why, on what the
 * plot driver never writes and what would let text act: a backquote (command
 * substitution) or @ (macro) outside a quoted string, a double-quoted string
 * other than the constants "\n" and "'" (double quotes expand backquotes and
 * escapes), a quote right after a single-quoted string (gnuplot's '' escape,
 * whose rules differ between versions), a quoted string left open at the end of
 * a line. Two scripts drawn from inputs that differ only inside names (a name and
 * its twin with every other byte replaced) must then have the same bare text:
 * nothing of a name is read as script.
 */
#ifndef ZB_TEST_PLOT_SCRIPT_H
#define ZB_TEST_PLOT_SCRIPT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bare text of script (malloc'd), or NULL with why set. */
static inline char *plot_script_bare(const char *s, char *why, size_t nwhy)
{
	size_t n = strlen(s), j = 0;
	char *out = malloc(n + 1);
	if (!out)
		abort();
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\'') {
			out[j++] = c;
			for (i++; i < n && s[i] != '\'' && s[i] != '\n'; i++)
				;
			if (i >= n || s[i] == '\n' || s[i + 1] == '\'') {
				snprintf(why, nwhy, "a single-quoted string open at the end of a line or followed by a"
						    " quote (byte %zu)", i);
				free(out);
				return NULL;
			}
			out[j++] = '\'';
		} else if (c == '"') {
			size_t len = !strncmp(s + i, "\"\\n\"", 4) ? 4 : !strncmp(s + i, "\"'\"", 3) ? 3 : 0;
			if (!len) {
				snprintf(why, nwhy, "a double-quoted string other than \"\\n\" and \"'\" (byte %zu: %.20s)", i,
					 s + i);
				free(out);
				return NULL;
			}
			memcpy(out + j, s + i, len);
			j += len;
			i += len - 1;
		} else if (c == '`' || c == '@') {
			snprintf(why, nwhy, "'%c' outside a quoted string (byte %zu: %.30s)", c, i, s + (i > 10 ? i - 10 : 0));
			free(out);
			return NULL;
		} else if (c == '#') { /* a comment: to the end of the line, kept (compared too) */
			while (i < n && s[i] != '\n')
				out[j++] = s[i++];
			if (i < n)
				out[j++] = '\n';
		} else {
			out[j++] = c;
		}
	}
	out[j] = 0;
	return out;
}

/* The twin of a name: every byte the quoting handles specially (the quote, control
 * characters) kept, every other one replaced by 'x'. Its script differs from the
 * name's only inside quoted strings. */
static inline void plot_script_twin(const char *s, char *out, size_t n)
{
	size_t j = 0;
	for (; *s && j + 1 < n; s++)
		out[j++] = *s == '\'' || (unsigned char)*s < 0x20 || *s == 0x7f ? *s : 'x';
	out[j] = 0;
}

#endif
