/*
 * nvtx_steps.c - the NVTX step filter of libzbench_inject.so (nvtx_steps.h).
 */
#include "inject/nvtx_steps.h"

#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

int64_t zb_now_ns(void); /* inject.c */

#define DEPTH 64

typedef struct kept {
	int64_t start, end;
	uint64_t id;   /* start/end ranges: the id handed out, until the end */
	uint32_t pid, tid; /* pid: a fork()ed child inherits its parent's list, not its ranges */
	uint8_t type;  /* ZB_NVTX_* */
	char *name;
} kept;

static struct {
	pthread_mutex_t mu;
	kept *v, *open; /* finished ranges and marks; open start/end ranges */
	size_t n, cap, nopen, capopen;
	char match[64];
	size_t mlen;
	long stop_after;
	char spool[3900];
	atomic_int on;
	atomic_long steps;
	atomic_ullong next_id;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* One push/pop stack per thread and kind (the default domain; all other domains):
 * depth and which levels are kept, in initial-exec TLS (32 bytes: a plain
 * %fs-relative load, where the default model for a dlopen()ed library calls
 * __tls_get_addr); the kept levels' starts and names in a block allocated at the
 * thread's first kept range. */
typedef struct kept_levels {
	int64_t start[DEPTH];
	char *name[DEPTH];
} kept_levels;
typedef struct stack {
	uint32_t depth, kept_depth;
	uint64_t kept_bits;
} stack;
#define TLS_IE __thread __attribute__((tls_model("initial-exec")))
static TLS_IE stack stacks[2];
static TLS_IE kept_levels *levels[2];
static TLS_IE uint32_t my_tid;

static uint32_t tid(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	return my_tid;
}

/* Case-insensitive substring test against S.match (lower case): the only work a
 * call whose name does not match does, besides the depth counter. glibc's
 * vectorized strlen and memchr find the candidates for the first character in
 * either case (a byte-by-byte loop was 3/4 of the cost of a call, measured with
 * perf on tests/test_nvtx_steps). */
static int find_from(const char *s, const char *e, char c)
{
	for (const char *p = s; p < e && (p = memchr(p, c, (size_t)(e - p))); p++)
		if ((size_t)(e - p) >= S.mlen && !strncasecmp(p, S.match, S.mlen))
			return 1;
	return 0;
}

static int matches(const char *s)
{
	if (!s || !atomic_load_explicit(&S.on, memory_order_relaxed))
		return 0;
	const char *e = s + strlen(s);
	char lo = S.match[0], up = (char)(lo >= 'a' && lo <= 'z' ? lo - 32 : lo);
	return find_from(s, e, lo) || (up != lo && find_from(s, e, up));
}

static void keep(const kept *k)
{
	pthread_mutex_lock(&S.mu);
	if (S.n == S.cap) {
		size_t cap = S.cap ? 2 * S.cap : 256;
		kept *v = realloc(S.v, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&S.mu);
			free(k->name);
			return; /* out of memory: the range is lost, the program goes on */
		}
		S.v = v, S.cap = cap;
	}
	S.v[S.n] = *k;
	S.v[S.n++].pid = (uint32_t)getpid();
	pthread_mutex_unlock(&S.mu);
}

/* An outermost kept range ended: a step. */
static void step_seen(void)
{
	long n = atomic_fetch_add(&S.steps, 1) + 1;
	if (S.stop_after > 0 && n == S.stop_after)
		zb_inject_finish(); /* before zbench hears of it and sends SIGINT */
	if (!S.spool[0])
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/%ld.steps", S.spool, (long)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, "s", 1);
		(void)w;
		close(fd);
	}
}

static int push(const char *msg, int dom)
{
	stack *s = &stacks[dom];
	uint32_t d = s->depth++;
	if (d < DEPTH && matches(msg)) {
		if (!levels[dom] && !(levels[dom] = calloc(1, sizeof(kept_levels))))
			return (int)d; /* out of memory: not kept */
		s->kept_bits |= (uint64_t)1 << d;
		levels[dom]->start[d] = zb_now_ns();
		levels[dom]->name[d] = strdup(msg);
		s->kept_depth++;
	}
	return (int)d;
}

static int pop(int dom)
{
	stack *s = &stacks[dom];
	if (s->depth == 0)
		return -1;
	uint32_t d = --s->depth;
	if (d < DEPTH && (s->kept_bits >> d & 1)) {
		s->kept_bits &= ~((uint64_t)1 << d);
		s->kept_depth--;
		kept_levels *l = levels[dom];
		kept k = { .start = l->start[d], .end = zb_now_ns(), .tid = tid(), .type = ZB_NVTX_PUSHPOP,
			   .name = l->name[d] };
		l->name[d] = NULL;
		if (k.name) /* strdup may have failed: then nothing to keep */
			keep(&k);
		if (s->kept_depth == 0 && stacks[!dom].kept_depth == 0)
			step_seen();
	}
	return (int)d;
}

static nvtxRangeId_t start(const char *msg)
{
	if (!matches(msg))
		return 0;
	kept k = { .start = zb_now_ns(), .tid = tid(), .type = ZB_NVTX_STARTEND, .name = strdup(msg) };
	k.id = (1ull << 63) | (atomic_fetch_add(&S.next_id, 1) + 1);
	pthread_mutex_lock(&S.mu);
	if (S.nopen == S.capopen) {
		size_t cap = S.capopen ? 2 * S.capopen : 16;
		kept *v = realloc(S.open, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&S.mu);
			free(k.name);
			return 0;
		}
		S.open = v, S.capopen = cap;
	}
	S.open[S.nopen++] = k;
	pthread_mutex_unlock(&S.mu);
	return k.id;
}

static void end(nvtxRangeId_t id)
{
	if (!(id >> 63))
		return; /* not one of the kept ones */
	int64_t now = zb_now_ns();
	kept k = { 0 };
	pthread_mutex_lock(&S.mu);
	for (size_t i = S.nopen; i-- > 0;)
		if (S.open[i].id == id) {
			k = S.open[i];
			S.open[i] = S.open[--S.nopen];
			break;
		}
	pthread_mutex_unlock(&S.mu);
	if (!k.id)
		return;
	k.end = now;
	keep(&k);
	step_seen(); /* start/end ranges do not nest by thread: each is outermost */
}

static void mark(const char *msg)
{
	if (!matches(msg))
		return;
	int64_t now = zb_now_ns();
	kept k = { .start = now, .end = now, .tid = tid(), .type = ZB_NVTX_MARK, .name = strdup(msg) };
	keep(&k);
}

/* The text of an event's attributes: ASCII, or a string registered here. */
static const char *text(const nvtxEventAttributes_t *a)
{
	if (!a)
		return NULL;
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return a->message.ascii;
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
		return (const char *)a->message.registered;
	return NULL;
}

/* ---- the NVTX entry points -------------------------------------------------------- */

static int NVTX_API push_a(const char *m) { return push(m, 0); }
static int NVTX_API push_w(const wchar_t *m) { (void)m; return push(NULL, 0); }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { return push(text(a), 0); }
static int NVTX_API pop_0(void) { return pop(0); }
static int NVTX_API dpush_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { (void)d; return push(text(a), 1); }
static int NVTX_API dpop(nvtxDomainHandle_t d) { (void)d; return pop(1); }
static nvtxRangeId_t NVTX_API start_a(const char *m) { return start(m); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) { return start(text(a)); }
static nvtxRangeId_t NVTX_API dstart_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	(void)d;
	return start(text(a));
}
static void NVTX_API end_0(nvtxRangeId_t id) { end(id); }
static void NVTX_API dend(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; end(id); }
static void NVTX_API mark_a(const char *m) { mark(m); }
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { mark(text(a)); }
static void NVTX_API dmark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { (void)d; mark(text(a)); }
/* registered strings are handles to our own copy, so text() can read them */
static nvtxStringHandle_t NVTX_API reg_a(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)(s ? strdup(s) : NULL);
}

static void set(NvtxFunctionTable t, unsigned size, unsigned id, NvtxFunctionPointer f)
{
	if (id <= size && t[id])
		*t[id] = f;
}

static void configure(void)
{
	const char *m = getenv("ZB_TRACE_STEP_MATCH");
	snprintf(S.match, sizeof S.match, "%s", m && m[0] ? m : "step");
	for (char *p = S.match; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p | 0x20 : *p);
	S.mlen = strlen(S.match);
	const char *n = getenv("ZB_TRACE_STOP_STEPS");
	S.stop_after = n ? strtol(n, NULL, 10) : 0;
	const char *dir = getenv("ZB_TRACE_SPOOL");
	snprintf(S.spool, sizeof S.spool, "%s", dir ? dir : "");
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	NvtxFunctionTable core = NULL, core2 = NULL;
	unsigned n1 = 0, n2 = 0;
	if (!cb || !cb->GetModuleFunctionTable || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n1) ||
	    !core || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n2) || !core2)
		return 0; /* NVTX then makes every call a no-op */
	configure();
	set(core, n1, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
	set(core, n1, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
	set(core, n1, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
	set(core, n1, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop_0);
	set(core, n1, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
	set(core, n1, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex);
	set(core, n1, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end_0);
	set(core, n1, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a);
	set(core, n1, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)mark_ex);
	set(core2, n2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)dpush_ex);
	set(core2, n2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)dpop);
	set(core2, n2, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)dstart_ex);
	set(core2, n2, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)dend);
	set(core2, n2, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)dmark_ex);
	set(core2, n2, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)reg_a);
	atomic_store(&S.on, 1);
	zb_inject_at_exit();
	return 1;
}

void zb_nvtx_steps_take(zb_trace *t)
{
	atomic_store(&S.on, 0);
	pthread_mutex_lock(&S.mu);
	uint32_t dom = zb_trace_intern(t, "");
	for (size_t i = 0; i < S.n; i++) {
		const kept *k = &S.v[i];
		if (k->pid != (uint32_t)getpid())
			continue;
		zb_tr_nvtx r = { .start = k->start, .end = k->end, .process = (uint32_t)getpid(), .thread = k->tid,
				 .text = zb_trace_intern(t, k->name), .domain = dom, .event_type = k->type };
		zb_trace_add_nvtx(t, &r);
		free(k->name);
	}
	t->nvtx_unmatched += S.nopen; /* start/end ranges never ended */
	S.n = 0;
	pthread_mutex_unlock(&S.mu);
}

size_t zb_nvtx_steps_count(void)
{
	pthread_mutex_lock(&S.mu);
	size_t n = 0;
	for (size_t i = 0; i < S.n; i++)
		n += S.v[i].pid == (uint32_t)getpid();
	pthread_mutex_unlock(&S.mu);
	return n;
}
