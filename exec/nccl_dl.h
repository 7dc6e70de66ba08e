/*
 * nccl_dl.h - NCCL, loaded at run time with dlopen so that zbench starts (and the CI
 * builds and tests) without it; only `zbench run --gpus N` (N > 1) and `zbench bench
 * nccl` need the library.
 *
 * The library is ZB_NCCL_LIBRARY when set (a path or a soname), else "libnccl.so.2"
 * found through LD_LIBRARY_PATH and the binary's rpath. Loading also sets
 * NCCL_NVLS_ENABLE=0 unless the environment says otherwise: NVLink SHARP multicast
 * objects are not wanted on the machines zbench borrows (and a ring or tree over
 * NVLink is what the fabric model of the simulator describes); and
 * NCCL_RUNTIME_CONNECT=0 (connections at communicator init, not at the first
 * collective, which would make that call wait for the peers inside NCCL).
 *
 * With CUDA (ZB_HAVE_CUDA) the typed entry points are in zb_nccl_api, with nccl.h's
 * types; ZB_NCCL_TRY checks a call and names ncclGetErrorString's text.
 */
#ifndef ZB_NCCL_DL_H
#define ZB_NCCL_DL_H

#include "common/error.h"

/* Load the library and resolve every entry point, once per process (thread-safe).
 * Fails with one line: "NCCL not found: <dlerror>; set LD_LIBRARY_PATH ..." or the
 * symbol that is missing, or a version older than 2.12 (ncclAvg). */
zb_status zb_nccl_load(zb_error *err);
/* The library's version code (2.28.9 -> 22809) once loaded, else 0. */
int zb_nccl_version(void);

#ifdef ZB_HAVE_CUDA
#include <nccl.h>

typedef struct zb_nccl_api {
	ncclResult_t (*GetVersion)(int *version);
	const char *(*GetErrorString)(ncclResult_t result);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
	ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
	ncclResult_t (*CommDestroy)(ncclComm_t comm);
	ncclResult_t (*CommAbort)(ncclComm_t comm);
	ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
				  ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t recvcount, ncclDataType_t type,
				      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*AllGather)(const void *send, void *recv, size_t sendcount, ncclDataType_t type,
				  ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
} zb_nccl_api;

/* The entry points; valid after zb_nccl_load() succeeded. */
const zb_nccl_api *zb_nccl(void);

/* Check an NCCL call; on failure return a zb_status from the enclosing function. */
#define ZB_NCCL_TRY(err, call)                                                                              \
	do {                                                                                                    \
		ncclResult_t zb_nccl_r_ = (call);                                                               \
		if (zb_nccl_r_ != ncclSuccess)                                                                  \
			return zb_fail((err), ZB_E_CUDA, "%.120s failed: %s (%d) at %s:%d", #call,              \
				       zb_nccl()->GetErrorString(zb_nccl_r_), (int)zb_nccl_r_, __FILE__, __LINE__); \
	} while (0)
#endif

#endif
