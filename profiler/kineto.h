/*
 * kineto.h - a PyTorch profiler trace (Kineto's Chrome-trace JSON: what
 * torch.profiler's export_chrome_trace writes, what HTA and TensorBoard read) as a
 * zbench trace (trace.h), so `zbench import` stores it in the same tables as a
 * CUPTI trace of zbench's own and `analyze` / `compare` read it unchanged.
 *
 * What is read (every other event is counted and left out):
 *   kernel              a kernel: stream, device, correlation, grid, block, registers
 *   gpu_memcpy          a copy: bytes, direction and memory kinds from its name
 *                       ("Memcpy HtoD (Pinned -> Device)")
 *   gpu_memset          a memset: bytes, memory kind ("Memset (Device)")
 *   cuda_runtime,       CUDA API calls, with their correlation to the GPU records
 *   cuda_driver
 *   user_annotation     the program's ranges (record_function, DeepSpeed's and
 *                       PyTorch's annotations): NVTX push/pop ranges of kind program
 *   ProfilerStep#N      a step of torch.profiler's schedule (cat cpu_op or
 *                       user_annotation): a program range
 *   cpu_op              PyTorch operators: ranges of kind cpu_op (stored, not read as
 *                       the program's ranges, so their names cut no steps)
 *   gpu_user_annotation the annotations again on the GPU's tracks: kind gpu_annotation
 *   python_function     Python frames (with_stack): kind python
 *   M thread_name       the threads' names; deviceProperties: the GPU
 * Times: "ts" and "dur" in microseconds (fractions to the nanosecond); records are
 * kept in nanoseconds from the earliest event (zb_kineto_trace.origin_ns is that
 * event's time). An event whose ts or dur is not a finite number >= 0 (or ends
 * past 2^53 ns) is left out and counted in bad_times.
 *
 * Files: plain JSON or gzip-compressed (.json.gz, read through zlib whatever the
 * name), the object form ({"traceEvents": [...], ...}) or a bare event list.
 */
#ifndef ZB_KINETO_H
#define ZB_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "profiler/trace.h"

/* The largest trace read: jansson holds the whole document (about 10x the text). */
#define ZB_KINETO_MAX_BYTES ((size_t)2 << 30)

typedef struct zb_kineto_counts {
	size_t kernels, memcpys, memsets, apis;
	size_t annotations;      /* program ranges: user annotations and ProfilerStep#N */
	size_t profiler_steps;   /* of which ProfilerStep#N */
	size_t cpu_ops, gpu_annotations, python;
	size_t threads;          /* thread names */
	size_t bad_times;        /* left out: ts or dur not a finite number >= 0 */
	size_t other;            /* left out: flows, metadata, overhead, categories not read */
	double h2d_bytes, d2h_bytes;
} zb_kineto_counts;

typedef struct zb_kineto_thread {
	uint32_t pid, tid;
	uint32_t name;           /* string id of the trace */
} zb_kineto_thread;

typedef struct zb_kineto_trace {
	zb_trace *t;             /* the records (zb_trace_free), times in ns from origin_ns */
	zb_kineto_thread *threads;
	size_t nthreads;
	int64_t origin_ns;       /* the earliest event's ts, in ns of the trace's clock */
	zb_kineto_counts n;
} zb_kineto_trace;

/* Whether the first bytes of a file look like a Kineto trace: gzip's magic, or JSON
 * (an object or a list) after blanks. */
int zb_kineto_sniff(const unsigned char *head, size_t n);

/* Parse a trace held in memory (len bytes, need not end in NUL); `name` names it in
 * errors. ZB_E_INPUT with one line on malformed JSON (its line), a document that is
 * not a trace, or a trace without any GPU or CPU activity read. */
zb_status zb_kineto_parse(const char *text, size_t len, const char *name, zb_kineto_trace *out, zb_error *err);

/* Read path (plain or gzip) and parse it. */
zb_status zb_kineto_read(const char *path, zb_kineto_trace *out, zb_error *err);

void zb_kineto_free(zb_kineto_trace *k);

#endif
