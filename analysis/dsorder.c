/* dsorder.c - configurations pooled over sessions and their order; see dsorder.h. */
#include "analysis/dsorder.h"

#include <string.h>

#include "common/stats.h"
#include "core/model.h"

/* One model: the same dimensions when both rows carry their shape (a JSON line's shape is
 * named after its family, a table's after the command line's preset), else the same name. */
static int same_model(const zb_ds_row *a, const zb_ds_row *b)
{
	if (a->have_shape != b->have_shape)
		return 0;
	if (!a->have_shape)
		return !strcmp(a->model, b->model);
	const zb_model *x = &a->shape, *y = &b->shape;
	return x->layers == y->layers && x->hidden == y->hidden && x->heads == y->heads &&
	       x->kv_heads == y->kv_heads && x->ffn == y->ffn && x->vocab == y->vocab &&
	       x->gated_mlp == y->gated_mlp && x->tied_embeddings == y->tied_embeddings &&
	       zb_model_params(x) == zb_model_params(y);
}

/* A row's 0 is the command line's value (base). */
static int64_t or_base(int64_t v, int64_t base) { return v ? v : base; }

static int same_config(const zb_ds_row *a, const zb_ds_row *b, const zb_policy *base)
{
	return !strcmp(a->name, b->name) && same_model(a, b) && or_base(a->seq, base->seq) == or_base(b->seq, base->seq) &&
	       or_base(a->micro_batch, base->micro_batch) == or_base(b->micro_batch, base->micro_batch) &&
	       or_base(a->sub_group_size, base->sub_group_size) == or_base(b->sub_group_size, base->sub_group_size);
}

int zb_ds_pool(const zb_ds_measured *m, const zb_ds_eval *e, const zb_config *base, zb_ds_pooled *out)
{
	int n = 0;
	for (int i = 0; i < m->n; i++) {
		const zb_ds_row *r = &m->rows[i];
		int k = 0;
		while (k < n && !same_config(&m->rows[out[k].row[0]], r, &base->policy))
			k++;
		zb_ds_pooled *c = &out[k];
		if (k == n) {
			memset(c, 0, sizeof *c);
			c->predicted_s = e[i].step_s;
			c->fits = e[i].fits;
			n++;
		}
		if (c->nrows == ZB_DS_POOL_ROWS)
			continue; /* more sessions than kept: the first ones decide */
		c->row[c->nrows++] = i;
		if (r->nsteps == 0)
			c->steps_s[c->nsteps++] = r->step_s;
		for (int s = 0; s < r->nsteps; s++)
			c->steps_s[c->nsteps++] = r->steps_s[s];
	}
	for (int k = 0; k < n; k++)
		out[k].measured_s = zb_median(out[k].steps_s, out[k].nsteps);
	return n;
}

void zb_ds_order_check(const zb_ds_measured *m, const zb_ds_pooled *c, int n, zb_ds_order *o, FILE *list)
{
	memset(o, 0, sizeof *o);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			if (!c[i].fits || !c[j].fits)
				continue;
			o->pairs++;
			double p = zb_rank_sum_p(c[i].steps_s, c[i].nsteps, c[j].steps_s, c[j].nsteps);
			const char *a = m->rows[c[i].row[0]].name, *b = m->rows[c[j].row[0]].name;
			double dm = c[i].measured_s - c[j].measured_s, dp = c[i].predicted_s - c[j].predicted_s;
			if (p >= ZB_DS_ORDER_ALPHA) {
				if (list)
					fprintf(list, "#   not separated by the measurements: %s %.0f / %s %.0f ms (p %.2f; "
						      "predicted %.0f / %.0f)\n", a, c[i].measured_s * 1e3, b,
						c[j].measured_s * 1e3, p, c[i].predicted_s * 1e3, c[j].predicted_s * 1e3);
				continue;
			}
			o->separated++;
			if ((dm > 0) == (dp > 0) && dp != 0)
				o->in_order++;
			else if (list)
				fprintf(list, "#   out of order: %s %.0f / %s %.0f ms measured (p %.3f), predicted %.0f / %.0f\n",
					a, c[i].measured_s * 1e3, b, c[j].measured_s * 1e3, p, c[i].predicted_s * 1e3,
					c[j].predicted_s * 1e3);
		}
}
