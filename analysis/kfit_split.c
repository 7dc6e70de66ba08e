/* kfit_split.c - the executor profile fitted on one part of the configurations and judged on the
 * rest; see kfit_split.h. */
#include "analysis/kfit_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_MODEL, T_POLICY, T_THREADS, T_PACED, T_PAGEABLE };

static zb_status parse_term(const char *t, size_t len, zb_kfit_rule *r, zb_error *err)
{
	char term[96];
	if (len == 0 || len >= sizeof term)
		return zb_fail(err, ZB_E_INPUT, "--holdout '%s': %s term", r->text, len ? "too long a" : "an empty");
	memcpy(term, t, len);
	term[len] = 0;
	if (r->n == ZB_KFIT_RULE_TERMS)
		return zb_fail(err, ZB_E_INPUT, "--holdout '%s': more than %d terms", r->text, ZB_KFIT_RULE_TERMS);
	const char *colon = strchr(term, ':'), *v = colon ? colon + 1 : term;
	int kind = T_MODEL;
	if (!strcmp(term, "paced") || !strcmp(term, "pageable")) {
		kind = strcmp(term, "paced") ? T_PAGEABLE : T_PACED;
		v = "";
	} else if (colon) {
		size_t k = (size_t)(colon - term);
		if (k == 5 && !strncmp(term, "model", 5))
			kind = T_MODEL;
		else if (k == 6 && !strncmp(term, "policy", 6))
			kind = T_POLICY;
		else if (k == 7 && !strncmp(term, "threads", 7))
			kind = T_THREADS;
		else
			return zb_fail(err, ZB_E_INPUT, "--holdout: unknown term '%s' (known: model:NAME, policy:NAME, "
				       "threads:N, paced, pageable)", term);
	}
	if (kind != T_PACED && kind != T_PAGEABLE && (!*v || strlen(v) >= ZB_NAME_MAX))
		return zb_fail(err, ZB_E_INPUT, "--holdout: term '%s' needs a value", term);
	zb_policy_kind pk;
	zb_status st;
	if (kind == T_POLICY && (st = zb_policy_parse(v, &pk, err)))
		return st;
	if (kind == T_THREADS && (strspn(v, "0123456789") != strlen(v) || atoi(v) < 1))
		return zb_fail(err, ZB_E_INPUT, "--holdout: term '%s': threads must be a count >= 1", term);
	r->term[r->n].kind = kind;
	snprintf(r->term[r->n].value, sizeof r->term[r->n].value, "%s", v);
	r->n++;
	return ZB_OK;
}

zb_status zb_kfit_rule_parse(const char *text, zb_kfit_rule *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	if (!text || strlen(text) >= sizeof out->text)
		return zb_fail(err, ZB_E_INPUT, "--holdout: %s", text ? "rule too long" : "missing rule");
	snprintf(out->text, sizeof out->text, "%s", text);
	const char *p = text;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		zb_status st = parse_term(p, len, out, err);
		if (st)
			return st;
		if (!comma)
			return ZB_OK;
		p = comma + 1;
	}
}

int zb_kfit_rule_holds_out(const zb_kfit_rule *r, const zb_config *c)
{
	for (int i = 0; i < r->n; i++) {
		const char *v = r->term[i].value;
		switch (r->term[i].kind) {
		case T_MODEL: if (!strcmp(c->model.name, v)) return 1; break;
		case T_POLICY: if (!strcmp(zb_policy_name(c->policy.kind), v)) return 1; break;
		case T_THREADS: if (zb_config_cpu_threads(c) == atoi(v)) return 1; break;
		case T_PACED: if (c->policy.link_rate_Bps > 0) return 1; break;
		case T_PAGEABLE: if (c->policy.pageable) return 1; break;
		}
	}
	return 0;
}

/* Whether x's configuration is one the fit used (of s, use[k] set). */
static int fitted_on(const zb_kfit_set *s, const unsigned char *use, const zb_kfit_item *x)
{
	for (int k = 0; k < s->n; k++)
		if (use[k] && zb_kfit_same_config(&s->it[k].c, &x->c))
			return 1;
	return 0;
}

/* The items of s marked in pick[] (with their predictions p) and those of j marked in jpick[],
 * as one set to summarize; j's runs apart from s's (a run id of one database is not one of the
 * other). which(): the family filter (NULL: all). */
typedef struct joined {
	zb_kfit_set set;
	zb_kfit_pred *pred;
} joined;

static void join(const zb_kfit_set *s, const unsigned char *pick, const zb_kfit_pred *p, const zb_kfit_set *j,
		 const unsigned char *jpick, const zb_kfit_pred *jp, const char *model, const char *policy, joined *out)
{
	int cap = s->n + (j ? j->n : 0);
	out->set = *s;
	out->set.it = zb_xcalloc((size_t)(cap ? cap : 1), sizeof *out->set.it);
	out->pred = zb_xcalloc((size_t)(cap ? cap : 1), sizeof *out->pred);
	out->set.n = 0;
	int64_t off = 0;
	for (int k = 0; k < s->n; k++)
		off = s->it[k].run_id > off ? s->it[k].run_id : off;
	for (int side = 0; side < 2; side++) {
		const zb_kfit_set *x = side ? j : s;
		const unsigned char *use = side ? jpick : pick;
		for (int k = 0; x && k < x->n; k++) {
			const zb_config *c = &x->it[k].c;
			if (!use[k] || (model && strcmp(c->model.name, model)) ||
			    (policy && strcmp(zb_policy_name(c->policy.kind), policy)))
				continue;
			zb_kfit_item *it = &out->set.it[out->set.n];
			*it = x->it[k]; /* shallow: the arrays stay the sets' own */
			if (side)
				it->run_id += off + 1;
			out->pred[out->set.n++] = (side ? jp : p)[k];
		}
	}
}

static void summarize_part(const zb_kfit_holdout *h, const zb_kfit_set *s, const zb_kfit_set *j, const char *model,
			   const char *policy, zb_kfit_summary *out)
{
	joined x;
	join(s, h->held, h->pred, j, h->judged, h->jpred, model, policy, &x);
	zb_kfit_summarize(&x.set, x.pred, out);
	free(x.set.it);
	free(x.pred);
}

/* The held-out summary by model, then by policy, in order of first appearance. */
static void families(zb_kfit_holdout *h, const zb_kfit_set *s, const zb_kfit_set *j)
{
	for (int by = 0; by < 2; by++)
		for (int side = 0; side < 2; side++) {
			const zb_kfit_set *x = side ? j : s;
			const unsigned char *use = side ? h->judged : h->held;
			for (int k = 0; x && k < x->n; k++) {
				const zb_config *c = &x->it[k].c;
				const char *name = by ? zb_policy_name(c->policy.kind) : c->model.name;
				char label[sizeof h->fam[0].name];
				snprintf(label, sizeof label, "%s %s", by ? "policy" : "model", name);
				int f = 0;
				while (f < h->nfam && strcmp(h->fam[f].name, label))
					f++;
				if (!use[k] || f < h->nfam || h->nfam == ZB_KFIT_FAMILIES)
					continue;
				snprintf(h->fam[f].name, sizeof h->fam[f].name, "%s", label);
				summarize_part(h, s, j, by ? NULL : name, by ? name : NULL, &h->fam[f].sum);
				h->nfam++;
			}
		}
}

zb_status zb_kfit_holdout_run(const zb_kfit_set *s, const zb_kfit_set *judge, const zb_kfit_rule *r,
			      const zb_hw *base, zb_kfit_holdout *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	int jn = judge ? judge->n : 0;
	out->held = zb_xcalloc((size_t)(s->n ? s->n : 1), 1);
	out->judged = zb_xcalloc((size_t)(jn ? jn : 1), 1);
	out->pred = zb_xcalloc((size_t)(s->n ? s->n : 1), sizeof *out->pred);
	out->jpred = zb_xcalloc((size_t)(jn ? jn : 1), sizeof *out->jpred);
	unsigned char *use = zb_xcalloc((size_t)(s->n ? s->n : 1), 1);
	for (int k = 0; k < s->n; k++) {
		out->held[k] = (unsigned char)zb_kfit_rule_holds_out(r, &s->it[k].c);
		use[k] = !out->held[k];
		out->held_n += out->held[k];
	}
	out->fit_n = s->n - out->held_n;
	zb_status st = ZB_OK;
	if (out->held_n == 0 || out->fit_n == 0)
		st = zb_fail(err, ZB_E_INPUT, "--holdout %s: %s", r->text,
			     out->held_n ? "every configuration is held out" : "no configuration is held out");
	for (int k = 0; !st && k < jn; k++) {
		out->judged[k] = (unsigned char)!fitted_on(s, use, &judge->it[k]);
		out->judge_n += out->judged[k];
	}
	if (!st)
		st = zb_kfit_fit(s, use, base, &out->fitted, &out->stats, err);
	if (!st)
		st = zb_kfit_predict(s, &out->fitted, out->pred, err);
	if (!st && judge)
		st = zb_kfit_predict(judge, &out->fitted, out->jpred, err);
	if (!st) {
		joined x;
		join(s, use, out->pred, NULL, NULL, NULL, NULL, NULL, &x);
		zb_kfit_summarize(&x.set, x.pred, &out->in_sample);
		free(x.set.it);
		free(x.pred);
		summarize_part(out, s, judge, NULL, NULL, &out->held_out);
		families(out, s, judge);
	}
	free(use);
	return st;
}

void zb_kfit_holdout_free(zb_kfit_holdout *h)
{
	free(h->held);
	free(h->judged);
	free(h->pred);
	free(h->jpred);
	memset(h, 0, sizeof *h);
}
