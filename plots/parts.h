/*
 * parts.h - private to plots/: the context every plot draws through, the gnuplot
 * driver (plots/gnuplot.c), configuration rows loaded from the results database
 * (plots/rows.c), and one drawing function per plot kind (plots/plot_<kind>.c),
 * chosen by the table in plots/plot.c. The public API is plot.h.
 */
#ifndef ZB_PLOT_PARTS_H
#define ZB_PLOT_PARTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/outfile.h"
#include "core/config.h"
#include "plots/plot.h"
#include "results/query.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define INSTALL_HINT "install it: sudo apt-get install gnuplot-nox, or run scripts/deps.sh"

/* ---- the scratch directory, the script and gnuplot (gnuplot.c) ---------------- */

typedef struct plot_ctx {
	zb_store *store;
	const char *dbpath;
	const zb_plot_request *req;
	zb_plot_info *info;
	zb_error *err;
	char dir[PATH_MAX];
	int keep;            /* leave dir in place */
	int svg;
	int width, height;   /* pixels */
	zb_outfile script;   /* plot.gp being written (gp is its FILE) */
	zb_outfile data;     /* the data file being written */
	zb_outfile out, log; /* gnuplot's standard output (the image) and error */
	FILE *gp;
	char qbuf[8][4096];  /* plot_gq()'s results, used round-robin within one plot_gp() call */
	int qi;
} plot_ctx;

zb_status plot_ctx_open(plot_ctx *c);
void plot_ctx_close(plot_ctx *c);
/* s as a gnuplot string expression of single-quoted pieces, in which nothing
 * expands, joined by the constants "'" and "\n" where s has a quote or a newline
 * ('it'."'".'s'); control characters left out. The result lives until eight more
 * plot_gq() calls. All user text reaches the script this way. */
const char *plot_gq(plot_ctx *c, const char *s);
/* s for a data file's comment or quoted field: no control characters, no '"'. */
const char *plot_data_text(const char *s, char *buf, size_t n);
/* printf into the script. */
void plot_gp(plot_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A data file in the scratch directory (one at a time); the relative name the script
 * uses goes to path. NULL with err set. */
FILE *plot_data_open(plot_ctx *c, const char *name, char *path, size_t n);
zb_status plot_data_close(plot_ctx *c, FILE *f, const char *path);
/* Terminal, output, the look every plot shares, the title and its subtitle. */
void plot_begin(plot_ctx *c, int width, int height, const char *title, const char *sub);
/* Run gnuplot on the finished script; its image replaces the output once complete
 * (with req->script_only: only the script and data are written). */
zb_status plot_render(plot_ctx *c);
/* 84554 -> "84,554" */
const char *plot_thousands(double v, char *buf, size_t n);

/* Line colours and point shapes, in the order series get them. */
#define NPALETTE 10
#define NPOINTS 10
extern const char *const plot_palette[NPALETTE];
extern const int plot_point_types[NPOINTS];

/* ---- configuration rows (rows.c) ----------------------------------------------- */

/* Configuration columns, in the order of the configuration rows of results/query.h
 * (columns 2..19). */
enum {
	A_HW, A_LINK, A_GPU, A_CPU, A_CORES, A_MODEL, A_POLICY, A_RATIO, A_OFFLOAD_PARAM, A_PREFETCH,
	A_CKPT, A_GAS, A_MB, A_SEQ, A_DTYPE, A_PAGEABLE, A_BUCKET, A_THREADS, A_COUNT
};

struct plot_attr {
	const char *col;   /* configs column */
	const char *axis;  /* axis title when it is the x axis */
	int numeric;       /* x positions are its values, not categories */
};
extern const struct plot_attr plot_attrs[A_COUNT];

/* A list of distinct strings, in order of first appearance. */
typedef struct strlist {
	char **s;
	int n, cap;
} strlist;

int plot_sl_find(const strlist *l, const char *s);
int plot_sl_intern(strlist *l, const char *s);
void plot_sl_free(strlist *l);

typedef struct row {
	int64_t id, run_id;
	const char *val[A_COUNT]; /* display text, also the grouping key (in rowset.pool) */
	double num[A_COUNT];
	int has_pred, fits;
	double tokens_per_s, step_time_s, gpu_bytes, host_bytes;
	char *json;               /* config_json, when asked for */
} row;

/* Rows share their display strings: a 100,000-row sweep holds a few hundred. */
typedef struct rowset {
	row *r;
	int n;
	strlist pool[A_COUNT];
} rowset;

void plot_rowset_free(rowset *rs);
/* Configurations (with their predictions) of a named query of configuration rows
 * (results/query.h, ?1 = arg), in id order; with_json keeps each config_json. */
zb_status plot_load_rows_json(plot_ctx *c, zb_query which, int64_t arg, int with_json, rowset *rs);
zb_status plot_load_rows(plot_ctx *c, zb_query which, int64_t arg, rowset *rs);
/* A row with a prediction that fits and has a throughput. */
int plot_row_plotted(const row *r);
/* Distinct values of attribute a among the rows that pass keep (NULL: all). */
int plot_distinct(const rowset *rs, int a, int (*keep)(const row *));
/* "gen4, 16 cores, dpu": the values of the attributes in mask, in table order. */
void plot_row_label(const row *r, unsigned mask, const char *sep, char *buf, size_t n);
/* Attributes (as a mask) with more than one value among the rows that pass keep. */
unsigned plot_varying_mask(const rowset *rs, int (*keep)(const row *));
/* The settings every plotted row shares, for a subtitle. */
void plot_constants_label(const row *r, unsigned varying, char *buf, size_t n);

/* A named query (results/query.h) with ?1 = id when it takes one. */
zb_status plot_rows_open(plot_ctx *c, zb_query which, int64_t id, zb_rows **q);
/* One integer from a named query; *found = 0 when it gives no row or NULL. */
zb_status plot_query_int(plot_ctx *c, zb_query which, int64_t arg, int64_t *out, int *found);
/* --run / --config exist (ZB_E_INPUT naming the range otherwise). */
zb_status plot_check_run(plot_ctx *c, int64_t run);
zb_status plot_check_config(plot_ctx *c, int64_t id);
/* The run a sweep plot draws: --run, the run of --config, or the latest sweep. */
zb_status plot_sweep_run(plot_ctx *c, int64_t *run);
/* The measured steady-state step time of a configuration (NAN: not measured). */
zb_status plot_measured_step_s(plot_ctx *c, int64_t id, double *out);

/* ---- the plot kinds, one file each --------------------------------------------- */

zb_status plot_ratio(plot_ctx *c);    /* plot_ratio.c */
zb_status plot_hardware(plot_ctx *c); /* plot_hardware.c */
zb_status plot_accuracy(plot_ctx *c); /* plot_accuracy.c */
zb_status plot_timeline(plot_ctx *c); /* plot_timeline.c */
zb_status plot_memory(plot_ctx *c);   /* plot_memory.c */
zb_status plot_scaling(plot_ctx *c);  /* plot_scaling.c */

#endif
