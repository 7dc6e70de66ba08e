/*
 * csv.h - the one CSV writer of report/: RFC 4180 fields (a field with a comma, a
 * double quote, CR or LF is quoted, its quotes doubled; a missing value is an empty
 * field) and CRLF line ends, so pandas, Python's csv module and spreadsheets read
 * every output the same way. Every CSV zbench prints goes through these calls.
 */
#ifndef ZB_CSV_H
#define ZB_CSV_H

#include <stdio.h>

/* One field; first: no separator before it. s NULL or "": an empty field. */
void zb_csv_field(FILE *f, const char *s, int first);
/* A number with printf's %.*g (empty when not finite). */
void zb_csv_num(FILE *f, double x, int digits, int first);
/* The end of a record. */
void zb_csv_end(FILE *f);

#endif
