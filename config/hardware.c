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

/* --cores: at most the part's cores; more is a CPU that does not exist, which only
 * --hypothetical-cpu (or the file's cpu.hypothetical) asks for, and every output labels. */
static zb_status cores(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	int part = c->hw.cpu.cores, want = part;
	ZB_INT_AXIS(v, ZB_AX_CORES, want);
	if (!v[ZB_AX_CORES])
		return ZB_OK;
	if (want > part && !in->hypothetical_cpu && !c->hw.cpu.hypothetical)
		return zb_fail(err, ZB_E_INPUT,
			       "--cores %d: cpu %s has %d cores (a CPU with more: --hypothetical-cpu, or a CPU preset "
			       "that has them, zbench list presets)", want, c->hw.cpu.name, part);
	if (want > part)
		c->hw.cpu.hypothetical = 1;
	c->hw.cpu.cores = want;
	zb_src_mark(s, ZB_SET_CORES, ZB_SRC_FLAG, "--cores %s%s", v[ZB_AX_CORES],
		    want > part ? " (a hypothetical CPU: more cores than the part)" : "");
	return ZB_OK;
}

/* A positive real axis in its unit (x scale) into *field when given. */
static zb_status real_axis(const char *const v[ZB_AX_COUNT], zb_axis a, double scale, double *field, zb_error *err)
{
	double x;
	if (!v[a])
		return ZB_OK;
	if (zb_axis_parse_real(v[a], a, &x, err))
		return ZB_E_INPUT;
	if (!(x > 0) || x * scale > 1e18)
		return zb_fail(err, ZB_E_INPUT, "%s %s must be positive (and below 1e18 in SI units)", zb_axis_flag(a), v[a]);
	*field = x * scale;
	return ZB_OK;
}

/* --host-mem GiB, --dram-bw GB/s (Adam's own memory ceiling keeps its fraction of it),
 * --cpu-adam Gparam/s per core. */
static zb_status host(const char *const v[ZB_AX_COUNT], zb_cpu *cpu, zb_error *err)
{
	zb_status st;
	double old = cpu->dram_Bps;
	if ((st = real_axis(v, ZB_AX_HOST_MEM, 1024.0 * 1024.0 * 1024.0, &cpu->mem_bytes, err)) ||
	    (st = real_axis(v, ZB_AX_DRAM_BW, 1e9, &cpu->dram_Bps, err)) ||
	    (st = real_axis(v, ZB_AX_CPU_ADAM, 1e9, &cpu->adam_params_per_core, err)))
		return st;
	if (cpu->adam_Bps > 0 && old > 0)
		cpu->adam_Bps *= cpu->dram_Bps / old;
	return ZB_OK;
}

/* What a machine-hour costs: --price, else the file's price_per_hour, else --prices. */
static zb_status price(const zb_config_inputs *in, zb_config *c, zb_error *err)
{
	const char *const *v = in->value;
	if (v[ZB_AX_PRICE])
		return real_axis(v, ZB_AX_PRICE, 1, &c->hw.price_per_hour, err);
	if (!(c->hw.price_per_hour > 0) && in->prices) {
		int gpus = 1;
		ZB_INT_AXIS(v, ZB_AX_GPUS, gpus);
		c->hw.price_per_hour = zb_prices_machine(in->prices, &c->hw, gpus);
	}
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
	if ((st = cores(in, c, s, err)))
		return st;
	if ((st = host(v, &c->hw.cpu, err)))
		return st;
	ZB_INT_AXIS(v, ZB_AX_GPUS_PER_LINK, c->hw.gpus_per_link);
	ZB_INT_AXIS(v, ZB_AX_GPUS_PER_CPU, c->hw.gpus_per_cpu);
	return price(in, c, err);
}
