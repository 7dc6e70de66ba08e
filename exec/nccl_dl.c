/*
 * nccl_dl.c - dlopen of NCCL (nccl_dl.h). Plain C: the loader and its error messages
 * are the same with or without CUDA, so the CI tests them on a machine without GPU.
 */
#include "exec/nccl_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MIN_VERSION 21200 /* ncclAvg (2.10) and ncclCommAbort; 2.12 to be safe */

#ifdef ZB_HAVE_CUDA
static zb_nccl_api api;
#define SLOT(field) ((void **)&api.field)
#else
#define SLOT(field) NULL /* resolved into slots[] only, to say whether they exist */
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static zb_error load_err;
static int version;

static void load(void)
{
	const struct {
		const char *name;
		void **slot;
	} syms[] = {
		{ "ncclGetVersion", SLOT(GetVersion) },       { "ncclGetErrorString", SLOT(GetErrorString) },
		{ "ncclGetUniqueId", SLOT(GetUniqueId) },     { "ncclCommInitRank", SLOT(CommInitRank) },
		{ "ncclCommDestroy", SLOT(CommDestroy) },     { "ncclCommAbort", SLOT(CommAbort) },
		{ "ncclAllReduce", SLOT(AllReduce) },         { "ncclReduceScatter", SLOT(ReduceScatter) },
		{ "ncclAllGather", SLOT(AllGather) },         { "ncclGroupStart", SLOT(GroupStart) },
		{ "ncclGroupEnd", SLOT(GroupEnd) },
	};
	/* before the library reads its environment (at the first communicator): no
	 * NVLink multicast; every connection made at init, so that no collective call
	 * waits inside NCCL for a peer to make its first call (exec/ranks_cuda.c) */
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("NCCL_RUNTIME_CONNECT", "0", 0);
	const char *lib = getenv("ZB_NCCL_LIBRARY");
	if (!lib || !*lib)
		lib = "libnccl.so.2";
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *why = dlerror();
		zb_fail(&load_err, ZB_E_NOGPU,
			"NCCL not found: %s; set LD_LIBRARY_PATH to the directory of libnccl.so.2 (pip's "
			"nvidia-nccl-cu13 has it in $(python3 -c 'import nvidia.nccl,os;"
			"print(os.path.dirname(nvidia.nccl.__file__))')/lib) or ZB_NCCL_LIBRARY to its path",
			why ? why : lib);
		return;
	}
	void *slots[sizeof syms / sizeof syms[0]];
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		slots[i] = dlsym(h, syms[i].name);
		if (syms[i].slot)
			*syms[i].slot = slots[i];
		if (!slots[i]) {
			zb_fail(&load_err, ZB_E_NOGPU, "NCCL library %s has no %s (NCCL >= 2.12 needed)", lib,
				syms[i].name);
			return;
		}
	}
	int v = 0;
	int (*get_version)(int *) = NULL;
	*(void **)&get_version = slots[0];
	if (get_version(&v) != 0 || v < MIN_VERSION) {
		zb_fail(&load_err, ZB_E_NOGPU, "NCCL library %s is version %d, zbench needs >= %d", lib, v,
			MIN_VERSION);
		return;
	}
	version = v;
}

zb_status zb_nccl_load(zb_error *err)
{
	pthread_once(&once, load);
	if (load_err.status) {
		if (err)
			*err = load_err;
		return load_err.status;
	}
	return ZB_OK;
}

int zb_nccl_version(void) { return version; }

#ifdef ZB_HAVE_CUDA
const zb_nccl_api *zb_nccl(void) { return &api; }
#endif
