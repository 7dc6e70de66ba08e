/* peer.c - run peers/ds_step.py for a configuration and read what it measured, or
 * read earlier measurements from a TSV; see peer.h. */
#include "peers/peer.h"

#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* The start of the harness's result line (Python's json.dumps puts "harness" first). */
#define RESULT_PREFIX "{\"harness\""
/* Seconds between SIGTERM and SIGKILL for a process past its timeout: DeepSpeed's
 * atexit handlers and pinned-memory frees take a few seconds. */
#define KILL_GRACE_S 10

/* ---- command line ----------------------------------------------------------- */

zb_status zb_peer_family(const zb_model *m, const char **family, zb_error *err)
{
	if (m->head_dim || m->linear_bias || m->norms || m->experts) /* the Hugging Face families' own layouts */
		return zb_fail(err, ZB_E_INPUT, "model '%s' (head_dim, biases, norms or experts of its own) matches no "
			       "harness family (gpt, llama)", m->name);
	if (!m->gated_mlp && m->bias && m->tied_embeddings && m->max_seq > 0 && m->kv_heads == m->heads &&
	    !m->embed_proj) {
		*family = "gpt";
		return ZB_OK;
	}
	if (m->gated_mlp && !m->bias && m->max_seq == 0 && !m->embed_proj) {
		*family = "llama";
		return ZB_OK;
	}
	return zb_fail(err, ZB_E_INPUT,
		       "model '%s' (%s MLP, %s, %s positions, %s head%s) matches no harness family (gpt: GeLU, biases, "
		       "learned positions, tied head; llama: SwiGLU, no biases, rotary)",
		       m->name, m->gated_mlp ? "gated" : "plain", m->bias ? "biases" : "no biases",
		       m->max_seq > 0 ? "learned" : "rotary", m->tied_embeddings ? "tied" : "untied",
		       m->embed_proj ? ", embedding projection" : "");
}

typedef struct argv_buf {
	char **v;
	int n, cap;
} argv_buf;

static void push(argv_buf *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 48;
		a->v = zb_xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
	}
	a->v[a->n++] = strdup(s);
	a->v[a->n] = NULL;
}

static void push_int(argv_buf *a, const char *flag, long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	push(a, flag);
	push(a, buf);
}

/* The model as the harness's own modules: family and shape flags. */
static zb_status push_own_model(argv_buf *a, const zb_config *c, zb_error *err)
{
	const zb_model *m = &c->model;
	const char *family;
	if (zb_peer_family(m, &family, err))
		return err->status;
	if (c->policy.ckpt != ZB_CKPT_NONE)
		return zb_fail(err, ZB_E_INPUT, "activation checkpointing (ckpt %s) is not in the harness's own modules "
						"(give --hf-config: HF gradient checkpointing)", zb_ckpt_name(c->policy.ckpt));
	push(a, "--family");
	push(a, family);
	push_int(a, "--layers", m->layers);
	push_int(a, "--hidden", m->hidden);
	push_int(a, "--heads", m->heads);
	push_int(a, "--kv-heads", m->kv_heads);
	push_int(a, "--ffn", m->ffn);
	push_int(a, "--vocab", m->vocab);
	if (m->max_seq > 0)
		push_int(a, "--max-positions", m->max_seq);
	if (!strcmp(family, "llama") && m->tied_embeddings)
		push(a, "--tied-head");
	return ZB_OK;
}

/* The model from a Hugging Face config.json, trained as the Trainer does. */
static void push_hf_model(argv_buf *a, const zb_peer_cmd *cmd, const zb_config *c)
{
	push(a, "--hf-config");
	push(a, cmd->hf_config);
	push(a, "--dtype");
	push(a, zb_dtype_name(c->policy.dtype));
	push(a, "--grad-ckpt");
	push(a, zb_ckpt_name(c->policy.ckpt));
	push(a, "--ds-counts");
}

zb_status zb_peer_argv(const zb_peer_cmd *cmd, const zb_config *c, char ***argv, zb_error *err)
{
	const zb_policy *p = &c->policy;
	*argv = NULL;
	if (cmd->hf_config && !cmd->ds_config)
		return zb_fail(err, ZB_E_INPUT, "--hf-config: the harness measures Hugging Face models under DeepSpeed "
						"only (not 'torch')");
	argv_buf a = { 0 };
	push(&a, cmd->python);
	push(&a, cmd->harness);
	if (cmd->hf_config) {
		push_hf_model(&a, cmd, c);
	} else if (push_own_model(&a, c, err)) {
		zb_peer_argv_free(a.v);
		return err->status;
	}
	push_int(&a, "--seq", p->seq);
	push_int(&a, "--micro-batch", p->micro_batch);
	push_int(&a, "--gas", p->gas);
	push_int(&a, "--steps", cmd->steps);
	if (p->gpus * p->nodes > 1) { /* data parallel: the harness starts one process per GPU */
		if (p->nodes > 1) {
			zb_peer_argv_free(a.v);
			return zb_fail(err, ZB_E_INPUT, "--nodes %d: the harness runs on the GPUs of this node only",
				       p->nodes);
		}
		if (!cmd->ds_config) {
			zb_peer_argv_free(a.v);
			return zb_fail(err, ZB_E_INPUT, "--gpus %d: plain PyTorch runs one GPU in the harness", p->gpus);
		}
		push_int(&a, "--world-size", p->gpus);
	}
	if (cmd->ds_config) {
		push(&a, "--ds-config");
		push(&a, cmd->ds_config);
	} else {
		push(&a, "--no-deepspeed");
	}
	*argv = a.v;
	return ZB_OK;
}

void zb_peer_argv_free(char **argv)
{
	for (char **p = argv; p && *p; p++)
		free(*p);
	free(argv);
}

/* ---- the process ------------------------------------------------------------- */

/* Start argv in its own process group with stdout and stderr on out_fd. Returns
 * the pid, or -1 with *exec_errno set when fork or exec failed (the child reports
 * exec's errno through a close-on-exec pipe: nothing arrives when exec worked). */
static pid_t spawn(char **argv, int out_fd, int *exec_errno)
{
	int ep[2];
	*exec_errno = 0;
	if (pipe2(ep, O_CLOEXEC) != 0) {
		*exec_errno = errno;
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		*exec_errno = errno;
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0); /* the timeout kills the group: Python's compile workers too */
		close(ep[0]);
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		dup2(out_fd, 1);
		dup2(out_fd, 2);
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(ep[1], &e, sizeof e);
		(void)w;
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no race with a kill before the child ran */
	close(ep[1]);
	int e = 0;
	ssize_t got;
	do
		got = read(ep[0], &e, sizeof e);
	while (got < 0 && errno == EINTR);
	close(ep[0]);
	if (got == (ssize_t)sizeof e) {
		waitpid(pid, NULL, 0);
		*exec_errno = e;
		return -1;
	}
	return pid;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait for pid; past timeout_s (or when *stop is set) terminate its group, then
 * kill it after KILL_GRACE_S. *why: 0 exited by itself, 1 timeout, 2 stopped. */
static int wait_child(pid_t pid, int timeout_s, volatile const int *stop, int *why)
{
	double t0 = now_s(), term_at = 0;
	int status = 0;
	*why = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return status;
		double t = now_s();
		if (!*why && (t - t0 > timeout_s || (stop && *stop))) {
			*why = t - t0 > timeout_s ? 1 : 2;
			kill(-pid, SIGTERM);
			term_at = t;
		} else if (*why && t - term_at > KILL_GRACE_S) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			return status;
		}
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The whole file (malloc'd, NUL-terminated), NULL when it cannot be read. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, got;
	char *s = zb_xmalloc(cap);
	while ((got = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n - 1 == 0)
			s = zb_xrealloc(s, cap *= 2);
	}
	fclose(f);
	s[n] = 0;
	return s;
}

/* The last non-blank line of text, cut to fit out (for error messages). */
static void last_line(const char *text, char *out, size_t n)
{
	const char *end = text + strlen(text);
	while (end > text && isspace((unsigned char)end[-1]))
		end--;
	const char *start = end;
	while (start > text && start[-1] != '\n')
		start--;
	while (start < end && isspace((unsigned char)*start))
		start++;
	size_t len = (size_t)(end - start);
	if (len >= n)
		len = n - 1;
	memcpy(out, start, len);
	out[len] = 0;
	if (!len)
		snprintf(out, n, "(no output)");
}

static zb_status open_log(const zb_peer_cmd *cmd, char *path, size_t n, int *fd, zb_error *err)
{
	if (cmd->log_path) {
		snprintf(path, n, "%s", cmd->log_path);
		*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644); /* never through a symlink */
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(path, n, "%s/zbench-peer-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		*fd = mkostemp(path, O_CLOEXEC);
	}
	if (*fd < 0)
		return zb_fail(err, ZB_E_INPUT, "cannot create log file '%s': %s", path, strerror(errno));
	return ZB_OK;
}

/* How the process ended, as an error when it did not succeed. */
static zb_status check_exit(const zb_peer_cmd *cmd, int status, int why, const char *output, zb_error *err)
{
	char tail[200];
	last_line(output ? output : "", tail, sizeof tail);
	if (why == 2)
		return zb_fail(err, ZB_E_INTERRUPTED, "interrupted");
	if (why == 1)
		return zb_fail(err, ZB_E_INPUT, "harness timed out after %d s (last output: %s)", cmd->timeout_s, tail);
	if (WIFSIGNALED(status))
		return zb_fail(err, ZB_E_INPUT, "harness killed by signal %d (%s); last output: %s", WTERMSIG(status),
			       strsignal(WTERMSIG(status)), tail);
	if (WEXITSTATUS(status) != 0)
		return zb_fail(err, ZB_E_INPUT, "harness exited with status %d: %s", WEXITSTATUS(status), tail);
	return ZB_OK;
}

zb_status zb_peer_check_shape(const zb_peer_run *r, const zb_config *c, zb_error *err)
{
	if (!r->result_json)
		return ZB_OK;
	json_t *o = json_loads(r->result_json, 0, NULL);
	const struct {
		const char *key;
		long long want;
	} f[] = { { "layers", c->model.layers }, { "hidden", c->model.hidden }, { "heads", c->model.heads },
		  { "kv_heads", c->model.kv_heads }, { "ffn", c->model.ffn }, { "vocab", c->model.vocab },
		  { "seq", c->policy.seq }, { "micro_batch", c->policy.micro_batch }, { "gas", c->policy.gas } };
	zb_status st = ZB_OK;
	for (size_t i = 0; i < sizeof f / sizeof *f && !st; i++) {
		json_t *v = json_object_get(o, f[i].key);
		if (json_is_integer(v) && json_integer_value(v) != f[i].want)
			st = zb_fail(err, ZB_E_INPUT, "the harness ran %s %lld, the configuration has %lld", f[i].key,
				     (long long)json_integer_value(v), f[i].want);
	}
	json_decref(o);
	return st;
}

zb_status zb_peer_run_harness(const zb_peer_cmd *cmd, const zb_config *c, volatile const int *stop,
			      zb_peer_run *r, zb_error *err)
{
	zb_peer_run_init(r);
	char **argv;
	if (zb_peer_argv(cmd, c, &argv, err))
		return err->status;
	char log[512];
	int fd;
	if (open_log(cmd, log, sizeof log, &fd, err)) {
		zb_peer_argv_free(argv);
		return err->status;
	}
	int exec_errno;
	pid_t pid = spawn(argv, fd, &exec_errno);
	close(fd);
	zb_status st = ZB_OK;
	if (pid < 0) {
		st = zb_fail(err, ZB_E_INPUT, "cannot run python '%s': %s", cmd->python, strerror(exec_errno));
	} else {
		int why, status = wait_child(pid, cmd->timeout_s, stop, &why);
		char *out = slurp(log);
		st = check_exit(cmd, status, why, out, err);
		if (!st && !out)
			st = zb_fail(err, ZB_E_INPUT, "cannot read the harness's output '%s': %s", log, strerror(errno));
		if (!st)
			st = zb_peer_parse_output(out, r, err);
		if (!st && (st = zb_peer_check_shape(r, c, err)))
			zb_peer_run_clear(r);
		free(out);
	}
	if (!cmd->log_path)
		unlink(log);
	zb_peer_argv_free(argv);
	return st;
}

/* ---- the result line ----------------------------------------------------------- */

/* A copy of the last line of output that starts with RESULT_PREFIX, or NULL. */
static char *find_result_line(const char *output)
{
	const char *found = NULL;
	for (const char *p = output; p && *p;) {
		if (!strncmp(p, RESULT_PREFIX, strlen(RESULT_PREFIX)))
			found = p;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!found)
		return NULL;
	size_t n = strcspn(found, "\r\n");
	return strndup(found, n);
}

static zb_status need_num(json_t *o, const char *key, double lo, double *out, zb_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v) || !(json_number_value(v) >= lo) || !zb_number_ok(json_number_value(v)))
		return zb_fail(err, ZB_E_INPUT, "harness result line: '%s' missing or not a number >= %g", key, lo);
	*out = json_number_value(v);
	return ZB_OK;
}

static double opt_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) && zb_number_ok(json_number_value(v)) ? json_number_value(v) : NAN; /* NaN: not measured */
}

static void opt_str(json_t *o, const char *key, char *out, size_t n)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v))
		snprintf(out, n, "%s", json_string_value(v));
}

static zb_status read_steps(json_t *o, zb_peer_run *r, zb_error *err)
{
	json_t *a = json_object_get(o, "steps_ms"), *v;
	size_t i;
	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > ZB_PEER_MAX_STEPS)
		return zb_fail(err, ZB_E_INPUT, "harness result line: 'steps_ms' missing or not a list of 1..%d numbers",
			       ZB_PEER_MAX_STEPS);
	json_array_foreach(a, i, v)
	{
		if (!json_is_number(v) || !(json_number_value(v) > 0) || !zb_number_ok(json_number_value(v)))
			return zb_fail(err, ZB_E_INPUT, "harness result line: steps_ms[%zu] is not a positive number", i);
		r->steps_ms[r->nsteps++] = json_number_value(v);
	}
	return ZB_OK;
}

/* What the harness adds for a Hugging Face model: model_type, skipped_steps, tag (as
 * the run's note) and ds_counts, which must be an object of numbers (kept in
 * result_json, read with zb_peer_count). */
static zb_status read_hf_fields(json_t *o, zb_peer_run *r, zb_error *err)
{
	opt_str(o, "model_type", r->model_type, sizeof r->model_type);
	opt_str(o, "tag", r->note, sizeof r->note);
	json_t *sk = json_object_get(o, "skipped_steps");
	if (sk && !json_is_null(sk)) {
		if (!json_is_integer(sk) || json_integer_value(sk) < 0)
			return zb_fail(err, ZB_E_INPUT, "harness result line: 'skipped_steps' is not a count");
		r->skipped_steps = (int)json_integer_value(sk);
	}
	json_t *c = json_object_get(o, "ds_counts"), *v;
	const char *key;
	if (!c)
		return ZB_OK;
	if (!json_is_object(c))
		return zb_fail(err, ZB_E_INPUT, "harness result line: 'ds_counts' is not an object");
	json_object_foreach(c, key, v)
	{
		if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
			return zb_fail(err, ZB_E_INPUT, "harness result line: ds_counts '%s' is not a number >= 0", key);
	}
	return ZB_OK;
}

/* The fields of a parsed result object into r. */
static zb_status read_result(json_t *o, zb_peer_run *r, zb_error *err)
{
	json_t *h = json_object_get(o, "harness");
	if (!json_is_string(h) || strcmp(json_string_value(h), "ds_step"))
		return zb_fail(err, ZB_E_INPUT, "harness result line: 'harness' is not \"ds_step\"");
	if (json_is_true(json_object_get(o, "dry_run")))
		return zb_fail(err, ZB_E_INPUT, "harness result line: a --dry-run line, no measurement");
	if (need_num(o, "step_ms", 1e-9, &r->step_ms, err) || read_steps(o, r, err) ||
	    need_num(o, "gpu_peak_GiB", 0, &r->gpu_peak_gib, err) ||
	    need_num(o, "gpu_reserved_GiB", 0, &r->gpu_reserved_gib, err) ||
	    need_num(o, "host_rss_GiB", 0, &r->host_rss_gib, err))
		return err->status;
	r->fwd_ms = opt_num(o, "fwd_ms");
	r->bwd_ms = opt_num(o, "bwd_ms");
	r->opt_ms = opt_num(o, "opt_ms");
	double w = opt_num(o, "warmup_steps"), params = opt_num(o, "params");
	r->warmup_steps = isfinite(w) && w >= 0 ? (int)w : -1;
	r->params = isfinite(params) && params > 0 ? (int64_t)params : 0;
	json_t *ds = json_object_get(o, "ds_config");
	snprintf(r->framework, sizeof r->framework, "%s", json_is_string(ds) ? "deepspeed" : "torch");
	opt_str(o, "ds_config", r->origin, sizeof r->origin);
	opt_str(o, "config", r->name, sizeof r->name);
	opt_str(o, "measured_at", r->measured_at, sizeof r->measured_at);
	json_t *v = json_object_get(o, "versions");
	if (json_is_object(v)) {
		opt_str(v, "gpu", r->device, sizeof r->device);
		char *t = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		if (t && strlen(t) < sizeof r->versions)
			snprintf(r->versions, sizeof r->versions, "%s", t);
		free(t);
	}
	snprintf(r->source, sizeof r->source, "harness");
	return read_hf_fields(o, r, err);
}

zb_status zb_peer_parse_output(const char *output, zb_peer_run *r, zb_error *err)
{
	zb_peer_run_init(r);
	char *line = find_result_line(output);
	if (!line)
		return zb_fail(err, ZB_E_INPUT, "no result line (%s ...}) in the harness's output", RESULT_PREFIX);
	json_error_t je;
	json_t *o = json_loads(line, 0, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		free(line);
		return zb_fail(err, ZB_E_INPUT, "malformed harness result line: %s at column %d", je.text, je.column);
	}
	zb_status st = read_result(o, r, err);
	json_decref(o);
	if (st) {
		free(line);
		zb_peer_run_init(r);
		return st;
	}
	r->result_json = line;
	return ZB_OK;
}

/* ---- a file of result lines ---------------------------------------------------------- */

/* One result line per line (blank lines skipped), as the deepspeed suite
 * (scripts/suites/deepspeed.suite) collects them in ds-results.jsonl. */
static zb_status read_jsonl(FILE *fp, const char *path, zb_peer_run **rows, int *n, zb_error *err)
{
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, cap_rows = 0;
	zb_status st = ZB_OK;
	while (!st && getline(&line, &cap, fp) >= 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (*n == cap_rows)
			*rows = zb_xrealloc(*rows, (size_t)(cap_rows = cap_rows ? 2 * cap_rows : 16) * sizeof **rows);
		zb_error e = { 0 };
		if (zb_peer_parse_output(line, &(*rows)[*n], &e))
			st = zb_fail(err, ZB_E_INPUT, "%s:%d: %s", path, lineno, e.msg);
		else
			(*n)++;
	}
	free(line);
	return st;
}

zb_status zb_peer_read_file(const char *path, zb_peer_run **rows, int *n, zb_error *err)
{
	*rows = NULL;
	*n = 0;
	FILE *fp = fopen(path, "r");
	if (!fp)
		return zb_fail(err, ZB_E_INPUT, "cannot open measurements '%s': %s", path, strerror(errno));
	int c;
	while ((c = fgetc(fp)) != EOF && isspace(c))
		;
	if (c != '{') {
		fclose(fp);
		return zb_peer_read_tsv(path, rows, n, err);
	}
	rewind(fp);
	zb_status st = read_jsonl(fp, path, rows, n, err);
	fclose(fp);
	if (!st && *n == 0)
		st = zb_fail(err, ZB_E_INPUT, "%s: no result lines", path);
	if (st) {
		for (int i = 0; i < *n; i++)
			zb_peer_run_clear(&(*rows)[i]);
		free(*rows);
		*rows = NULL;
		*n = 0;
	}
	return st;
}
