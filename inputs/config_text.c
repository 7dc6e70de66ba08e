/* config_text.c - cached parts of a configuration's JSON text; see config_text.h. */
#include "inputs/config_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "inputs/hwfile.h"

#define HW_SLOTS 1024 /* hardware parts kept (a sweep's hardware combinations, modulo) */

typedef struct part {
	int used;
	union {
		zb_hw hw;
		zb_model model;
		zb_policy policy;
	} key;              /* the struct the text was made from, compared bytewise */
	int framework;      /* the policy's text depends on it (DeepSpeed's ZeRO fields) */
	zb_json_digits digits;
	int precision;      /* of text; 0: no text yet */
	char *text;
	size_t len;
} part;

struct zb_config_text {
	part hw[HW_SLOTS], model, policy;
	char *buf;
	size_t cap;
};

zb_config_text *zb_config_text_new(void) { return zb_xcalloc(1, sizeof(zb_config_text)); }

static void part_clear(part *p)
{
	free(p->text);
	memset(p, 0, sizeof *p);
}

void zb_config_text_free(zb_config_text *t)
{
	if (!t)
		return;
	for (int i = 0; i < HW_SLOTS; i++)
		part_clear(&t->hw[i]);
	part_clear(&t->model);
	part_clear(&t->policy);
	free(t->buf);
	free(t);
}

static const void *part_of(const zb_config *c, zb_config_part which, size_t *size)
{
	switch (which) {
	case ZB_PART_HW:
		*size = sizeof c->hw;
		return &c->hw;
	case ZB_PART_MODEL:
		*size = sizeof c->model;
		return &c->model;
	default:
		*size = sizeof c->policy;
		return &c->policy;
	}
}

/* The entry holds this part of c (its digits known; its text maybe not yet). */
static void part_take(part *p, const zb_config *c, zb_config_part which)
{
	size_t size;
	const void *src = part_of(c, which, &size);
	int fw = which == ZB_PART_POLICY ? (int)c->framework : 0;
	if (p->used && p->framework == fw && !memcmp(&p->key, src, size))
		return;
	part_clear(p);
	p->used = 1;
	p->framework = fw;
	memcpy(&p->key, src, size);
	free(zb_config_json_part(c, which, 0, &p->digits));
}

static void part_text(part *p, const zb_config *c, zb_config_part which, int precision)
{
	if (p->precision == precision)
		return;
	free(p->text);
	p->text = zb_config_json_part(c, which, precision, NULL);
	if (!p->text) { /* jansson fails only without memory: as zb_xmalloc does */
		fprintf(stderr, "zbench: out of memory formatting a configuration (%s:%d)\n", __FILE__, __LINE__);
		abort();
	}
	p->len = strlen(p->text);
	p->precision = precision;
}

const char *zb_config_text_get(zb_config_text *t, const zb_config *c, long hw_slot)
{
	part *parts[ZB_PART_COUNT] = { &t->hw[(hw_slot < 0 ? 0 : hw_slot) % HW_SLOTS], &t->model, &t->policy };
	zb_json_digits d[ZB_PART_COUNT];
	for (int i = 0; i < ZB_PART_COUNT; i++) {
		part_take(parts[i], c, (zb_config_part)i);
		d[i] = parts[i]->digits;
	}
	int precision = zb_json_digits_join(d, ZB_PART_COUNT);
	for (int i = 0; i < ZB_PART_COUNT; i++)
		part_text(parts[i], c, (zb_config_part)i, precision);
	size_t need = parts[0]->len + parts[1]->len + parts[2]->len + 64;
	if (need > t->cap) {
		t->cap = need * 2;
		t->buf = zb_xrealloc(t->buf, t->cap);
	}
	/* key order as zb_config_to_json writes it */
	snprintf(t->buf, t->cap, "{\"hw\":%s,\"model\":%s,%s\"policy\":%s,\"steps\":%d}", parts[0]->text,
		 parts[1]->text, c->framework == ZB_FW_DEEPSPEED ? "\"framework\":\"deepspeed\"," : "", parts[2]->text,
		 c->steps);
	return t->buf;
}
