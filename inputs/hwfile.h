/*
 * hwfile.h - hardware and model descriptions as JSON files (through jansson), so a
 * calibrated machine can be saved and reused: `--hw FILE`, `--model-file FILE`.
 *
 * Hardware file: {"name": ..., "link": {...}, "gpu": {...}, "cpu": {...},
 * "gpus_per_link": 1, "gpus_per_cpu": 1}; each of link/gpu/cpu may instead be a
 * preset name string ("link": "gen5"). Field names match the struct fields of
 * config.h. Missing required fields, wrong types, unknown keys and values out of
 * range are errors naming the file, the key and the value.
 */
#ifndef ZB_HWFILE_H
#define ZB_HWFILE_H

#include "common/error.h"
#include "core/config.h"

zb_status zb_hw_load(const char *path, zb_hw *out, zb_error *err);
/* The same from a parsed JSON object (json_t *, opaque here); path names it in errors. */
zb_status zb_hw_from_json(const void *obj, const char *path, zb_hw *out, zb_error *err);
zb_status zb_model_load(const char *path, zb_model *out, zb_error *err);
/* The same from a parsed JSON object (json_t *, opaque here); path names it in errors. */
zb_status zb_model_from_json(const void *obj, const char *path, zb_model *out, zb_error *err);

/* Write atomically (temp file + rename) so a failure leaves no half file. */
zb_status zb_hw_save(const char *path, const zb_hw *hw, zb_error *err);
zb_status zb_model_save(const char *path, const zb_model *m, zb_error *err);

/* JSON text of a whole configuration (hw, model, policy, steps) for the database
 * and for --json outputs. Caller frees with free(). */
char *zb_config_to_json(const zb_config *c);
/* ... and back (a stored configuration: `zbench report` re-derives what it shows). A
 * stored link_rate_Bps is taken as stored (its caps already applied to the link). */
zb_status zb_config_from_json(const char *text, zb_config *out, zb_error *err);

/* zb_config_to_json's text is {"hw":H,"model":M,"policy":P,"steps":N} with every
 * real at one precision, the fewest digits with which all of them read back. A
 * sweep assembles it from parts it caches (sim/config_text.h): each part's text
 * at a given precision, and which precisions suit that part's reals (least: the
 * most digits one of them needs; ok: bit p set when %.{p}g reads all back). */
typedef enum zb_config_part { ZB_PART_HW, ZB_PART_MODEL, ZB_PART_POLICY, ZB_PART_COUNT } zb_config_part;
typedef struct zb_json_digits {
	int least;
	unsigned ok;
} zb_json_digits;
/* The part's compact text at `precision` (caller frees; NULL when precision is 0)
 * and, when digits is not NULL, its digits. */
char *zb_config_json_part(const zb_config *c, zb_config_part part, int precision, zb_json_digits *digits);
/* The precision zb_config_to_json uses for a document made of these parts. */
int zb_json_digits_join(const zb_json_digits *parts, int n);

#endif
