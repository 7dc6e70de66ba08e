/*
 * report_html.h - `zbench report`: one stored sweep as one self-contained HTML file a
 * buyer can hand on: the answer (each machine's best configuration ranked by tokens per
 * dollar, or by tokens/s when unpriced, with DeepSpeed's and zbench's schedule side by
 * side, the bottleneck and what would remove it, simulated), the plots inlined as SVG
 * (gnuplot through plots/: hardware, throughput, memory), every configuration with
 * every varied axis, what does not fit and why, where every preset figure comes from,
 * the profiles used, and the zbench version and command lines. Every string from the
 * database or the user is escaped; the file is written beside the target and renamed.
 *
 * The rows are predicted again from their stored configurations by this build (the
 * simulator is deterministic); where that differs from what was stored, the report
 * says how many rows and which zbench stored them.
 */
#ifndef ZB_REPORT_HTML_H
#define ZB_REPORT_HTML_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

/* At most this many configurations in one report (each is simulated again). */
#define ZB_REPORT_MAX_ROWS 5000

typedef struct zb_report_request {
	int64_t run_id;           /* 0: the latest sweep */
	const char *output;       /* FILE.html */
	const char *command_line; /* this report's, shown in it */
	double tokens;            /* the training run the cost columns price (0: 1e10) */
} zb_report_request;

typedef struct zb_report_info {
	int64_t run_id;
	int rows, machines, plots, differ;
} zb_report_info;

zb_status zb_report_html(zb_store *s, const zb_report_request *req, zb_report_info *info, zb_error *err);

#endif
