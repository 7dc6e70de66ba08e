/*
 * fabric.h - built-in fabrics between data-parallel ranks (zb_fabric, core/config.h):
 * NVLink/NVSwitch within a node and the network between nodes, each rate with its
 * source in fabric.c. A machine preset names its fabric (zb_preset_hw); a --hw file
 * gives "fabric" as a name or an object.
 */
#ifndef ZB_FABRIC_H
#define ZB_FABRIC_H

#include <stdio.h>

#include "common/error.h"
#include "core/config.h"

/* Look up by name; unknown: ZB_E_INPUT "unknown fabric 'x' (known: ...)". */
zb_status zb_preset_fabric(const char *name, zb_fabric *out, zb_error *err);

/* The fabric of a machine preset (zeroes: the machine has none, e.g. one GPU). */
void zb_machine_fabric(const char *machine, zb_fabric *out);

int zb_fabric_count(void);
/* The fabric table of `zbench list presets`. */
void zb_fabrics_print(FILE *f);
const char *zb_fabric_name(int i);

#endif
