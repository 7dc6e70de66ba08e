/*
 * parts.h - private to validate/: what `baseline save` (baseline_save.c) and
 * `regress` (regress.c) share. Not for use outside validate/; the public API is
 * regress.h.
 */
#ifndef ZB_VALIDATE_PARTS_H
#define ZB_VALIDATE_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "results/records.h"
#include "results/store.h"
#include "validate/regress.h"

/* Run one configuration o->repeats times (once with sim): the median step time into
 * res (times 1 + o->plant), *fits 0 with the reason when it does not fit, the GPU's
 * name into device (n bytes; "" with sim). Stored in store (may be NULL) under run_id. */
zb_status zb_regress_measure(const zb_config *c, const zb_regress_opts *o, zb_store *store, int64_t run_id,
			     zb_baseline_result *res, int *fits, char *reason, size_t rn, char *device, size_t dn,
			     zb_error *err);

/* The hardware profile `hw` names (NULL: the default machine) as the JSON document
 * zb_hw_load reads (malloc'd), and its name. */
zb_status zb_regress_hw_profile(const char *hw, char **json, char *name, size_t nn, zb_error *err);

/* o->db opened for writing; must_exist: ZB_E_INPUT when there is no such file. */
zb_status zb_regress_open_db(const zb_regress_opts *o, int must_exist, zb_store **s, zb_error *err);

#endif
