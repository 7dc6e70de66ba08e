/*
 * suite_file.c - suites of the user's own configurations (suite_file.h): a text
 * file of flags lines or a JSON list of objects, each read into the inputs of
 * zb_config_resolve (config/resolve.h), its DeepSpeed and Hugging Face files read
 * at once so a bad file fails before any work.
 */
#include "validate/suite_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config/resolve.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"

#define MAX_FILE_BYTES (16 << 20) /* a suite of a few thousand configurations */
#define MAX_LINE 4096
#define MAX_TOKENS 128

struct zb_suite_user {
	char key[ZB_SUITE_KEY_MAX];
	char where[300];            /* "ci/suite.txt:3", the prefix of its errors */
	char *spec;                 /* the flags in one line, paths as opened */
	size_t spec_len, spec_cap;
	char *value[ZB_AX_COUNT];   /* each axis as given (owned), NULL: not given */
	int offload_param, pageable;
	int have_ds, have_hf, named;
	zb_ds_config ds;
	zb_hf_config hf;
};

/* What a suite read from a file owns; the zb_suite first, so zb_suite_file_free
 * finds the rest. */
typedef struct file_suite {
	zb_suite s;
	zb_suite_entry *entries;
	zb_suite_user *users;
	char *name, *description;
} file_suite;

/* ---- one configuration ------------------------------------------------------------------ */

static zb_status at(zb_error *err, const zb_suite_user *u, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static zb_status at(zb_error *err, const zb_suite_user *u, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return zb_fail(err, ZB_E_INPUT, "%s: %s", u->where, msg);
}

static void spec_add(zb_suite_user *u, const char *s)
{
	size_t n = strlen(s);
	if (u->spec_len + n + 2 > u->spec_cap) {
		u->spec_cap = (u->spec_len + n + 2) * 2;
		u->spec = zb_xrealloc(u->spec, u->spec_cap);
	}
	if (u->spec_len)
		u->spec[u->spec_len++] = ' ';
	memcpy(u->spec + u->spec_len, s, n + 1);
	u->spec_len += n;
}

/* A value in the flags line: quoted when it holds a blank, a quote or '#'. */
static void spec_value(zb_suite_user *u, const char *v)
{
	if (*v && !strpbrk(v, " \t'\"#")) {
		spec_add(u, v);
		return;
	}
	size_t n = strlen(v);
	char *q = zb_xmalloc(n + 3);
	char c = strchr(v, '\'') ? '"' : '\'';
	snprintf(q, n + 3, "%c%s%c", c, v, c);
	spec_add(u, q);
	free(q);
}

/* A path relative to the suite file's folder (dir "" or "."), as it is opened. */
static char *path_in(const char *dir, const char *v)
{
	size_t n = strlen(dir) + strlen(v) + 2;
	char *p = zb_xmalloc(n);
	if (v[0] == '/' || !dir[0] || !strcmp(dir, "."))
		snprintf(p, n, "%s", v);
	else
		snprintf(p, n, "%s/%s", dir, v);
	return p;
}

static int is_switch(const char *name)
{
	return !strcmp(name, "offload-param") || !strcmp(name, "pageable") || !strcmp(name, "bf16") ||
	       !strcmp(name, "fp16");
}

static void take_switch(zb_suite_user *u, const char *name)
{
	if (!strcmp(name, "offload-param"))
		u->offload_param = 1;
	else if (!strcmp(name, "pageable"))
		u->pageable = 1;
	else
		u->value[ZB_AX_DTYPE] = strdup(name); /* bf16 | fp16: take() checked it is the first */
	char flag[64];
	snprintf(flag, sizeof flag, "--%s", name);
	spec_add(u, flag);
}

/* --ds-config / --hf-config: the file read now. */
static zb_status take_file(zb_suite_user *u, const char *name, const char *v, const char *dir, zb_error *err)
{
	int ds = !strcmp(name, "ds-config");
	if (ds ? u->have_ds : u->have_hf)
		return at(err, u, "--%s given twice", name);
	char *p = path_in(dir, v);
	zb_error e = { 0 };
	zb_status st = ds ? zb_ds_load(p, &u->ds, &e) : zb_hf_load(p, &u->hf, &e);
	if (st) {
		free(p);
		return at(err, u, "%s", e.msg);
	}
	*(ds ? &u->have_ds : &u->have_hf) = 1;
	char flag[64];
	snprintf(flag, sizeof flag, "--%s", name);
	spec_add(u, flag);
	spec_value(u, p);
	free(p);
	return ZB_OK;
}

static int find_axis(const char *name)
{
	for (int a = 0; a < ZB_AX_COUNT; a++)
		if (!strcmp(name, zb_axis_name(a)))
			return a;
	return -1;
}

/* One flag of a configuration with its value (NULL for a switch). */
static zb_status take(zb_suite_user *u, const char *name, const char *v, const char *dir, zb_error *err)
{
	if (!strcmp(name, "hw"))
		return at(err, u, "--hw belongs on the command line (a suite runs on one hardware profile: the "
				  "command's --hw)");
	if (!strcmp(name, "steps"))
		return at(err, u, "--steps belongs on the command line (the command chooses the steps of every "
				  "configuration)");
	if (is_switch(name)) {
		if (v)
			return at(err, u, "--%s takes no value (got '%s')", name, v);
		if ((!strcmp(name, "bf16") || !strcmp(name, "fp16")) && u->value[ZB_AX_DTYPE])
			return at(err, u, "--%s: the precision is given twice", name);
		take_switch(u, name);
		return ZB_OK;
	}
	if (!v)
		return at(err, u, "--%s needs a value", name);
	if (!strcmp(name, "name")) {
		if (u->named)
			return at(err, u, "--name given twice");
		if (!*v || strlen(v) >= sizeof u->key)
			return at(err, u, "invalid --name '%.64s' (1 to %d characters)", v, ZB_SUITE_KEY_MAX - 1);
		snprintf(u->key, sizeof u->key, "%s", v);
		u->named = 1;
		return ZB_OK;
	}
	if (!strcmp(name, "ds-config") || !strcmp(name, "hf-config"))
		return take_file(u, name, v, dir, err);
	int a = find_axis(name);
	if (a < 0)
		return at(err, u, "unknown flag '--%s' (a suite takes predict's configuration flags and --name)", name);
	if (u->value[a])
		return at(err, u, "--%s given twice", name);
	u->value[a] = a == ZB_AX_MODEL_FILE ? path_in(dir, v) : strdup(v);
	char flag[64];
	snprintf(flag, sizeof flag, "--%s", name);
	spec_add(u, flag);
	spec_value(u, u->value[a]);
	return ZB_OK;
}

/* After the flags: one value per axis, a key. */
static zb_status finish(zb_suite_user *u, zb_error *err)
{
	if (!u->spec)
		spec_add(u, "");
	zb_config_inputs in = { .offload_param = u->offload_param, .pageable = u->pageable };
	for (int a = 0; a < ZB_AX_COUNT; a++)
		in.value[a] = u->value[a];
	zb_error e = { 0 };
	if (zb_config_single(&in, &e))
		return at(err, u, "%s (a line is one configuration)", e.msg);
	if (u->named)
		return ZB_OK;
	if (!u->spec[0])
		return at(err, u, "a configuration of zbench's defaults needs a --name");
	if (strlen(u->spec) >= sizeof u->key)
		return at(err, u, "the flags are %zu characters, too long for a key: give the configuration a --name",
			  strlen(u->spec));
	snprintf(u->key, sizeof u->key, "%s", u->spec);
	return ZB_OK;
}

static void user_clear(zb_suite_user *u)
{
	for (int a = 0; a < ZB_AX_COUNT; a++)
		free(u->value[a]);
	free(u->spec);
	memset(u, 0, sizeof *u);
}

/* ---- the text form ------------------------------------------------------------------------ */

/* Split a line into words: blanks separate, '...' and "..." quote, '#' outside quotes
 * ends the line. Returns the count, -1 with err on an open quote or too many. */
static int words(char *line, char **w, zb_suite_user *u, zb_error *err)
{
	int n = 0;
	char *p = line, *o = line;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p || *p == '#')
			break;
		if (n == MAX_TOKENS)
			return at(err, u, "more than %d words on the line", MAX_TOKENS), -1;
		w[n++] = o;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r') {
			if (*p == '\'' || *p == '"') {
				char q = *p++;
				while (*p && *p != q)
					*o++ = *p++;
				if (!*p)
					return at(err, u, "a quote (%c) is not closed", q), -1;
				p++;
			} else {
				*o++ = *p++;
			}
		}
		if (*p)
			p++;
		*o++ = 0;
	}
	return n;
}

/* The words of one configuration: --flag value, --flag=value, --switch. */
static zb_status parse_words(zb_suite_user *u, char **w, int n, const char *dir, zb_error *err)
{
	for (int i = 0; i < n; i++) {
		if (strncmp(w[i], "--", 2) || !w[i][2])
			return at(err, u, "unexpected '%.64s' (flags start with --)", w[i]);
		char *name = w[i] + 2, *v = strchr(name, '=');
		if (v)
			*v++ = 0;
		else if (!is_switch(name) && i + 1 < n && strncmp(w[i + 1], "--", 2))
			v = w[++i];
		zb_status st = take(u, name, v, dir, err);
		if (st)
			return st;
	}
	return finish(u, err);
}

static zb_status check_text(const char *line, zb_suite_user *u, zb_error *err)
{
	for (const unsigned char *p = (const unsigned char *)line; *p; p++)
		if (*p < 0x20 && *p != '\t' && *p != '\r')
			return at(err, u, "a control character (0x%02x) in the line", *p);
	return ZB_OK;
}

/* ---- the suite ------------------------------------------------------------------------------ */

static file_suite *suite_new(const char *name, int cap)
{
	file_suite *f = zb_xcalloc(1, sizeof *f);
	f->users = zb_xcalloc((size_t)(cap ? cap : 1), sizeof *f->users);
	f->entries = zb_xcalloc((size_t)(cap ? cap : 1), sizeof *f->entries);
	f->name = strdup(name);
	f->s.name = f->name;
	f->s.entries = f->entries;
	f->s.from_file = 1;
	return f;
}

/* Entry i from its user part; a key seen before is an error. */
static zb_status suite_add(file_suite *f, zb_error *err)
{
	int i = f->s.n;
	zb_suite_user *u = &f->users[i];
	for (int j = 0; j < i; j++)
		if (!strcmp(f->users[j].key, u->key))
			return at(err, u, "configuration '%s' is already at %s (keys must differ: give a --name)", u->key,
				  f->users[j].where);
	zb_suite_entry *e = &f->entries[i];
	e->user = u;
	e->model = u->value[ZB_AX_MODEL] ? u->value[ZB_AX_MODEL] : "";
	e->policy = u->value[ZB_AX_POLICY] ? u->value[ZB_AX_POLICY] : "";
	f->s.n++;
	return ZB_OK;
}

static void suite_describe(file_suite *f, const char *what)
{
	size_t n = strlen(what) + 64;
	f->description = zb_xmalloc(n);
	snprintf(f->description, n, "%d configuration%s from %s", f->s.n, f->s.n == 1 ? "" : "s", what);
	f->s.description = f->description;
}

void zb_suite_file_free(zb_suite *s)
{
	if (!s || !s->from_file)
		return;
	file_suite *f = (file_suite *)s;
	for (int i = 0; i < s->n; i++)
		user_clear(&f->users[i]);
	/* a user part that failed half-way is cleared by its reader */
	free(f->users);
	free(f->entries);
	free(f->name);
	free(f->description);
	free(f);
}

static int count_lines(const char *t, size_t n)
{
	int k = 1;
	for (size_t i = 0; i < n; i++)
		k += t[i] == '\n';
	return k;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup("");
	size_t n = (size_t)(slash - path);
	char *d = zb_xmalloc(n + 2);
	memcpy(d, path, n ? n : 1);
	d[n ? n : 1] = 0;
	return d;
}

static zb_status load_text(const char *path, char *text, size_t len, file_suite *f, zb_error *err)
{
	char *dir = dir_of(path);
	zb_status st = ZB_OK;
	int lineno = 0;
	for (char *line = text; line && !st; ) {
		char *nl = memchr(line, '\n', len - (size_t)(line - text));
		if (nl)
			*nl = 0;
		lineno++;
		zb_suite_user *u = &f->users[f->s.n];
		snprintf(u->where, sizeof u->where, "%s:%d", path, lineno);
		char *w[MAX_TOKENS];
		int n = 0;
		if (strlen(line) > MAX_LINE)
			st = at(err, u, "the line is longer than %d characters", MAX_LINE);
		if (!st)
			st = check_text(line, u, err);
		if (!st && (n = words(line, w, u, err)) < 0)
			st = ZB_E_INPUT;
		if (!st && n > 0 && !(st = parse_words(u, w, n, dir, err)))
			st = suite_add(f, err);
		if (st || n <= 0)
			user_clear(u);
		line = nl ? nl + 1 : NULL;
	}
	free(dir);
	return st;
}

/* ---- the JSON form --------------------------------------------------------------------------- */

/* The line of each object of the top-level list (the opening brace at depth 1). */
static void object_lines(const char *t, size_t n, int *lines, int cap)
{
	int depth = 0, line = 1, k = 0, str = 0;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		if (c == '\n')
			line++;
		if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = 0;
			continue;
		}
		if (c == '"')
			str = 1;
		else if (c == '[' || c == '{') {
			if (c == '{' && depth == 1 && k < cap)
				lines[k++] = line;
			depth++;
		} else if (c == ']' || c == '}')
			depth--;
	}
}

/* One key of an object as a flag: strings as they are, numbers written out, true a
 * switch (false: left out). */
static zb_status take_json(zb_suite_user *u, const char *key, json_t *v, const char *dir, zb_error *err)
{
	char name[64], num[64];
	if (strlen(key) >= sizeof name || !*key)
		return at(err, u, "unknown key '%.40s'", key);
	snprintf(name, sizeof name, "%s", key);
	for (char *p = name; *p; p++)
		if (*p == '_')
			*p = '-';
	if (json_is_boolean(v)) {
		if (!is_switch(name))
			return at(err, u, "\"%s\" takes a value, not %s", key, json_is_true(v) ? "true" : "false");
		return json_is_true(v) ? take(u, name, NULL, dir, err) : ZB_OK;
	}
	if (is_switch(name))
		return at(err, u, "\"%s\" is a switch: true or false", key);
	const char *s = NULL;
	if (json_is_string(v))
		s = json_string_value(v);
	else if (json_is_integer(v))
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)), s = num;
	else if (json_is_real(v))
		snprintf(num, sizeof num, "%.17g", json_real_value(v)), s = num;
	else
		return at(err, u, "the value of \"%s\" must be a string, a number or true/false", key);
	if (json_is_string(v) && strlen(s) != json_string_length(v))
		return at(err, u, "the value of \"%s\" holds a NUL byte", key);
	return take(u, name, s, dir, err);
}

static zb_status load_json(const char *path, const char *text, size_t len, file_suite **fp, zb_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %s", path, je.line, je.text);
	if (!json_is_array(root)) {
		json_decref(root);
		return zb_fail(err, ZB_E_INPUT, "%s:1: a JSON suite is a list of configurations ([{...}, ...])", path);
	}
	int n = (int)json_array_size(root);
	int *lines = zb_xcalloc((size_t)(n ? n : 1), sizeof *lines);
	object_lines(text, len, lines, n);
	file_suite *f = *fp = suite_new(path, n);
	char *dir = dir_of(path);
	zb_status st = ZB_OK;
	for (int i = 0; i < n && !st; i++) {
		zb_suite_user *u = &f->users[i];
		snprintf(u->where, sizeof u->where, "%s:%d", path, lines[i] ? lines[i] : 1);
		json_t *o = json_array_get(root, (size_t)i);
		if (!json_is_object(o))
			st = at(err, u, "configuration %d is not an object ({\"model\": ..., ...})", i + 1);
		const char *k;
		json_t *v;
		if (!st)
			json_object_foreach(o, k, v)
				if ((st = take_json(u, k, v, dir, err)))
					break;
		if (!st && !(st = finish(u, err)))
			st = suite_add(f, err);
		if (st)
			user_clear(u);
	}
	free(dir);
	free(lines);
	json_decref(root);
	return st;
}

/* ---- reading a file --------------------------------------------------------------------------- */

static zb_status slurp(const char *path, char **text, size_t *len, zb_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot read suite file '%s': %s", path, strerror(errno));
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = (n + 65536 + 1) * 2;
			buf = zb_xrealloc(buf, cap);
		}
		size_t got = fread(buf + n, 1, 65536, f);
		n += got;
		if (n > MAX_FILE_BYTES || got < 65536)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad || n > MAX_FILE_BYTES) {
		free(buf);
		return bad ? zb_fail(err, ZB_E_INPUT, "cannot read suite file '%s'", path)
			   : zb_fail(err, ZB_E_INPUT, "suite file '%s' is larger than %d MiB", path, MAX_FILE_BYTES >> 20);
	}
	buf[n] = 0;
	if (memchr(buf, 0, n))
		return free(buf), zb_fail(err, ZB_E_INPUT, "suite file '%s' is not text (a NUL byte)", path);
	*text = buf;
	*len = n;
	return ZB_OK;
}

zb_status zb_suite_file_load(const char *path, zb_suite **out, zb_error *err)
{
	char *text = NULL;
	size_t len = 0;
	zb_status st = slurp(path, &text, &len, err);
	if (st)
		return st;
	const char *p = text;
	while (*p && isspace((unsigned char)*p))
		p++;
	file_suite *f = NULL;
	if (*p == '[' || *p == '{') {
		st = load_json(path, text, len, &f, err);
	} else {
		f = suite_new(path, count_lines(text, len));
		st = load_text(path, text, len, f, err);
	}
	free(text);
	if (!st && f->s.n == 0)
		st = zb_fail(err, ZB_E_INPUT, "suite file '%s' holds no configuration", path);
	if (st) {
		if (f)
			zb_suite_file_free(&f->s);
		return st;
	}
	suite_describe(f, path);
	*out = &f->s;
	return ZB_OK;
}

zb_status zb_suite_from_specs(const char *origin, const char *const *keys, const char *const *specs, int n,
			      zb_suite **out, zb_error *err)
{
	file_suite *f = suite_new(origin, n);
	zb_status st = ZB_OK;
	for (int i = 0; i < n && !st; i++) {
		zb_suite_user *u = &f->users[i];
		snprintf(u->where, sizeof u->where, "%s: configuration '%.200s'", origin, keys[i]);
		if (strlen(keys[i]) >= sizeof u->key || !keys[i][0])
			st = at(err, u, "a key is 1 to %d characters", ZB_SUITE_KEY_MAX - 1);
		snprintf(u->key, sizeof u->key, "%s", keys[i]);
		u->named = 1; /* the key is given: the flags need not fit one */
		char *line = strdup(specs[i]);
		char *w[MAX_TOKENS];
		int nw;
		if (!st && !(st = check_text(line, u, err))) {
			if ((nw = words(line, w, u, err)) < 0)
				st = ZB_E_INPUT;
			else
				st = parse_words(u, w, nw, "", err);
		}
		free(line);
		if (!st)
			st = suite_add(f, err);
		if (st)
			user_clear(u);
	}
	if (st) {
		zb_suite_file_free(&f->s);
		return st;
	}
	suite_describe(f, origin);
	*out = &f->s;
	return ZB_OK;
}

const char *zb_suite_entry_spec(const zb_suite_entry *e)
{
	return e->user ? e->user->spec : NULL;
}

const char *zb_suite_user_key(const zb_suite_user *u)
{
	return u->key;
}

zb_status zb_suite_user_config(const zb_suite_user *u, const char *hw, int warmup, int steps, zb_config *out,
			       zb_error *err)
{
	char nsteps[16];
	snprintf(nsteps, sizeof nsteps, "%d", warmup + steps);
	zb_config_inputs in = { .offload_param = u->offload_param, .pageable = u->pageable,
				.ds = u->have_ds ? &u->ds : NULL, .hf = u->have_hf ? &u->hf : NULL };
	for (int a = 0; a < ZB_AX_COUNT; a++)
		in.value[a] = u->value[a];
	in.value[ZB_AX_HW] = hw;
	in.value[ZB_AX_STEPS] = nsteps;
	zb_error e = { 0 };
	zb_status st = zb_config_resolve(&in, out, NULL, &e);
	if (st)
		return zb_fail(err, st, "%s: %s", u->where, e.msg);
	return ZB_OK;
}
