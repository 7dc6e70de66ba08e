/* executor_nocuda.c - the executor of a build without nvcc: it says so. */
#include "exec/executor.h"

#include <string.h>

int zb_exec_available(zb_error *err)
{
	zb_fail(err, ZB_E_NOCUDA, "built without CUDA (nvcc was not found at build time)");
	return 0;
}

zb_status zb_execute(const zb_graph *g, const zb_config *c, const zb_exec_options *o,
		     zb_exec_result *r, zb_error *err)
{
	memset(r, 0, sizeof *r);
	return zb_fail(err, ZB_E_NOCUDA, "built without CUDA (nvcc was not found at build time)");
}

zb_status zb_execute_ranks(const zb_graph *g, const zb_config *c, const zb_exec_options *o,
			   zb_exec_result *r, zb_error *err)
{
	for (int i = 0; i < (g->ranks > 0 ? g->ranks : 1); i++)
		memset(&r[i], 0, sizeof r[i]);
	return zb_fail(err, ZB_E_NOCUDA, "built without CUDA (nvcc was not found at build time)");
}

void zb_exec_result_free(zb_exec_result *r) { (void)r; }
