/* spans.c - per-thread CPU span buffers; see spans.h. */
#include "profiler/spans.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"

struct zb_span_buf {
	zb_span *v;
	size_t n, cap;
	int64_t tid;
	uint64_t pthread;
	int virtual_index; /* -1 for a real thread */
	char name[64];
};

struct zb_spans {
	pthread_mutex_t mu;
	zb_span_buf **bufs;
	int nbufs, cap;
};

zb_spans *zb_spans_create(void)
{
	zb_spans *s = zb_xcalloc(1, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void zb_spans_free(zb_spans *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nbufs; i++) {
		free(s->bufs[i]->v);
		free(s->bufs[i]);
	}
	free(s->bufs);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int64_t zb_gettid(void) { return (int64_t)syscall(SYS_gettid); }

/* Register a new buffer; the caller holds s->mu. */
static zb_span_buf *add_buf(zb_spans *s, const char *name, int64_t tid, int virtual_index)
{
	zb_span_buf *b = zb_xcalloc(1, sizeof *b);
	b->tid = tid;
	b->virtual_index = virtual_index;
	snprintf(b->name, sizeof b->name, "%s", name ? name : "");
	/* a first chunk, so the common case never grows inside a timed loop */
	b->cap = 1024;
	b->v = zb_xmalloc(b->cap * sizeof *b->v);
	if (s->nbufs == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->bufs = zb_xrealloc(s->bufs, (size_t)s->cap * sizeof *s->bufs);
	}
	s->bufs[s->nbufs++] = b;
	return b;
}

zb_span_buf *zb_spans_thread(zb_spans *s, const char *name)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->mu);
	zb_span_buf *b = add_buf(s, name, zb_gettid(), -1);
	b->pthread = (uint64_t)pthread_self();
	pthread_mutex_unlock(&s->mu);
	return b;
}

zb_span_buf *zb_spans_virtual(zb_spans *s, const char *name, int index)
{
	if (!s || index < 0)
		return NULL;
	pthread_mutex_lock(&s->mu);
	zb_span_buf *b = NULL;
	for (int i = 0; i < s->nbufs && !b; i++)
		if (s->bufs[i]->virtual_index == index)
			b = s->bufs[i];
	if (!b)
		b = add_buf(s, name, ZB_SPANS_VIRTUAL_TID + index, index);
	pthread_mutex_unlock(&s->mu);
	return b;
}

void zb_span_add(zb_span_buf *b, zb_span_kind kind, int32_t task, int32_t other, int64_t start_ns, int64_t end_ns)
{
	if (!b)
		return;
	if (b->n == b->cap) {
		b->cap *= 2;
		b->v = zb_xrealloc(b->v, b->cap * sizeof *b->v);
	}
	zb_span *sp = &b->v[b->n++];
	sp->start_ns = start_ns;
	sp->end_ns = end_ns < start_ns ? start_ns : end_ns;
	sp->task = task;
	sp->other = other;
	sp->kind = (uint8_t)kind;
}

int zb_spans_nthreads(const zb_spans *s) { return s ? s->nbufs : 0; }

const char *zb_spans_thread_name(const zb_spans *s, int i) { return s->bufs[i]->name; }

int64_t zb_spans_thread_tid(const zb_spans *s, int i) { return s->bufs[i]->tid; }

uint64_t zb_spans_thread_pthread(const zb_spans *s, int i) { return s->bufs[i]->pthread; }

const zb_span *zb_spans_data(const zb_spans *s, int i, size_t *n)
{
	*n = s->bufs[i]->n;
	return s->bufs[i]->v;
}

size_t zb_spans_total(const zb_spans *s)
{
	size_t n = 0;
	for (int i = 0; s && i < s->nbufs; i++)
		n += s->bufs[i]->n;
	return n;
}

const char *zb_span_kind_name(zb_span_kind k)
{
	static const char *const names[] = { "task", "issue", "worker", "wait" };
	return (unsigned)k < ZB_SPAN_KIND_COUNT ? names[k] : "?";
}
