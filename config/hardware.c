/*
 * hardware.c - the hardware part of zb_config_resolve: a machine (preset, hardware
 * JSON file, or the default H200 machine), then the --gpu, --pcie, --cpu, --cores
 * and --gpus-per-link overrides, in that order whatever the flag order.
 */
#include "config/parts.h"

#include <string.h>
#include <sys/stat.h>

#include "inputs/hwfile.h"
#include "inputs/presets.h"

/* --hw names a file when it looks like a path or names an existing file. */
static int is_file(const char *s)
{
	struct stat st;
	return strchr(s, '/') || strstr(s, ".json") ? 1 : stat(s, &st) == 0 && S_ISREG(st.st_mode);
}

static zb_status machine(const char *const v[ZB_AX_COUNT], zb_config *c, zb_sources *s, zb_error *err)
{
	zb_status st;
	if (v[ZB_AX_HW] && is_file(v[ZB_AX_HW]))
		st = zb_hw_load(v[ZB_AX_HW], &c->hw, err);
	else if (v[ZB_AX_HW])
		st = zb_preset_hw(v[ZB_AX_HW], &c->hw, err);
	else
		zb_preset_default_hw(&c->hw), st = ZB_OK;
	if (st)
		return st;
	zb_source hw_from = v[ZB_AX_HW] ? ZB_SRC_FLAG : ZB_SRC_DEFAULT;
	if (v[ZB_AX_HW])
		zb_src_mark(s, ZB_SET_HW, ZB_SRC_FLAG, "--hw %s", v[ZB_AX_HW]);
	else
		zb_src_mark(s, ZB_SET_HW, ZB_SRC_DEFAULT, "the H200 machine this project measures on");
	zb_src_mark(s, ZB_SET_PCIE, hw_from, "of machine %s", c->hw.name);
	zb_src_mark(s, ZB_SET_GPU, hw_from, "of machine %s", c->hw.name);
	zb_src_mark(s, ZB_SET_CPU, hw_from, "of machine %s", c->hw.name);
	zb_src_mark(s, ZB_SET_CORES, hw_from, "of cpu %s", c->hw.cpu.name);
	return ZB_OK;
}

zb_status zb_resolve_hardware(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	if ((st = machine(v, c, s, err)))
		return st;
	if (v[ZB_AX_GPU]) {
		if ((st = zb_preset_gpu(v[ZB_AX_GPU], &c->hw.gpu, err)))
			return st;
		zb_src_mark(s, ZB_SET_GPU, ZB_SRC_FLAG, "--gpu %s", v[ZB_AX_GPU]);
		if (c->hw.gpu.builtin_link[0] && !v[ZB_AX_PCIE]) {
			if ((st = zb_preset_link(c->hw.gpu.builtin_link, &c->hw.link, err)))
				return st;
			zb_src_mark(s, ZB_SET_PCIE, ZB_SRC_FLAG, "the link of --gpu %s", v[ZB_AX_GPU]);
		}
	}
	if (v[ZB_AX_PCIE]) {
		if ((st = zb_preset_link(v[ZB_AX_PCIE], &c->hw.link, err)))
			return st;
		zb_src_mark(s, ZB_SET_PCIE, ZB_SRC_FLAG, "--pcie %s", v[ZB_AX_PCIE]);
	}
	if (v[ZB_AX_CPU]) {
		if ((st = zb_preset_cpu(v[ZB_AX_CPU], &c->hw.cpu, err)))
			return st;
		zb_src_mark(s, ZB_SET_CPU, ZB_SRC_FLAG, "--cpu %s", v[ZB_AX_CPU]);
		zb_src_mark(s, ZB_SET_CORES, ZB_SRC_FLAG, "of --cpu %s", v[ZB_AX_CPU]);
	}
	ZB_INT_AXIS(v, ZB_AX_CORES, c->hw.cpu.cores);
	if (v[ZB_AX_CORES])
		zb_src_mark(s, ZB_SET_CORES, ZB_SRC_FLAG, "--cores %s", v[ZB_AX_CORES]);
	ZB_INT_AXIS(v, ZB_AX_GPUS_PER_LINK, c->hw.gpus_per_link);
	ZB_INT_AXIS(v, ZB_AX_GPUS_PER_CPU, c->hw.gpus_per_cpu);
	return ZB_OK;
}
