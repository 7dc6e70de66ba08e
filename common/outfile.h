/*
 * outfile.h - how zbench writes a file it was asked for: into a fresh temporary
 * beside the target, renamed over it once complete (git's lockfile.c).
 *
 * The temporary is "<path>.tmp.XXXXXX", created with O_CREAT | O_EXCL |
 * O_NOFOLLOW: a symlink or file planted at any name zbench writes is never
 * followed or truncated, and a reader never sees half a file. The rename replaces
 * a symlink at the target itself, not the file it points to. A target that
 * exists and is not a regular file (/dev/stdout, a pipe) is written in place.
 * The file gets mode 0666 less the umask, like fopen's.
 *
 *   zb_outfile o;
 *   if (zb_outfile_open(&o, path, err)) return err->status;
 *   fprintf(o.f, ...);
 *   return zb_outfile_commit(&o, err);   (or zb_outfile_abort(&o) on an error)
 */
#ifndef ZB_OUTFILE_H
#define ZB_OUTFILE_H

#include <stdio.h>

#include "common/error.h"

typedef struct zb_outfile {
	char *path;  /* the target */
	char *tmp;   /* the temporary beside it; NULL when written in place */
	FILE *f;     /* open for writing */
} zb_outfile;

/* Create the temporary (or open a device in place). ZB_E_INPUT naming the path. */
zb_status zb_outfile_open(zb_outfile *o, const char *path, zb_error *err);

/* Flush, sync, close and rename the temporary over the target; on any failure the
 * temporary is removed, the target left as it was, and ZB_E_INPUT says why. */
zb_status zb_outfile_commit(zb_outfile *o, zb_error *err);

/* Close and remove the temporary; the target stays as it was. Safe to call on a
 * zb_outfile that was committed, aborted or never opened (zeroed). */
void zb_outfile_abort(zb_outfile *o);

/* The temporary's name, for a writer that opens it by name (SQLite), with zbench's
 * FILE closed; zb_outfile_commit then renames what that writer left there (after
 * it closed the file), zb_outfile_abort removes it. NULL when written in place. */
const char *zb_outfile_release(zb_outfile *o);

/* The file descriptor of the open file (for a child process's output). */
int zb_outfile_fd(const zb_outfile *o);

/* Whether a file can be created beside path: a temporary made and removed (the
 * check before minutes of work). ZB_E_INPUT naming the folder otherwise. */
zb_status zb_outfile_probe(const char *path, zb_error *err);

#endif
