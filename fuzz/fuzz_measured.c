/* fuzz_measured.c - the readers of measured files: the first byte picks the reader
 * (calibrate --deepspeed --measured's table or JSON lines, validate --deepspeed
 * --from's table), the rest is the file. Every number of an accepted row must be
 * finite and of a measured size, and a row the configuration builder accepts is
 * predicted when its schedule is small. */
#include "fuzz/fuzz_common.h"
#include "common/number.h"
#include "inputs/dsmeasured.h"
#include "peers/peer.h"

static void need(int ok, const char *what, double v)
{
	if (!ok) {
		fprintf(stderr, "an accepted row has %s %g\n", what, v);
		abort();
	}
}

static void check_ds(const zb_ds_measured *m, const char *path)
{
	for (int i = 0; i < m->n; i++) {
		const zb_ds_row *r = &m->rows[i];
		need(r->step_s > 0 && zb_number_ok(r->step_s), "step_s", r->step_s);
		need(isfinite(r->gpu_peak_B) && r->gpu_peak_B >= 0, "gpu_peak_B", r->gpu_peak_B);
		need(isfinite(r->host_rss_B) && r->host_rss_B >= 0, "host_rss_B", r->host_rss_B);
		need(isfinite(r->gpu_busy_s) && r->gpu_busy_s >= 0, "gpu_busy_s", r->gpu_busy_s);
		need(r->nsteps >= 0 && r->nsteps <= ZB_DS_MAX_STEPS, "nsteps", r->nsteps);
		for (int k = 0; k < r->nsteps; k++)
			need(r->steps_s[k] > 0 && zb_number_ok(r->steps_s[k]), "steps_s", r->steps_s[k]);
		need(r->seq >= 0 && r->micro_batch >= 0 && r->sub_group_size >= 0, "a negative count", 0);
		zb_config base, c;
		zb_error err;
		fuzz_base_config(&base);
		if (zb_ds_row_config(r, path, &base, &c, &err) == ZB_OK) {
			c.steps = 2;
			fuzz_predict(&c);
		}
	}
}

static void check_peer(const zb_peer_run *rows, int n)
{
	for (int i = 0; i < n; i++) {
		const zb_peer_run *r = &rows[i];
		need(r->step_ms > 0 && zb_number_ok(r->step_ms), "step_ms", r->step_ms);
		for (int k = 0; k < r->nsteps; k++)
			need(r->steps_ms[k] > 0 && zb_number_ok(r->steps_ms[k]), "steps_ms", r->steps_ms[k]);
		const double opt[] = { r->gpu_peak_gib, r->gpu_reserved_gib, r->host_rss_gib };
		for (int k = 0; k < 3; k++)
			need(isnan(opt[k]) || zb_number_ok(opt[k]), "a memory figure", opt[k]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16384)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1, "measured");
	zb_error err;
	if (data[0] & 1) {
		zb_peer_run *rows = NULL;
		int n = 0;
		if (zb_peer_read_file(path, &rows, &n, &err) == ZB_OK) {
			check_peer(rows, n);
			for (int i = 0; i < n; i++)
				zb_peer_run_clear(&rows[i]);
			free(rows);
		}
		return 0;
	}
	zb_ds_measured m;
	if (zb_ds_measured_load(path, &m, &err) == ZB_OK) {
		check_ds(&m, path);
		zb_ds_measured_free(&m);
	}
	return 0;
}
