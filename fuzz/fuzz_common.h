/*
 * fuzz_common.h - what the libFuzzer harnesses share: the input as a file (the
 * parsers read paths, as zbench does), and a small configuration to run a parsed
 * input through the model when it is accepted.
 *
 * The file is a memfd reached as /proc/self/fd/N: no disk traffic per execution
 * and nothing left behind. Every harness runs the accepted input further (model,
 * memory estimate, schedule and simulation when the schedule is small) so that a
 * value the parser lets through but the model cannot take is found too.
 */
#ifndef ZB_FUZZ_COMMON_H
#define ZB_FUZZ_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/limits.h"
#include "sim/predict.h"
#include "inputs/presets.h"

/* The input written to a file; returns its path (static buffer). */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *name)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create(name, 0);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("memfd write");
		abort();
	}
	return path;
}

/* Schedules up to this many tasks are built and simulated per execution (a few
 * milliseconds); larger accepted ones stop at the memory estimate. */
#define FUZZ_MAX_TASKS 60000

/* Run an accepted configuration as far as it goes: validation, memory, schedule
 * and simulation. Errors are fine; crashes, sanitizer reports and a non-finite
 * result of a successful prediction are not. */
static inline void fuzz_predict(const zb_config *c)
{
	zb_error err;
	if (zb_config_validate(c, &err) != ZB_OK)
		return;
	if (zb_limits_tasks(c) > FUZZ_MAX_TASKS) {
		zb_memory mem;
		zb_memory_estimate(c, &mem);
		return;
	}
	zb_prediction p;
	if (zb_predict(&p, c, &err) != ZB_OK)
		return;
	if (p.simulated && !(isfinite(p.res.step_time_s) && p.res.step_time_s > 0)) {
		fprintf(stderr, "non-finite or non-positive step time %g from an accepted configuration\n",
			p.res.step_time_s);
		abort();
	}
	zb_prediction_free(&p);
}

/* The default machine, gpt2, short: a base the harnesses put a parsed part into. */
static inline void fuzz_base_config(zb_config *c)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	if (zb_preset_model("gpt2", &c->model, &err) != ZB_OK)
		abort();
	zb_policy_defaults(&c->policy);
	c->policy.seq = 256;
	c->steps = 3;
}

#endif
