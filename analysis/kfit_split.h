/*
 * kfit_split.h - the held-out check of the executor profile (kfit.h): fitted on the
 * configurations a split rule leaves in, judged on those it holds out, and on the
 * configurations of other runs (another suite's database) that the fit never saw; the
 * errors of the held-out ones also by model and by policy family. A split by model and
 * regime, not by alternate rows: alternate rows of one suite share every model and
 * regime with the fit, and judge interpolation, not what a user predicts.
 *
 * A rule is comma-separated terms; a configuration is held out when any term matches:
 *   model:NAME    its model (the preset name, e.g. gpt2-large; "custom" for an override)
 *   policy:NAME   none, offload, overlap or dpu
 *   threads:N     CPU Adam threads
 *   paced         a --link-rate configuration
 *   pageable      pageable host memory
 *   NAME          model:NAME (as --holdout took it before)
 */
#ifndef ZB_KFIT_SPLIT_H
#define ZB_KFIT_SPLIT_H

#include "analysis/kfit.h"
#include "analysis/kfit_eval.h"

enum { ZB_KFIT_RULE_TERMS = 8, ZB_KFIT_FAMILIES = 32 };

typedef struct zb_kfit_rule {
	int n;
	struct {
		int kind;        /* model, policy, threads, paced, pageable */
		char value[ZB_NAME_MAX];
	} term[ZB_KFIT_RULE_TERMS];
	char text[256];      /* as given */
} zb_kfit_rule;

/* Parse text; an unknown term kind, an empty term or a bad value is an error naming it. */
zb_status zb_kfit_rule_parse(const char *text, zb_kfit_rule *out, zb_error *err);
/* Whether the rule holds configuration c out. */
int zb_kfit_rule_holds_out(const zb_kfit_rule *r, const zb_config *c);

typedef struct zb_kfit_family {
	char name[ZB_NAME_MAX + 8]; /* "model gpt2-xl", "policy dpu" */
	zb_kfit_summary sum;
} zb_kfit_family;

typedef struct zb_kfit_holdout {
	zb_hw fitted;                /* the profile fitted on the configurations left in */
	zb_kfit_stats stats;
	int fit_n, held_n, judge_n;  /* items fitted on, held out of s, judged in judge */
	unsigned char *held;         /* s->n: 1 where held out */
	unsigned char *judged;       /* judge->n: 1 where judged (its configuration not fitted on) */
	zb_kfit_pred *pred, *jpred;  /* the fitted profile's predictions of s and of judge */
	zb_kfit_summary in_sample;   /* over the configurations fitted on */
	zb_kfit_summary held_out;    /* over the held-out ones of s and the judged ones of judge */
	int nfam;
	zb_kfit_family fam[ZB_KFIT_FAMILIES]; /* held_out by model, then by policy */
} zb_kfit_holdout;

/* Fit base's profile (zb_kfit_fit) on the items of s that r leaves in, and predict every
 * item of s and of judge (NULL: none). ZB_E_INPUT when the rule holds out none or all of
 * s. Free with zb_kfit_holdout_free. */
zb_status zb_kfit_holdout_run(const zb_kfit_set *s, const zb_kfit_set *judge, const zb_kfit_rule *r,
			      const zb_hw *base, zb_kfit_holdout *out, zb_error *err);
void zb_kfit_holdout_free(zb_kfit_holdout *h);

#endif
