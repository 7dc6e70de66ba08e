/*
 * parts.h - private to config/: the steps of zb_config_resolve (one file each) and
 * the bookkeeping they share. Not for use outside config/; the public API is
 * resolve.h.
 */
#ifndef ZB_CONFIG_PARTS_H
#define ZB_CONFIG_PARTS_H

#include "config/resolve.h"

/* The hardware: machine preset or file, then --gpu, --pcie, --cpu, --cores,
 * --gpus-per-link (config/hardware.c). */
zb_status zb_resolve_hardware(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err);
/* The model: preset, --model-file or the Hugging Face config, then shape flags
 * (config/model.c). */
zb_status zb_resolve_model(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err);
/* The policy: defaults, the DeepSpeed config for the model resolved so far, then
 * policy flags, then ZeRO-3's Twin-Flow sub-groups (config/policy.c). */
zb_status zb_resolve_policy(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err);

/* Parse an integer or real value of axis a ("25M" for --bucket); errors name the flag. */
int zb_axis_parse_int(const char *s, zb_axis a, long long *out, zb_error *err);
int zb_axis_parse_real(const char *s, zb_axis a, double *out, zb_error *err);
/* An integer axis into an int field when given: 0, or -1 with err. */
int zb_axis_int_field(const char *const v[ZB_AX_COUNT], zb_axis a, int *field, zb_error *err);
/* ... and return ZB_E_INPUT from the calling step on a bad value. */
#define ZB_INT_AXIS(v, ax, field)                                       \
	do {                                                            \
		if (zb_axis_int_field((v), (ax), &(field), err))        \
			return ZB_E_INPUT;                              \
	} while (0)

/* Record where setting k came from (printf detail), a flag that set it (and what it
 * overrides from a file), or more detail. */
void zb_src_mark(zb_sources *s, zb_setting k, zb_source from, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void zb_src_mark_flag(zb_sources *s, zb_setting k, zb_axis a, const char *val);
void zb_src_note(zb_sources *s, zb_setting k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
