/* outfile.c - temporaries beside the target, renamed over it; see outfile.h. */
#include "common/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SUFFIX ".tmp."
#define RANDOM_CHARS 6
#define ATTEMPTS 100

/* Six random letters and digits: unpredictable, so a name cannot be planted in
 * advance (O_EXCL would refuse it anyway; this keeps such a plant from blocking). */
static void random_name(char *out)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[RANDOM_CHARS];
	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		uint64_t x = (uint64_t)t.tv_nsec * 2654435761u ^ (uint64_t)getpid() << 20 ^ (uint64_t)t.tv_sec;
		for (int i = 0; i < RANDOM_CHARS; i++, x >>= 6)
			r[i] = (unsigned char)x;
	}
	for (int i = 0; i < RANDOM_CHARS; i++)
		out[i] = set[r[i] % (sizeof set - 1)];
	out[RANDOM_CHARS] = 0;
}

/* A fresh file "<path>.tmp.XXXXXX"; its name into *tmp (malloc'd). -1 with errno. */
static int create_beside(const char *path, char **tmp)
{
	size_t n = strlen(path) + sizeof SUFFIX + RANDOM_CHARS;
	char *name = zb_xmalloc(n);
	for (int i = 0; i < ATTEMPTS; i++) {
		char r[RANDOM_CHARS + 1];
		random_name(r);
		snprintf(name, n, "%s" SUFFIX "%s", path, r);
		int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0) {
			*tmp = name;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	int e = errno;
	free(name);
	errno = e;
	return -1;
}

zb_status zb_outfile_open(zb_outfile *o, const char *path, zb_error *err)
{
	memset(o, 0, sizeof *o);
	if (!path || !*path)
		return zb_fail(err, ZB_E_INPUT, "empty output path");
	struct stat st;
	int fd;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return zb_fail(err, ZB_E_INPUT, "cannot write '%s': it is a directory", path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC); /* a device or pipe, in place */
	else
		fd = create_beside(path, &o->tmp);
	if (fd < 0)
		return zb_fail(err, ZB_E_INPUT, "cannot write '%s': %s", path, strerror(errno));
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;
		close(fd);
		zb_outfile_abort(o);
		return zb_fail(err, ZB_E_INPUT, "cannot write '%s': %s", path, strerror(e));
	}
	o->path = strdup(path);
	if (!o->path) {
		zb_outfile_abort(o);
		return zb_fail(err, ZB_E_NOMEM, "cannot write '%s': out of memory", path);
	}
	return ZB_OK;
}

int zb_outfile_fd(const zb_outfile *o) { return o->f ? fileno(o->f) : -1; }

const char *zb_outfile_release(zb_outfile *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	return o->tmp;
}

zb_status zb_outfile_commit(zb_outfile *o, zb_error *err)
{
	if (!o->path || (!o->f && !o->tmp))
		return zb_fail(err, ZB_E_INTERNAL, "output '%s' is not open", o->path ? o->path : "?");
	int ok = 1, e = 0;
	if (o->f) { /* released: its writer flushed and synced the file itself */
		ok = fflush(o->f) == 0 && !ferror(o->f);
		e = errno;
		if (ok && o->tmp && fsync(fileno(o->f)) != 0)
			ok = 0, e = errno;
		if (fclose(o->f) != 0 && ok)
			ok = 0, e = errno;
		o->f = NULL;
	}
	if (ok && o->tmp && rename(o->tmp, o->path) != 0)
		ok = 0, e = errno;
	zb_status st = ok ? ZB_OK : zb_fail(err, ZB_E_INPUT, "cannot write '%s': %s", o->path, strerror(e));
	if (ok) {
		free(o->tmp);
		o->tmp = NULL;
	}
	zb_outfile_abort(o);
	return st;
}

void zb_outfile_abort(zb_outfile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
}

zb_status zb_outfile_probe(const char *path, zb_error *err)
{
	zb_outfile o;
	zb_status st = zb_outfile_open(&o, path, err);
	if (!st)
		zb_outfile_abort(&o);
	return st;
}
