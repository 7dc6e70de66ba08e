/*
 * gpu_load_shim.c - build/zbench's side of the GPU functions (gpu_entry.h): the
 * same functions as the *_cuda.c files that define them, forwarding to
 * build/lib/libzbench_gpu.so, which is loaded (dlopen) on the first call. A
 * command that never calls one (predict, sweep, plot, export, ...) never maps
 * the CUDA libraries.
 *
 * Linked only into build/zbench of a CUDA build (the Makefile's *_shim.c rule);
 * test programs link the CUDA objects themselves.
 *
 * Where the library is: ZBENCH_GPU_LIB if set, else lib/libzbench_gpu.so beside
 * the executable (build/zbench -> build/lib/libzbench_gpu.so). If it cannot be
 * loaded, every GPU command says so in one line (ZB_E_NOCUDA, exit 2) with the
 * loader's reason, as a build without nvcc says "built without CUDA".
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/gpu_entry.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const zb_gpu_entry *table;
static void *handle; /* the library, for the other layers' tables (zb_gpu_symbol) */
static zb_error load_err;

/* lib/libzbench_gpu.so beside the executable; "" if /proc/self/exe is unreadable */
static void library_path(char *out, size_t cap)
{
	const char *env = getenv("ZBENCH_GPU_LIB");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(out, cap, "libzbench_gpu.so"); /* the loader's search path (rpath, LD_LIBRARY_PATH) */
		return;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(out, cap, "%s/lib/libzbench_gpu.so", exe);
}

static void load(void)
{
	char path[PATH_MAX + 32];
	library_path(path, sizeof path);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		zb_fail(&load_err, ZB_E_NOCUDA, "cannot load the GPU library: %s", why ? why : path);
		return;
	}
	const zb_gpu_entry *(*entry)(void) = (const zb_gpu_entry *(*)(void))dlsym(h, "zb_gpu_entry_points");
	const zb_gpu_entry *t = entry ? entry() : NULL;
	if (!t || t->abi != ZB_GPU_ABI || t->size != sizeof *t) {
		zb_fail(&load_err, ZB_E_NOCUDA, "the GPU library %s does not match this zbench (abi %u, want %u): rebuild both",
			path, t ? t->abi : 0u, (unsigned)ZB_GPU_ABI);
		dlclose(h);
		return;
	}
	table = t; /* the library stays loaded for the life of the process */
	handle = h;
}

const zb_gpu_entry *zb_gpu_load(zb_error *err)
{
	pthread_once(&once, load);
	if (!table && err)
		*err = load_err;
	return table;
}

void *zb_gpu_symbol(const char *name, zb_error *err)
{
	if (!zb_gpu_load(err))
		return NULL;
	void *p = dlsym(handle, name);
	if (!p)
		zb_fail(err, ZB_E_NOCUDA, "the GPU library has no %s: rebuild it", name);
	return p;
}

/* Loaded already (a call that needs the library has run): no load here. */
static const zb_gpu_entry *loaded(void)
{
	pthread_once(&once, load);
	return table;
}

int zb_exec_available(zb_error *err)
{
	const zb_gpu_entry *t = zb_gpu_load(err);
	return t ? t->exec_available(err) : 0;
}

zb_status zb_execute(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
		     zb_error *err)
{
	const zb_gpu_entry *t = zb_gpu_load(err);
	if (!t) {
		memset(r, 0, sizeof *r);
		return err ? err->status : load_err.status;
	}
	return t->execute(g, c, o, r, err);
}

void zb_exec_result_free(zb_exec_result *r)
{
	/* a result that zb_execute filled was filled by the library, already loaded */
	const zb_gpu_entry *t = loaded();
	if (t)
		t->exec_result_free(r);
}

zb_status zb_trace_start(zb_trace *t, zb_error *err)
{
	const zb_gpu_entry *e = zb_gpu_load(err);
	return e ? e->trace_start(t, err) : load_err.status;
}

zb_status zb_trace_stop(zb_trace *t, zb_error *err)
{
	const zb_gpu_entry *e = loaded();
	return e ? e->trace_stop(t, err) : ZB_OK; /* no library: no session was started */
}

zb_status zb_execute_ranks(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			   zb_error *err)
{
	const zb_gpu_entry *t = zb_gpu_load(err);
	return t ? t->execute_ranks(g, c, o, r, err) : load_err.status;
}

/* No library: no GPU that NCCL could use (the caller then skips the fabric). */
int zb_nccl_gpus(void)
{
	zb_error err;
	const zb_gpu_entry *t = zb_gpu_load(&err);
	return t ? t->nccl_gpus() : 0;
}

zb_status zb_nccl_calibrate(int quick, zb_nccl_fabric *out, FILE *log, zb_error *err)
{
	const zb_gpu_entry *t = zb_gpu_load(err);
	return t ? t->nccl_calibrate(quick, out, log, err) : load_err.status;
}
