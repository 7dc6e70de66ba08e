/*
 * clock.h - the one clock of zbench: CLOCK_MONOTONIC.
 *
 * Thread-pool spans, the executor's host timestamps, the profiler's CPU spans and
 * (through cuptiActivityRegisterTimestampCallback) CUPTI's records all use it, so a
 * CPU span, a kernel record and a predicted event compare directly. Benchmarks time
 * themselves with the same clock in seconds.
 */
#ifndef ZB_CLOCK_H
#define ZB_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* clock_gettime(CLOCK_MONOTONIC) in nanoseconds. */
int64_t zb_now_ns(void);

/* The same clock in seconds, for wall-time measurements (benchmarks, calibration). */
double zb_wall_s(void);

#ifdef __cplusplus
}
#endif

#endif
