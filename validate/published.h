/*
 * published.h - `zbench validate --published`: published CPU-offload measurements
 * (data/published-offload.tsv, each with its setup and source) predicted from the
 * presets alone, with each case's error and the MAPE of the single-GPU cases. A case
 * on several GPUs is predicted with that many data-parallel ranks filling the machine
 * preset's nodes (sharing each node's host), apart from the single-GPU MAPE; each scaling
 * study (one shape on one machine over several GPU counts) gets a line with the per-GPU
 * change published against predicted, whether the direction agrees and the worst point.
 *
 * A check file (tests/data/published-errors.tsv: "id<TAB>error %" lines and one
 * "mape<TAB>%" line) records the current errors; with it the command exits 1 when
 * any case's |error| grows by more than 0.5 points, a recorded case is no longer
 * predicted, or the MAPE grows, so a preset change that makes predictions worse fails
 * the tests. --record prints such a file for the current presets.
 */
#ifndef ZB_PUBLISHED_H
#define ZB_PUBLISHED_H

#include <stdio.h>

#include "common/error.h"

/* Run the suite in path and write its table to out (with record, the record
 * instead); check_path may be NULL, else *worse = 1 when the check finds a
 * regression. An unreadable or malformed file: ZB_E_INPUT naming the file, line
 * and field. */
zb_status zb_published_run(const char *path, const char *check_path, int record, FILE *out, int *worse,
			   zb_error *err);

#endif
