/*
 * test_peers.c - measuring DeepSpeed without a GPU: the harness's JSON line
 * (tests/data/ds-step-output.txt: the harness's output format, log lines and all,
 * filled with the s2-off figures of data/deepspeed-h200-table.tsv; not captured
 * from a GPU run of the harness, which has not run yet) parsed field by field,
 * its error paths, the TSV import of data/deepspeed-h200-table.tsv, the
 * peer_runs round trip through SQLite, the harness's command line per model
 * family, and `zbench validate --deepspeed` end to end with a stand-in interpreter
 * (tests/data/fake-ds-python.sh): a crash, a malformed line, a missing line, a
 * missing interpreter and a hang each cost one configuration, reported on one line,
 * the others go on, the exit code is 1. The Hugging Face mode's line
 * (tests/data/ds-step-hf-output.txt: the whole output of a --device cpu run of the
 * harness on a 2-layer Llama under the HF guide's ZeRO-3 config with --ds-counts,
 * captured) is parsed and stored with its new fields (model_type, tag, skipped_steps,
 * ds_counts), and its command line built from --hf-config.
 */
#include "tests/harness.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers/peer.h"
#include "results/peers.h"
#include "results/store.h"
#include "inputs/presets.h"

#define FIXTURE "tests/data/ds-step-output.txt"
#define HF_FIXTURE "tests/data/ds-step-hf-output.txt"
#define TSV "data/deepspeed-h200-table.tsv"
#define FAKE "tests/data/fake-ds-python.sh"
#define SHAPE "--model gpt-2.5b --seq 2048 --micro-batch 4"

static char tmpdir[256];
static const char *zbench;

static int setup(void **state)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the harness's result line ---------------------------------------------------- */

static void test_parse_fixture(void **state)
{
	char *out = zb_test_slurp(FIXTURE, NULL);
	zb_peer_run r;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_parse_output(out, &r, &err), ZB_OK);
	assert_string_equal(r.framework, "deepspeed");
	assert_string_equal(r.source, "harness");
	assert_string_equal(r.name, "s2-off");
	assert_string_equal(r.origin, "peers/configs/s2-off.json");
	assert_close(r.step_ms, 1570.0, 1e-12);
	assert_int_equal(r.nsteps, 8);
	assert_close(r.steps_ms[0], 5348.2, 1e-12);
	assert_close(r.steps_ms[7], 1622.0, 1e-12);
	assert_int_equal(r.warmup_steps, 3);
	assert_close(r.fwd_ms, 30.5, 1e-12);
	assert_close(r.bwd_ms, 619.25, 1e-12);
	assert_close(r.opt_ms, 940.0, 1e-12);
	assert_close(r.gpu_peak_gib, 30.0, 1e-12);
	assert_close(r.gpu_reserved_gib, 34.5, 1e-12);
	assert_close(r.host_rss_gib, 61.7, 1e-12);
	assert_true(r.params == 2651553280LL);
	assert_string_equal(r.device, "NVIDIA H200");
	assert_string_equal(r.measured_at, "2026-11-30T14:03:40Z");
	assert_string_equal(r.versions, "{\"cuda\":\"13.0\",\"deepspeed\":\"0.19.8\",\"gpu\":\"NVIDIA H200\","
					"\"python\":\"3.12.3\",\"torch\":\"2.11.0+cu130\"}");
	assert_non_null(r.result_json);
	assert_true(!strncmp(r.result_json, "{\"harness\": \"ds_step\"", 21));
	assert_null(strchr(r.result_json, '\n'));
	zb_peer_run_clear(&r);
	free(out);
}

/* out must fail with a message containing want */
static void parse_fails(const char *out, const char *want)
{
	zb_peer_run r;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_parse_output(out, &r, &err), ZB_E_INPUT);
	assert_contains(err.msg, want);
	assert_null(strchr(err.msg, '\n'));
	assert_null(r.result_json);
}

static void test_parse_errors(void **state)
{
	parse_fails("", "no result line");
	parse_fails("Traceback (most recent call last):\nRuntimeError: boom\n", "no result line");
	parse_fails("{\"harness\": \"ds_step\", \"step_ms\": 15", "malformed harness result line");
	parse_fails("{\"harness\": \"other\", \"step_ms\": 15}\n", "'harness' is not \"ds_step\"");
	parse_fails("{\"harness\": \"ds_step\", \"steps_ms\": [1]}\n", "'step_ms' missing");
	parse_fails("{\"harness\": \"ds_step\", \"step_ms\": -3}\n", "'step_ms' missing or not a number");
	parse_fails("{\"harness\": \"ds_step\", \"step_ms\": 3, \"steps_ms\": 3}\n", "'steps_ms' missing");
	parse_fails("{\"harness\": \"ds_step\", \"step_ms\": 3, \"steps_ms\": [3, \"x\"]}\n", "steps_ms[1]");
	parse_fails("{\"harness\": \"ds_step\", \"step_ms\": 3, \"steps_ms\": [3], \"gpu_peak_GiB\": 1,"
		    " \"gpu_reserved_GiB\": 2}\n",
		    "'host_rss_GiB' missing");
	/* the last result line counts: an earlier good one does not hide a bad final one */
	char *good = zb_test_slurp(FIXTURE, NULL);
	char *both = malloc(strlen(good) + 64);
	sprintf(both, "%s{\"harness\": \"ds_step\", \"step_ms\"\n", good);
	parse_fails(both, "malformed");
	free(both);
	free(good);
}

/* ---- TSV import ---------------------------------------------------------------------- */

static void test_tsv_import(void **state)
{
	zb_peer_run *rows;
	int n;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_read_tsv(TSV, &rows, &n, &err), ZB_OK);
	assert_int_equal(n, 8); /* the first table only: the profiled table after it is not read */
	zb_peer_run *r = &rows[0];
	assert_string_equal(r->name, "s2-off");
	assert_string_equal(r->framework, "deepspeed");
	assert_string_equal(r->source, "import");
	assert_string_equal(r->origin, TSV);
	assert_string_equal(r->note, "stage 2, offload_optimizer cpu, overlap_comm false");
	assert_close(r->step_ms, 1570, 1e-12);
	assert_int_equal(r->nsteps, 8);
	assert_close(r->steps_ms[0], 5348, 1e-12);
	assert_close(r->steps_ms[7], 1622, 1e-12);
	assert_close(r->gpu_peak_gib, 30.0, 1e-12);
	assert_close(r->gpu_reserved_gib, 34.5, 1e-12);
	assert_close(r->host_rss_gib, 61.7, 1e-12);
	assert_true(isnan(r->fwd_ms));
	assert_string_equal(r->versions, "{\"cuda\":\"13.0\",\"deepspeed\":\"0.19.8\",\"torch\":\"2.11\"}");
	assert_string_equal(r->measured_at, "2026-11-30");
	assert_string_equal(rows[7].name, "s3-off-param");
	assert_close(rows[7].step_ms, 1829, 1e-12);
	assert_close(rows[3].host_rss_gib, 21.7, 1e-12);
	for (int i = 0; i < n; i++)
		zb_peer_run_clear(&rows[i]);
	free(rows);
}

static void tsv_fails(const char *text, const char *want)
{
	char path[300];
	snprintf(path, sizeof path, "%s/m.tsv", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	zb_peer_run *rows = (zb_peer_run *)1;
	int n = -1;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_read_tsv(path, &rows, &n, &err), ZB_E_INPUT);
	assert_contains(err.msg, want);
	assert_null(rows);
	assert_int_equal(n, 0);
}

static void test_tsv_errors(void **state)
{
	tsv_fails("# nothing\n", "no measured rows");
	tsv_fails("config\tstep_ms\n", "no measured rows");
	tsv_fails("# c\nconfig\tmedian\ns2\t3\n", ":2: header has no 'step_ms' column");
	tsv_fails("config\tstep_ms\ns2\tfast\n", ":2: step_ms 'fast' is not a number");
	tsv_fails("config\tstep_ms\ns2\t-4\n", ":2: step_ms '-4' is not a number >= 0");
	tsv_fails("config\tstep_ms\ns2\t0\n", "step_ms of 's2' is missing or not positive");
	tsv_fails("config\tstep_ms\tgpu_peak_GiB\ns2\t4\n", ":2: 2 fields, the header has 3");
	tsv_fails("config\tstep_ms\tsteps_ms\ns2\t4\t1,,2\n", "steps_ms '1,,2' is not a comma list");
	zb_peer_run *rows;
	int n;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_read_tsv("/nonexistent/m.tsv", &rows, &n, &err), ZB_E_INPUT);
	assert_contains(err.msg, "cannot open measurements '/nonexistent/m.tsv'");
}

/* ---- peer_runs round trip ------------------------------------------------------------- */

static zb_store *open_store(const char *name)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	zb_store *s = NULL;
	zb_error err = { 0 };
	if (zb_store_open(&s, path, 1000, &err)) {
		print_error("%s\n", err.msg);
		fail();
	}
	return s;
}

static int64_t add_config(zb_store *s)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_error err = { 0 };
	zb_preset_default_hw(&c.hw);
	assert_int_equal(zb_preset_model("gpt-2.5b", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.steps = 6;
	zb_run_info info = { .kind = "validate-deepspeed", .command = "test", .version = "0" };
	int64_t run_id, config_id;
	assert_int_equal(zb_store_add_run(s, &info, &run_id, &err), ZB_OK);
	assert_int_equal(zb_store_add_config(s, run_id, &c, "{}", &config_id, &err), ZB_OK);
	return config_id;
}

static void same_run(const zb_peer_run *a, const zb_peer_run *b)
{
	assert_string_equal(a->framework, b->framework);
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->source, b->source);
	assert_string_equal(a->origin, b->origin);
	assert_string_equal(a->note, b->note);
	assert_string_equal(a->device, b->device);
	assert_string_equal(a->versions, b->versions);
	assert_string_equal(a->measured_at, b->measured_at);
	assert_close(a->step_ms, b->step_ms, 1e-12);
	assert_int_equal(a->nsteps, b->nsteps);
	for (int i = 0; i < a->nsteps; i++)
		assert_close(a->steps_ms[i], b->steps_ms[i], 1e-9);
	assert_int_equal(a->warmup_steps, b->warmup_steps);
	const double x[] = { a->fwd_ms, a->bwd_ms, a->opt_ms, a->gpu_peak_gib, a->gpu_reserved_gib, a->host_rss_gib };
	const double y[] = { b->fwd_ms, b->bwd_ms, b->opt_ms, b->gpu_peak_gib, b->gpu_reserved_gib, b->host_rss_gib };
	for (int i = 0; i < 6; i++) {
		if (isnan(x[i]))
			assert_true(isnan(y[i])); /* not measured stays not measured, not 0 */
		else
			assert_close(y[i], x[i], 1e-12);
	}
	assert_true(a->params == b->params);
	assert_string_equal(a->model_type, b->model_type);
	assert_int_equal(a->skipped_steps, b->skipped_steps);
	if (a->result_json)
		assert_string_equal(a->result_json, b->result_json);
	else
		assert_null(b->result_json);
}

static void test_store_round_trip(void **state)
{
	zb_store *s = open_store("rt.db");
	zb_error err = { 0 };
	char *out = zb_test_slurp(FIXTURE, NULL);
	zb_peer_run measured, back;
	assert_int_equal(zb_peer_parse_output(out, &measured, &err), ZB_OK);
	int64_t c1 = add_config(s);
	assert_int_equal(zb_peer_store_add(s, c1, &measured, &err), ZB_OK);
	assert_int_equal(zb_peer_store_get(s, c1, &back, &err), ZB_OK);
	same_run(&measured, &back);
	zb_peer_run_clear(&back);

	zb_peer_run *rows;
	int n;
	assert_int_equal(zb_peer_read_tsv(TSV, &rows, &n, &err), ZB_OK);
	int64_t c2 = add_config(s);
	assert_int_equal(zb_peer_store_add(s, c2, &rows[4], &err), ZB_OK);
	assert_int_equal(zb_peer_store_get(s, c2, &back, &err), ZB_OK);
	same_run(&rows[4], &back);
	zb_peer_run_clear(&back);

	/* one row per configuration; none for a configuration never measured */
	assert_int_equal(zb_peer_store_add(s, c2, &rows[5], &err), ZB_E_STORE);
	assert_int_equal(zb_peer_store_get(s, c2 + 100, &back, &err), ZB_E_INPUT);
	assert_contains(err.msg, "no peer run for configuration");
	rows[5].step_ms = 0;
	assert_int_equal(zb_peer_store_add(s, add_config(s), &rows[5], &err), ZB_E_INPUT);
	assert_contains(err.msg, "no positive step time");

	int64_t count = 0;
	assert_int_equal(zb_store_count(s, "peer_runs", &count, &err), ZB_OK);
	assert_int_equal(count, 2);
	assert_int_equal(zb_store_count(s, "peer_vs_predicted", &count, &err), ZB_OK);
	assert_int_equal(count, 2);
	/* deleting the run deletes its measurements */
	assert_int_equal(sqlite3_exec(zb_store_db(s), "DELETE FROM runs", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(zb_store_count(s, "peer_runs", &count, &err), ZB_OK);
	assert_int_equal(count, 0);
	for (int i = 0; i < n; i++)
		zb_peer_run_clear(&rows[i]);
	free(rows);
	zb_peer_run_clear(&measured);
	free(out);
	zb_store_close(s);
}

/* ---- the harness's command line ----------------------------------------------------------- */

static char *joined(char **argv)
{
	static char buf[2048];
	buf[0] = 0;
	for (char **p = argv; *p; p++) {
		strcat(buf, *p);
		strcat(buf, p[1] ? " " : "");
	}
	return buf;
}

static void test_argv(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_error err = { 0 };
	zb_preset_default_hw(&c.hw);
	zb_policy_defaults(&c.policy);
	assert_int_equal(zb_preset_model("gpt-2.5b", &c.model, &err), ZB_OK);
	c.policy.seq = 2048;
	c.policy.micro_batch = 4;
	zb_peer_cmd cmd = { .python = "py", .harness = "h.py", .ds_config = "s2.json", .steps = 8, .timeout_s = 9 };
	char **argv;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	assert_string_equal(joined(argv), "py h.py --family gpt --layers 32 --hidden 2560 --heads 32 --kv-heads 32"
					  " --ffn 10240 --vocab 50257 --max-positions 2048 --seq 2048"
					  " --micro-batch 4 --gas 1 --steps 8 --ds-config s2.json");
	zb_peer_argv_free(argv);

	/* Llama family: gated MLP, no biases, rotary, a tied head; plain PyTorch */
	c.model = (zb_model){ .name = "llama-ish", .layers = 16, .hidden = 2048, .heads = 32, .kv_heads = 8,
			      .ffn = 8192, .vocab = 128256, .gated_mlp = 1, .tied_embeddings = 1 };
	cmd.ds_config = NULL;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	assert_string_equal(joined(argv), "py h.py --family llama --layers 16 --hidden 2048 --heads 32 --kv-heads 8"
					  " --ffn 8192 --vocab 128256 --tied-head --seq 2048"
					  " --micro-batch 4 --gas 1 --steps 8 --no-deepspeed");
	zb_peer_argv_free(argv);

	c.policy.ckpt = ZB_CKPT_GPU;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "activation checkpointing (ckpt gpu) is not in the harness");
	assert_null(argv);
	c.policy.ckpt = ZB_CKPT_NONE;
	c.model.bias = 1; /* a gated MLP with biases: neither family */
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "model 'llama-ish' (gated MLP, biases, rotary positions, tied head) matches no");
	c.model.bias = 0;
	c.model.experts = 8, c.model.experts_active = 2; /* a mixture of experts: the own modules have none */
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "matches no harness family");
	assert_null(argv);
}


/* ---- the Hugging Face mode's line ------------------------------------------------------- */

static void test_parse_hf(void **state)
{
	char *out = zb_test_slurp(HF_FIXTURE, NULL);
	zb_peer_run r;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_parse_output(out, &r, &err), ZB_OK);
	assert_string_equal(r.name, "hf-z3-tut");
	assert_string_equal(r.model_type, "llama");
	assert_string_equal(r.note, "F05"); /* the plan's run name */
	assert_int_equal(r.skipped_steps, 0);
	assert_int_equal(r.warmup_steps, 2);
	assert_int_equal(r.nsteps, 4);
	assert_close(r.steps_ms[0], 3265.097, 1e-12);
	assert_close(r.step_ms, 2783.149903000094, 1e-12);
	assert_true(r.params == 90432);
	/* DeepSpeed's paths: 2 micro-steps of a 2-layer model (20 parameter tensors) */
	assert_close(zb_peer_count(&r, "fetch_fwd_calls"), 64, 0);
	assert_close(zb_peer_count(&r, "fetch_bwd_calls"), 62, 0);
	assert_close(zb_peer_count(&r, "grad_hook_calls"), 40, 0);
	assert_close(zb_peer_count(&r, "gather_host_bytes"), 360448, 0);
	assert_close(zb_peer_count(&r, "fetch_fwd_s"), 0.005242, 1e-12);
	assert_true(isnan(zb_peer_count(&r, "no_such_path_calls")));
	char *c = zb_peer_counts_json(&r);
	assert_non_null(c);
	assert_true(!strncmp(c, "{\"fetch_bwd_calls\":62,", 22)); /* compact, keys sorted */
	free(c);
	zb_peer_run_clear(&r);

	/* the own-module line has none of them */
	char *own = zb_test_slurp(FIXTURE, NULL);
	assert_int_equal(zb_peer_parse_output(own, &r, &err), ZB_OK);
	assert_string_equal(r.model_type, "");
	assert_int_equal(r.skipped_steps, -1);
	assert_true(isnan(zb_peer_count(&r, "fetch_fwd_calls")));
	assert_null(zb_peer_counts_json(&r));
	zb_peer_run_clear(&r);
	free(own);
	free(out);
}

#define HF_LINE "{\"harness\": \"ds_step\", \"step_ms\": 3, \"steps_ms\": [3], \"gpu_peak_GiB\": 1," \
		" \"gpu_reserved_GiB\": 2, \"host_rss_GiB\": 3"

static void test_parse_hf_errors(void **state)
{
	parse_fails("{\"harness\": \"ds_step\", \"dry_run\": true, \"params\": 5}\n", "a --dry-run line");
	parse_fails(HF_LINE ", \"ds_counts\": [1, 2]}\n", "'ds_counts' is not an object");
	parse_fails(HF_LINE ", \"ds_counts\": {\"fetch_fwd_calls\": \"many\"}}\n",
		    "ds_counts 'fetch_fwd_calls' is not a number >= 0");
	parse_fails(HF_LINE ", \"ds_counts\": {\"fetch_fwd_s\": -1}}\n", "ds_counts 'fetch_fwd_s'");
	parse_fails(HF_LINE ", \"skipped_steps\": -2}\n", "'skipped_steps' is not a count");
	parse_fails(HF_LINE ", \"skipped_steps\": 1.5}\n", "'skipped_steps' is not a count");
	/* null and absent are "not reported" */
	zb_peer_run r;
	zb_error err = { 0 };
	assert_int_equal(zb_peer_parse_output(HF_LINE ", \"skipped_steps\": null, \"ds_counts\": {}}\n", &r, &err), ZB_OK);
	assert_int_equal(r.skipped_steps, -1);
	zb_peer_run_clear(&r);
}

static void test_store_hf(void **state)
{
	zb_store *s = open_store("hf.db");
	zb_error err = { 0 };
	char *out = zb_test_slurp(HF_FIXTURE, NULL);
	zb_peer_run measured, back;
	assert_int_equal(zb_peer_parse_output(out, &measured, &err), ZB_OK);
	int64_t c1 = add_config(s);
	assert_int_equal(zb_peer_store_add(s, c1, &measured, &err), ZB_OK);
	assert_int_equal(zb_peer_store_get(s, c1, &back, &err), ZB_OK);
	same_run(&measured, &back);
	assert_close(zb_peer_count(&back, "grad_hook_calls"), 40, 0);
	/* the counts are a column of their own, queryable in SQL */
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(zb_store_db(s), "SELECT model_type, skipped_steps,"
				    " json_extract(ds_counts, '$.fetch_fwd_calls'), json_extract(ds_counts, '$.fetch_fwd_s')"
				    " FROM peer_runs WHERE config_id = ?1", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, c1);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(q, 0), "llama");
	assert_int_equal(sqlite3_column_int(q, 1), 0);
	assert_int_equal(sqlite3_column_int(q, 2), 64);
	assert_close(sqlite3_column_double(q, 3), 0.005242, 1e-12);
	sqlite3_finalize(q);
	/* an own-module run leaves them NULL */
	char *own = zb_test_slurp(FIXTURE, NULL);
	zb_peer_run r;
	assert_int_equal(zb_peer_parse_output(own, &r, &err), ZB_OK);
	int64_t c2 = add_config(s);
	assert_int_equal(zb_peer_store_add(s, c2, &r, &err), ZB_OK);
	assert_int_equal(sqlite3_prepare_v2(zb_store_db(s), "SELECT model_type IS NULL AND skipped_steps IS NULL AND"
				    " ds_counts IS NULL FROM peer_runs WHERE config_id = ?1", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, c2);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 1);
	sqlite3_finalize(q);
	zb_peer_run_clear(&r);
	zb_peer_run_clear(&back);
	zb_peer_run_clear(&measured);
	free(own);
	free(out);
	zb_store_close(s);
}

static void test_argv_hf(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_error err = { 0 };
	zb_preset_default_hw(&c.hw);
	zb_policy_defaults(&c.policy);
	assert_int_equal(zb_preset_model("gpt-2.5b", &c.model, &err), ZB_OK);
	c.policy.seq = 512;
	c.policy.micro_batch = 2;
	c.policy.gas = 8;
	c.policy.dtype = ZB_FP16;
	c.policy.ckpt = ZB_CKPT_GPU; /* HF gradient checkpointing */
	zb_peer_cmd cmd = { .python = "py", .harness = "h.py", .ds_config = "z3.json", .hf_config = "m.json",
			    .steps = 6, .timeout_s = 9 };
	char **argv;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	assert_string_equal(joined(argv), "py h.py --hf-config m.json --dtype fp16 --grad-ckpt gpu --ds-counts"
					  " --seq 512 --micro-batch 2 --gas 8 --steps 6 --ds-config z3.json");
	zb_peer_argv_free(argv);
	/* a shape the own modules lack is no obstacle: the file has it */
	c.model.gated_mlp = 1;
	c.policy.ckpt = ZB_CKPT_CPU;
	c.policy.dtype = ZB_BF16;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	assert_contains(joined(argv), "--dtype bf16 --grad-ckpt cpu --ds-counts");
	zb_peer_argv_free(argv);
	cmd.ds_config = NULL;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "under DeepSpeed only (not 'torch')");
	assert_null(argv);
}

/* ---- zbench validate --deepspeed ---------------------------------------------------------- */

typedef struct result {
	int rc;
	char *out, *err;
} result;

static result run(const char *env, const char *args)
{
	char out[300], err[300], cmd[4096];
	snprintf(out, sizeof out, "%s/stdout", tmpdir);
	snprintf(err, sizeof err, "%s/stderr", tmpdir);
	snprintf(cmd, sizeof cmd, "%s %s validate --deepspeed %s >%s 2>%s </dev/null", env, zbench, args, out, err);
	int st = system(cmd);
	result r = { WIFEXITED(st) ? WEXITSTATUS(st) : 128, zb_test_slurp(out, NULL), zb_test_slurp(err, NULL) };
	return r;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int64_t peer_rows(const char *db)
{
	zb_store *s = open_store(db);
	int64_t n = -1;
	zb_error err = { 0 };
	assert_int_equal(zb_store_count(s, "peer_runs", &n, &err), ZB_OK);
	zb_store_close(s);
	return n;
}

static void test_cli_failures_go_on(void **state)
{
	char args[1024];
	snprintf(args, sizeof args, "--python " FAKE " --configs s2-off,s3-off,s2-none,s3-tf50,s3-tf30 " SHAPE
		 " --db %s/cli.db",
		 tmpdir);
	result r = run("ZB_FAKE_DS=s3-off=crash,s2-none=malformed,s3-tf50=silent", args);
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "zbench: s3-off: harness exited with status 1: torch.OutOfMemoryError: CUDA out of "
			       "memory. Tried to allocate 3.07 GiB\n");
	assert_contains(r.err, "zbench: s2-none: malformed harness result line");
	assert_contains(r.err, "zbench: s3-tf50: no result line");
	assert_contains(r.err, "zbench: 3 of 5 configurations failed\n");
	assert_int_equal(count_lines(r.err), 4);
	/* the good ones measured, predicted and compared (the predicted figures are the
	 * simulator's business: only their presence is checked here) */
	const char *row = strstr(r.out, "\ns2-off             1570.0 ");
	assert_non_null(row);
	double meas, pred, e, gm, gp, hm, hp;
	assert_int_equal(sscanf(row, " s2-off %lf %lf %lf %lf %lf %lf %lf", &meas, &pred, &e, &gm, &gp, &hm, &hp), 7);
	assert_true(fabs(e - 100 * (pred - meas) / meas) < 0.06); /* e is printed to 0.1 % */
	assert_close(gm, 30.0, 1e-9);
	assert_close(hm, 61.7, 1e-9);
	assert_contains(r.out, "\ns3-tf30            1570.0 ");
	assert_contains(r.out, "step time MAPE ");
	assert_contains(r.out, "3 of 5 FAILED");
	assert_int_equal(peer_rows("cli.db"), 2);
	free(r.out);
	free(r.err);
}

static void test_cli_other_shape(void **state)
{
	/* the stand-in always reports the gpt-2.5b shape at seq 2048, micro-batch 4 */
	result r = run("", "--python " FAKE " --configs s2-off --model gpt-2.5b --seq 1024 --micro-batch 4 --no-db");
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "zbench: s2-off: the harness ran seq 2048, the configuration has 1024\n");
	free(r.out);
	free(r.err);
}

static void test_cli_python_missing(void **state)
{
	result r = run("", "--python /nonexistent/python3 --configs s2-off,s3-off " SHAPE " --no-db");
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "zbench: s2-off: cannot run python '/nonexistent/python3': No such file or directory\n");
	assert_contains(r.err, "zbench: s3-off: cannot run python '/nonexistent/python3'");
	assert_int_equal(count_lines(r.err), 3);
	free(r.out);
	free(r.err);
}

static void test_cli_timeout(void **state)
{
	result r = run("ZB_FAKE_DS=s2-off=hang", "--python " FAKE " --configs s2-off,s3-off --timeout 1 " SHAPE " --no-db");
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "zbench: s2-off: harness timed out after 1 s");
	assert_contains(r.out, "\ns3-off             1570.0 "); /* the next one still ran */
	free(r.out);
	free(r.err);
}

static void test_cli_import(void **state)
{
	char args[512];
	snprintf(args, sizeof args, "--from " TSV " " SHAPE " --db %s/import.db", tmpdir);
	result r = run("", args);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_contains(r.out, "# measured: imported from " TSV);
	assert_contains(r.out, "\ns3-tf30            1343.0 ");
	assert_contains(r.out, "over 8 configurations");
	assert_int_equal(peer_rows("import.db"), 8);
	free(r.out);
	free(r.err);
	/* a subset by name; a name the file lacks is an input error before anything runs */
	snprintf(args, sizeof args, "--from " TSV " --configs s2-off,s3-off " SHAPE " --db %s/import.db", tmpdir);
	r = run("", args);
	assert_int_equal(r.rc, 0);
	assert_int_equal(peer_rows("import.db"), 10);
	free(r.out);
	free(r.err);
	r = run("", "--from " TSV " --configs torch " SHAPE " --no-db");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "zbench: configuration 'torch' is not in " TSV "\n");
	free(r.out);
	free(r.err);
}

/* A file of result lines (ds-results.jsonl): each configuration takes the line of
 * its own shape, a file of other shapes only is an error of that configuration. */
static void test_cli_import_jsonl(void **state)
{
	char path[300], cmd[1200], args[700];
	snprintf(path, sizeof path, "%s/ds-results.jsonl", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "{ grep '^{' " FIXTURE "; echo; grep '^{' " FIXTURE " | sed 's/\"seq\": 2048/\"seq\": 1024/';"
		 " grep '^{' " FIXTURE " | sed 's/s2-off/s3-off/g; s/\"step_ms\": 1570.0/\"step_ms\": 2968.0/'; } >%s",
		 path);
	assert_int_equal(system(cmd), 0);
	snprintf(args, sizeof args, "--from %s " SHAPE " --db %s/jsonl.db", path, tmpdir);
	result r = run("", args);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_contains(r.out, "\ns2-off             1570.0 ");
	assert_contains(r.out, "\ns3-off             2968.0 ");
	assert_int_equal(peer_rows("jsonl.db"), 2);
	free(r.out);
	free(r.err);
	snprintf(args, sizeof args, "--from %s --configs s3-off --model gpt-2.5b --seq 1024 --micro-batch 4 --no-db",
		 path);
	r = run("", args);
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "zbench: s3-off: the harness ran seq 2048, the configuration has 1024\n");
	free(r.out);
	free(r.err);
	/* a bad line is an input error naming the file and line, before anything runs */
	snprintf(cmd, sizeof cmd, "echo '{\"harness\": \"ds_step\", \"step_ms\": 1' >>%s", path);
	assert_int_equal(system(cmd), 0);
	snprintf(args, sizeof args, "--from %s " SHAPE " --no-db", path);
	r = run("", args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "ds-results.jsonl:5: malformed harness result line");
	assert_string_equal(r.out, "");
	free(r.out);
	free(r.err);
}

static void test_cli_bad_input(void **state)
{
	struct {
		const char *args, *err;
	} cases[] = {
		{ "--configs nope " SHAPE, "zbench: unknown configuration 'nope' (no file peers/configs/nope.json)\n" },
		{ "--ds-config peers/configs/s2-off.json", "zbench: --ds-config: validate --deepspeed runs the files of" },
		{ "--harness /nonexistent/ds_step.py", "zbench: harness '/nonexistent/ds_step.py' not found" },
		{ "--from /nonexistent.tsv", "zbench: cannot open measurements '/nonexistent.tsv'" },
		{ "--timeout 0", "zbench: invalid value '0' for --timeout (expected an integer in 1..86400)\n" },
		{ "--config-dir /nonexistent", "zbench: cannot list --config-dir '/nonexistent'" },
		{ "--log-dir /nonexistent", "zbench: --log-dir '/nonexistent' is not a directory\n" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char args[512];
		snprintf(args, sizeof args, "%s --db %s/bad.db", cases[i].args, tmpdir);
		result r = run("", args);
		assert_int_equal(r.rc, 2);
		assert_contains(r.err, cases[i].err);
		assert_int_equal(count_lines(r.err), 1);
		assert_string_equal(r.out, "");
		free(r.out);
		free(r.err);
	}
	char db[300];
	snprintf(db, sizeof db, "%s/bad.db", tmpdir);
	assert_int_equal(access(db, F_OK), -1); /* bad input writes nothing, not even a database */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fixture),    cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_tsv_import),       cmocka_unit_test(test_tsv_errors),
		cmocka_unit_test(test_store_round_trip), cmocka_unit_test(test_argv),
		cmocka_unit_test(test_cli_failures_go_on), cmocka_unit_test(test_cli_other_shape),
		cmocka_unit_test(test_cli_python_missing),
		cmocka_unit_test(test_cli_timeout),      cmocka_unit_test(test_cli_import),
		cmocka_unit_test(test_cli_import_jsonl),
		cmocka_unit_test(test_cli_bad_input),
		cmocka_unit_test(test_parse_hf),         cmocka_unit_test(test_parse_hf_errors),
		cmocka_unit_test(test_store_hf),         cmocka_unit_test(test_argv_hf),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
