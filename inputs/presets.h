/*
 * presets.h - built-in hardware and model descriptions, each value with its
 * source in a comment in presets.c. Listed by `zbench list presets`.
 */
#ifndef ZB_PRESETS_H
#define ZB_PRESETS_H

#include <stdio.h>

#include "common/error.h"
#include "core/config.h"

/* Look up by name (case-sensitive). On an unknown name: ZB_E_INPUT with
 * "unknown pcie generation 'gen7' (known: gen3, gen4, gen5, gen6, nvlink-c2c)". */
zb_status zb_preset_link(const char *name, zb_link *out, zb_error *err);
zb_status zb_preset_gpu(const char *name, zb_gpu *out, zb_error *err);
zb_status zb_preset_cpu(const char *name, zb_cpu *out, zb_error *err);
zb_status zb_preset_model(const char *name, zb_model *out, zb_error *err);

/* A whole machine: named systems (h200-machine, dgx-a100, dgx-h100, dgx-2, gh200)
 * pick a link, GPU and CPU. */
zb_status zb_preset_hw(const char *name, zb_hw *out, zb_error *err);

/* The default machine: the H200 machine this project measures on. */
void zb_preset_default_hw(zb_hw *out);
/* The default model: gpt2-large. */
void zb_preset_default_model(zb_model *out);

/* Number of presets of a family and the name of the i-th, for sweeps and listing.
 * family: "pcie", "gpu", "cpu", "model", "hw". Returns 0 for an unknown family. */
int zb_preset_count(const char *family);
const char *zb_preset_name(const char *family, int i);

/* The source of a preset's figures in one line ("measured on the H200 machine: ...",
 * "datasheet: ...", "estimate: ..."); family "pcie", "gpu" or "cpu". NULL when unknown
 * (a file's part, a model). */
const char *zb_preset_source(const char *family, const char *name);

/* Print every preset with its main figures as fixed-width tables. */
void zb_presets_print(FILE *f);

#endif
