/*
 * csv.h - the sweep's CSV records (report/sweep_table.c, report/ranks.c) through the one
 * RFC 4180 cell writer of zbench (common/csv.h): a field with a comma, a double quote,
 * CR or LF quoted with its quotes doubled, a missing value an empty field; records end in
 * "\n" like zbench's other outputs (RFC 4180 readers, pandas and Python's csv module take
 * LF as well as CRLF).
 */
#ifndef ZB_REPORT_CSV_H
#define ZB_REPORT_CSV_H

#include <stdio.h>

/* One field, after a comma unless first. s NULL or "": an empty field. */
void zb_csv_put(FILE *f, const char *s, int first);
/* A number with printf's %.*g (empty when not finite). */
void zb_csv_num(FILE *f, double x, int digits, int first);
/* The end of a record. */
void zb_csv_end(FILE *f);

#endif
