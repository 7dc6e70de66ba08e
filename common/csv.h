/*
 * csv.h - the one CSV writer of zbench (RFC 4180): every --csv output and
 * `zbench export --format csv` write their text cells through it.
 *
 * A cell is written as it is unless it holds a comma, a double quote, CR or LF;
 * then it is double-quoted with each double quote doubled. Ordinary values (names,
 * numbers) are unchanged, so a table of them reads as before; a model named "a,b"
 * stays one cell, and a newline in a cell stays inside its quotes. Rows end in "\n"
 * as zbench's other outputs do (RFC 4180 readers take LF as well as CRLF).
 */
#ifndef ZB_CSV_H
#define ZB_CSV_H

#include <stddef.h>
#include <stdio.h>

/* s (NULL: empty) as one cell. */
void zb_csv_field(FILE *f, const char *s);

/* s as one cell in buf (cut short, still quoted, if buf is too small); returns buf.
 * For rows written with one printf. A name of ZB_NAME_MAX bytes needs
 * ZB_CSV_CELL_MAX. */
#define ZB_CSV_CELL_MAX 160
const char *zb_csv_cell(const char *s, char *buf, size_t n);

#endif
