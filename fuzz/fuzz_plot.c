/* fuzz_plot.c - plot scripts drawn from a database whose names are the input: the
 * model, machine, link, GPU and CPU names of a small sweep are set to two strings
 * taken from the input (any bytes), and the ratio, hardware and memory plots are
 * written as data and script (no gnuplot). The same is done with the names' twins
 * (tests/plot_script.h): the scripts must read the same outside quoted strings, no
 * backquote or macro may reach gnuplot, and the data files must have the same
 * lines. Anything else aborts. */
#include "fuzz/fuzz_common.h"

#include <ftw.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "plots/plot.h"
#include "results/store.h"
#include "tests/plot_script.h"

static char dir[256], dbpath[320];

static void must(zb_status st, const zb_error *err)
{
	if (st) {
		fprintf(stderr, "fuzz_plot setup: %s\n", err->msg);
		abort();
	}
}

/* A sweep of 2 links x 3 ratios with predictions (memory terms included). */
static void make_db(void)
{
	zb_store *s;
	zb_error err;
	must(zb_store_open(&s, dbpath, 1000, &err), &err);
	zb_run_info info = { .kind = "sweep", .command = "zbench sweep", .version = ZB_VERSION };
	int64_t run, cid;
	must(zb_store_add_run(s, &info, &run, &err), &err);
	static const char *const links[] = { "gen4", "gen5" };
	for (int l = 0; l < 2; l++)
		for (int r = 0; r < 3; r++) {
			zb_config c;
			fuzz_base_config(&c);
			must(zb_preset_link(links[l], &c.hw.link, &err), &err);
			c.policy.ratio = 0.5 * r;
			zb_prediction p;
			must(zb_predict(&p, &c, &err), &err);
			must(zb_store_add_config(s, run, &c, "{}", &cid, &err), &err);
			must(zb_store_add_prediction(s, cid, &p.graph, &p.res, &p.mem, &err), &err);
			zb_prediction_free(&p);
		}
	must(zb_store_finish_run(s, run, "ok", &err), &err);
	zb_store_close(s);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st, (void)type, (void)f;
	return remove(path);
}

/* The scratch folder goes when the fuzzer exits. */
static void cleanup(void) { nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *t = getenv("TMPDIR");
	struct stat st;
	snprintf(dir, sizeof dir, "%s/zbench-fuzz-plot-XXXXXX", t && *t ? t : stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(dbpath, sizeof dbpath, "%s/names.db", dir);
	make_db();
	return 0;
}

static void set_names(const char *a, const char *b)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	if (sqlite3_open(dbpath, &h) != SQLITE_OK ||
	    sqlite3_prepare_v2(h, "UPDATE configs SET model = ?1, hw = ?2, link = ?1 || ?2, gpu = ?2, cpu = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		abort();
	sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		abort();
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		abort();
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
		abort();
	s[n] = 0;
	fclose(f);
	return s;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static const zb_plot_kind kinds[] = { ZB_PLOT_RATIO, ZB_PLOT_HARDWARE, ZB_PLOT_MEMORY };
static const char *const data_files[] = { "throughput.dat", "hardware.dat", "memory.dat" };

/* Scripts of the names a and b into dir/<w>-<kind>; their bare texts into bare[]. */
static void draw(int w, const char *a, const char *b, char *bare[3], int nlines[3])
{
	set_names(a, b);
	zb_store *s;
	zb_error err;
	must(zb_store_open_readonly(&s, dbpath, 1000, &err), &err);
	for (int k = 0; k < 3; k++) {
		char keep[400], path[500], why[200];
		snprintf(keep, sizeof keep, "%s/%d-%d", dir, w, k);
		zb_plot_request req = { .kind = kinds[k], .output = "plot.svg", .keep_dir = keep, .script_only = 1 };
		zb_plot_info info;
		if (zb_plot_make(s, &req, &info, &err)) {
			fprintf(stderr, "plot %d of names %d failed: %s\n", (int)kinds[k], w, err.msg);
			abort();
		}
		snprintf(path, sizeof path, "%s/plot.gp", keep);
		char *script = slurp(path);
		bare[k] = plot_script_bare(script, why, sizeof why);
		if (!bare[k]) {
			fprintf(stderr, "plot %d: %s\n%s\n", (int)kinds[k], why, script);
			abort();
		}
		free(script);
		snprintf(path, sizeof path, "%s/%s", keep, data_files[k]);
		char *d = slurp(path);
		nlines[k] = lines(d);
		free(d);
	}
	zb_store_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 2 * (ZB_NAME_MAX - 1))
		return 0;
	/* two names: the bytes before the first NUL and those after it (NULs dropped) */
	char name[2][ZB_NAME_MAX * 2], twin[2][ZB_NAME_MAX * 2];
	size_t j[2] = { 0, 0 };
	int which = 0;
	for (size_t i = 0; i < size; i++) {
		if (!data[i]) {
			which = 1;
			continue;
		}
		name[which][j[which]++] = (char)data[i];
	}
	for (int w = 0; w < 2; w++) {
		name[w][j[w]] = 0;
		plot_script_twin(name[w], twin[w], sizeof twin[w]);
	}
	char *bare[2][3];
	int nl[2][3];
	draw(0, name[0], name[1], bare[0], nl[0]);
	draw(1, twin[0], twin[1], bare[1], nl[1]);
	for (int k = 0; k < 3; k++) {
		if (strcmp(bare[0][k], bare[1][k]) || nl[0][k] != nl[1][k]) {
			fprintf(stderr, "plot %d: the script or data outside quoted strings depends on the names\n%s\n----\n%s\n",
				(int)kinds[k], bare[0][k], bare[1][k]);
			abort();
		}
		free(bare[0][k]);
		free(bare[1][k]);
	}
	return 0;
}
