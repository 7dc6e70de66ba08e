/*
 * test_physics.c - whole predictions (zb_predict: memory, schedule, simulation) on
 * the presets obey the physics DESIGN.md describes: offload is free when PCIe and
 * the CPU are free; no step beats its busiest resource; serial ZeRO-Offload is the
 * sum of its phases; more overlap, faster links and more cores never hurt; what
 * does not fit is reported, not simulated.
 */
#include "tests/harness.h"

#include "core/config.h"
#include "core/model.h"
#include "sim/predict.h"
#include "inputs/presets.h"

#define STEPS 5

static const char *const gens[] = { "gen3", "gen4", "gen5", "gen6" };
#define NGENS (int)(sizeof gens / sizeof gens[0])

static void base_config(zb_config *c, const char *model)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_error err = { 0 };
	assert_int_equal(zb_preset_model(model, &c->model, &err), ZB_OK);
	zb_policy_defaults(&c->policy);
	c->steps = STEPS;
}

static void set_link(zb_config *c, const char *gen)
{
	zb_error err = { 0 };
	assert_int_equal(zb_preset_link(gen, &c->hw.link, &err), ZB_OK);
}

/* Predict and require a simulation. */
static void predict(zb_prediction *p, const zb_config *c)
{
	zb_error err = { 0 };
	zb_status st = zb_predict(p, c, &err);
	if (st)
		print_error("zb_predict: %s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	if (!p->simulated)
		print_error("not simulated: %s\n", p->mem.reason);
	assert_true(p->simulated);
	assert_true(p->res.step_time_s > 0);
}

static double step_time(const zb_config *c)
{
	zb_prediction p;
	predict(&p, c);
	double t = p.res.step_time_s;
	zb_prediction_free(&p);
	return t;
}

static void label(char *buf, size_t n, const zb_config *c)
{
	snprintf(buf, n, "%s %s %s ratio %.2f cores %d", c->model.name, c->hw.link.name,
		 zb_policy_name(c->policy.kind), c->policy.ratio, c->hw.cpu.cores);
}

/* ---- offload is free when PCIe and the CPU are ------------------------------------ */

static void test_unlimited_host_approaches_none(void **state)
{
	const char *models[] = { "gpt2-large", "gpt2-xl" };
	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
		zb_config c;
		base_config(&c, models[mi]);
		zb_link *l = &c.hw.link;
		l->h2d_Bps = l->d2h_Bps = l->pageable_h2d_Bps = l->pageable_d2h_Bps = 1e15;
		c.hw.cpu.adam_params_per_core = 1e15;
		c.hw.cpu.adam_Bps = 1e15;
		c.hw.cpu.dram_Bps = 1e15;
		c.policy.kind = ZB_POLICY_NONE;
		zb_prediction p;
		predict(&p, &c);
		double none = p.res.step_time_s, gpu_compute = p.res.work_s[ZB_RES_GPU];
		zb_prediction_free(&p);
		for (int pk = ZB_POLICY_OVERLAP; pk <= ZB_POLICY_DPU; pk++)
			for (double r = 0; r <= 1.0 + 1e-9; r += 0.25) {
				c.policy.kind = (zb_policy_kind)pk;
				c.policy.ratio = r;
				double t = step_time(&c);
				/* Within 5% of none. Offload may be faster than none: the optimizer
				 * work it moves to the (here infinitely fast) CPU no longer shares
				 * the GPU with compute (gpt2-large at ratio 1: 5.2% faster), but
				 * never faster than the GPU's compute alone. */
				if (!(t <= 1.05 * none && t >= gpu_compute * (1 - 1e-9))) {
					char what[256];
					label(what, sizeof what, &c);
					print_error("%s: %.4f ms vs none %.4f ms (GPU compute %.4f ms)\n", what, t * 1e3,
						    none * 1e3, gpu_compute * 1e3);
				}
				assert_true(t <= 1.05 * none);
				assert_true(t >= gpu_compute * (1 - 1e-9));
			}
	}
}

/* ---- the lower bound ----------------------------------------------------------------- */

static void test_never_below_lower_bound(void **state)
{
	int n = 0;
	for (int gi = 0; gi < NGENS; gi++)
		for (int pk = 0; pk < ZB_POLICY_COUNT; pk++)
			for (int ri = 0; ri <= 10; ri++) {
				zb_config c;
				base_config(&c, "gpt2-large");
				set_link(&c, gens[gi]);
				c.policy.kind = (zb_policy_kind)pk;
				c.policy.ratio = ri / 10.0;
				zb_prediction p;
				predict(&p, &c);
				const zb_sim_result *r = &p.res;
				if (!(r->step_time_s >= r->lower_bound_s * (1 - 1e-9))) {
					char what[256];
					label(what, sizeof what, &c);
					print_error("%s: step %.6f ms below the bound %.6f ms (%s)\n", what,
						    r->step_time_s * 1e3, r->lower_bound_s * 1e3,
						    zb_resource_name(r->bound_resource));
				}
				assert_true(r->step_time_s >= r->lower_bound_s * (1 - 1e-9));
				/* the bound is the largest alone-time, and no resource is busier
				 * than the step (busy time is measured inside the step window) */
				double mx = 0;
				for (int res = 0; res < ZB_RES_COUNT; res++) {
					if (r->work_s[res] > mx)
						mx = r->work_s[res];
					assert_true(r->busy_s[res] <= r->step_time_s * (1 + 1e-9));
					/* contention only slows a resource down */
					assert_true(r->busy_s[res] >= 0);
				}
				assert_close(r->lower_bound_s, mx, 0);
				assert_close(r->lower_bound_s, r->work_s[r->bound_resource], 0);
				assert_close(r->busy_s[r->bottleneck], r->busy_s[r->bottleneck], 0);
				for (int res = 0; res < ZB_RES_COUNT; res++)
					assert_true(r->busy_s[res] <= r->busy_s[r->bottleneck]);
				zb_prediction_free(&p);
				n++;
			}
	assert_int_equal(n, NGENS * ZB_POLICY_COUNT * 11);
}

/* ---- serial ZeRO-Offload is the sum of its parts -------------------------------------- */

static void test_serial_offload_is_sum_of_parts(void **state)
{
	const char *models[] = { "gpt2-large", "gpt2-xl", "opt-1.3b" };
	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++)
		for (int gi = 0; gi < NGENS; gi++) {
			zb_config c;
			base_config(&c, models[mi]);
			set_link(&c, gens[gi]);
			c.policy.kind = ZB_POLICY_OFFLOAD;
			c.policy.ratio = 1;
			zb_prediction p;
			predict(&p, &c);
			const double *w = p.res.work_s;
			double sum = w[ZB_RES_GPU] + w[ZB_RES_D2H] + w[ZB_RES_CPU] + w[ZB_RES_H2D];
			assert_true(w[ZB_RES_GPU_OPT] == 0); /* ratio 1: no GPU optimizer */
			if (fabs(p.res.step_time_s - sum) > 0.02 * sum) {
				char what[256];
				label(what, sizeof what, &c);
				print_error("%s: step %.3f ms, parts %.3f + %.3f + %.3f + %.3f = %.3f ms\n", what,
					    p.res.step_time_s * 1e3, w[ZB_RES_GPU] * 1e3, w[ZB_RES_D2H] * 1e3,
					    w[ZB_RES_CPU] * 1e3, w[ZB_RES_H2D] * 1e3, sum * 1e3);
			}
			assert_close(p.res.step_time_s, sum, 0.02);
			zb_prediction_free(&p);
		}
}

/* ---- more overlap never hurts ------------------------------------------------------------ */

static void test_dpu_le_overlap_le_offload(void **state)
{
	const char *models[] = { "gpt2-large", "gpt2-xl" };
	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++)
		for (int gi = 0; gi < NGENS; gi++)
			for (int ri = 0; ri <= 10; ri++) {
				zb_config c;
				base_config(&c, models[mi]);
				set_link(&c, gens[gi]);
				c.policy.ratio = ri / 10.0;
				double t[ZB_POLICY_COUNT];
				for (int pk = ZB_POLICY_OFFLOAD; pk <= ZB_POLICY_DPU; pk++) {
					c.policy.kind = (zb_policy_kind)pk;
					t[pk] = step_time(&c);
				}
				if (!(t[ZB_POLICY_DPU] <= 1.01 * t[ZB_POLICY_OVERLAP] &&
				      t[ZB_POLICY_OVERLAP] <= 1.01 * t[ZB_POLICY_OFFLOAD])) {
					char what[256];
					label(what, sizeof what, &c);
					print_error("%s: offload %.3f overlap %.3f dpu %.3f ms\n", what,
						    t[ZB_POLICY_OFFLOAD] * 1e3, t[ZB_POLICY_OVERLAP] * 1e3,
						    t[ZB_POLICY_DPU] * 1e3);
				}
				assert_true(t[ZB_POLICY_DPU] <= 1.01 * t[ZB_POLICY_OVERLAP]);
				assert_true(t[ZB_POLICY_OVERLAP] <= 1.01 * t[ZB_POLICY_OFFLOAD]);
			}
}

/* ---- faster links and more cores never hurt ------------------------------------------------ */

/* Both properties are checked on the presets as they are for the policies whose
 * CPU and PCIe phases do not overlap (none, offload), and for every policy with
 * host DRAM made non-limiting. With the preset DRAM (h200-machine: 150 GB/s shared
 * by Adam and DMA, proportional slowdown as measured) they do not hold, and that
 * is the model, not the engine: a faster link draws more DRAM while its copies
 * run, so the concurrent CPU Adam on the critical path loses more (gpt2-large,
 * overlap, ratio 0.5: gen4 117.2 ms, gen5 119.6 ms per step); and 32 cores make
 * Adam DRAM-bound (150 GB/s, was 123 on 16), which starves gen3's copies on the
 * critical path (dpu, ratio 0.5: 16 cores 101.0 ms, 32 cores 110.2 ms). With
 * DRAM unlimited both are monotone again. */

/* 2e-3: zbench's executor profile slows the GPU while Adam holds every core
 * ("starved", execprofile.h), so a faster link that moves Adam's tasks can move GPU
 * work into those periods: up to 0.15 % of a step (gpt2-large, overlap, ratio 0.5, 16
 * cores, DRAM unlimited: gen5 155.32 ms, gen4 155.10) */
#define MONO_TOL 2e-3

static int dram_matters(int policy) { return policy == ZB_POLICY_OVERLAP || policy == ZB_POLICY_DPU; }

static void test_faster_pcie_never_slower(void **state)
{
	for (int lift = 0; lift <= 1; lift++)
		for (int pk = 0; pk < ZB_POLICY_COUNT; pk++) {
			if (!lift && dram_matters(pk))
				continue;
			for (int ri = 0; ri <= 4; ri++) {
				double prev = 0;
				for (int gi = 0; gi < NGENS; gi++) {
					zb_config c;
					base_config(&c, "gpt2-large");
					set_link(&c, gens[gi]);
					if (lift)
						c.hw.cpu.dram_Bps = 1e15;
					c.policy.kind = (zb_policy_kind)pk;
					c.policy.ratio = ri / 4.0;
					double t = step_time(&c);
					if (gi > 0 && !(t <= prev * (1 + MONO_TOL))) {
						char what[256];
						label(what, sizeof what, &c);
						print_error("%s%s: %.4f ms, slower than %s's %.4f ms\n", what,
							    lift ? " (DRAM unlimited)" : "", t * 1e3, gens[gi - 1], prev * 1e3);
					}
					if (gi > 0)
						assert_true(t <= prev * (1 + MONO_TOL));
					prev = t;
				}
			}
		}
}

static void test_more_cores_never_slower(void **state)
{
	static const int cores[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
	const char *models[] = { "gpt2-large", "gpt2-xl" };
	for (int lift = 0; lift <= 1; lift++)
		for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++)
			for (int gi = 0; gi < NGENS; gi += 2)
				for (int pk = ZB_POLICY_OFFLOAD; pk < ZB_POLICY_COUNT; pk++) {
					if (!lift && dram_matters(pk))
						continue;
					for (int ri = 1; ri <= 4; ri++) {
						double prev = 0;
						for (size_t ci = 0; ci < sizeof cores / sizeof cores[0]; ci++) {
							zb_config c;
							base_config(&c, models[mi]);
							set_link(&c, gens[gi]);
							if (lift)
								c.hw.cpu.dram_Bps = 1e15;
							c.hw.cpu.cores = cores[ci];
							c.policy.kind = (zb_policy_kind)pk;
							c.policy.ratio = ri / 4.0;
							double t = step_time(&c);
							if (ci > 0 && !(t <= prev * (1 + MONO_TOL))) {
								char what[256];
								label(what, sizeof what, &c);
								print_error("%s%s: %.4f ms, slower than with %d cores: %.4f ms\n",
									    what, lift ? " (DRAM unlimited)" : "", t * 1e3,
									    cores[ci - 1], prev * 1e3);
							}
							if (ci > 0)
								assert_true(t <= prev * (1 + MONO_TOL));
							prev = t;
						}
					}
				}
}

/* ---- memory ----------------------------------------------------------------------------- */

static void test_70b_without_offload_does_not_fit(void **state)
{
	const char *gpus[] = { "h100", "a100-80g" };
	for (size_t i = 0; i < 2; i++) {
		zb_config c;
		base_config(&c, "llama2-70b");
		zb_error err = { 0 };
		assert_int_equal(zb_preset_gpu(gpus[i], &c.hw.gpu, &err), ZB_OK);
		c.policy.kind = ZB_POLICY_NONE;
		c.policy.micro_batch = 1;
		c.policy.seq = 2048;
		zb_prediction p;
		assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
		assert_int_equal(p.mem.fits, 0);
		assert_int_equal(p.simulated, 0);
		assert_true(p.mem.reason[0] != 0);
		assert_true(p.mem.gpu_bytes > c.hw.gpu.mem_bytes);
		zb_prediction_free(&p);
	}
}

/* ---- derived figures -------------------------------------------------------------------- */

static void test_throughput_figures(void **state)
{
	for (int pk = 0; pk < ZB_POLICY_COUNT; pk++) {
		zb_config c;
		base_config(&c, "gpt2-large");
		c.policy.kind = (zb_policy_kind)pk;
		c.policy.ratio = 0.5;
		c.policy.gas = 2;
		zb_prediction p;
		predict(&p, &c);
		double tokens = (double)c.policy.micro_batch * c.policy.seq * c.policy.gas;
		assert_close(p.graph.tokens_per_step, tokens, 0);
		assert_close(p.res.tokens_per_s, tokens / p.res.step_time_s, 1e-12);
		assert_close(p.res.tflops_per_gpu, p.graph.model_flops_per_step / p.res.step_time_s / 1e12, 1e-12);
		/* a fitting configuration is simulated; its TFLOP/s is below the GPU's rate */
		assert_true(p.mem.fits);
		assert_true(p.res.tflops_per_gpu * 1e12 < zb_config_gpu_flops(&c));
		assert_true(p.res.events >= p.graph.ntasks);
		assert_int_equal(p.res.ntasks, p.graph.ntasks);
		zb_prediction_free(&p);
	}
}

/* The whole prediction is deterministic. */
static void test_prediction_deterministic(void **state)
{
	zb_config c;
	base_config(&c, "gpt2-large");
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.6;
	zb_prediction a, b;
	predict(&a, &c);
	predict(&b, &c);
	assert_memory_equal(a.res.end, b.res.end, a.graph.ntasks * sizeof *a.res.end);
	assert_memory_equal(&a.res.step_time_s, &b.res.step_time_s, sizeof a.res.step_time_s);
	zb_prediction_free(&a);
	zb_prediction_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unlimited_host_approaches_none),
		cmocka_unit_test(test_never_below_lower_bound),
		cmocka_unit_test(test_serial_offload_is_sum_of_parts),
		cmocka_unit_test(test_dpu_le_overlap_le_offload),
		cmocka_unit_test(test_faster_pcie_never_slower),
		cmocka_unit_test(test_more_cores_never_slower),
		cmocka_unit_test(test_70b_without_offload_does_not_fit),
		cmocka_unit_test(test_throughput_figures),
		cmocka_unit_test(test_prediction_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
