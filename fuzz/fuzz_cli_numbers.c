/* Fuzz target: the command-line number families, parsed by the same sl_cli_parse_long/double
 * calls and ranges (util/limits.h) the commands use, then fed to the arithmetic they reach:
 *   'g' --global-batch of `simulate`: the shipped example plan simulated with it (both models)
 *   'p' --global-batch of `plan`: a search on the shipped example pool
 *   't' the trainer's step counts (--steps, --warmup-steps, --lr-decay-steps, --log-every,
 *       --ckpt-every): the learning-rate schedule evaluated at them
 *   'd' the trainer's doubles (--lr, --min-lr, --weight-decay, --beta1/2, --eps, --grad-clip)
 *   'c' `plan`'s constraints (--max-cost, --min-throughput) and counts (--top, --max-stages)
 *   'i' the trainer's small counts (--micro-batch, --seq-len, --threads, --ckpt-keep)
 * The first byte picks the family, the rest (up to a NUL) is the option's text. */
#include <math.h>

#include "cli/args.h"
#include "cluster/pool.h"
#include "fuzz_util.h"
#include "plan/plan.h"
#include "search/search.h"
#include "sim/sim.h"
#include "train/lr_schedule.h"
#include "util/limits.h"

extern const struct sl_cli_command sl_cmd_simulate, sl_cmd_plan, sl_cmd_train;

static struct sl_sim_env *env;
static struct sl_plan example;
static struct sl_pool pool;

static void load(void)
{
	struct sl_err err = {0};
	char path[512];
	fuzz_setup();
	sl_plan_init(&example);
	snprintf(path, sizeof(path), "%s/examples/plan-opt350-a100-v100.json", getenv("SAILOR_DATA"));
	int rc = sl_sim_env_load("OPT-350", NULL, &env, &err);
	if (!rc)
		rc = sl_plan_load(path, &env->catalogue, &example, &err);
	snprintf(path, sizeof(path), "%s/examples/pool-a100-v100.json", getenv("SAILOR_DATA"));
	if (!rc)
		rc = sl_pool_load(path, &env->catalogue, &pool, &err);
	if (rc) {
		fprintf(stderr, "fuzz_cli_numbers: %s\n", err.msg);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_sim_result res;
	if (!env)
		load();
	if (size < 1 || size > 64)
		return 0;
	char text[64];
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	long long v;
	double x;
	struct sl_err err = {0};
	switch (data[0]) {
	case 'g':
		if (sl_cli_parse_long(&sl_cmd_simulate, "global-batch", text, 1, SL_MAX_GLOBAL_BATCH,
				      &v))
			return 0;
		example.global_batch = v;
		for (int cm = 0; cm < 2; cm++)
			if (!sl_sim_check_plan(env, &example, 0, &err) &&
			    !sl_simulate(env, &example, (enum sl_cost_model)cm, &res, &err)) {
				fuzz_assert(res.global_batch == v);
				fuzz_assert(isfinite(res.iteration_time_s) && res.iteration_time_s > 0);
				fuzz_assert(res.microbatches >= 1);
			}
		break;
	case 'p': {
		if (sl_cli_parse_long(&sl_cmd_plan, "global-batch", text, 1, SL_MAX_GLOBAL_BATCH, &v))
			return 0;
		struct sl_search_request req = {0};
		req.top_k = 1;
		req.global_batch = v;
		struct sl_search_outcome out;
		if (!sl_search_run(env, &pool, &req, &out, &err) && out.count)
			fuzz_assert(out.best[0].result.global_batch == v);
		sl_search_outcome_free(&out);
		break;
	}
	case 't': {
		long long steps;
		if (sl_cli_parse_long(&sl_cmd_train, "steps", text, 0, SL_MAX_STEPS, &steps))
			return 0;
		/* the value as every step-count option: warm-up, decay and the step itself */
		struct sl_lr_schedule s = {6e-4, 6e-5, steps / 2, steps};
		fuzz_assert(isfinite(sl_lr_at(&s, steps)) && sl_lr_at(&s, steps) >= 0);
		fuzz_assert(isfinite(sl_lr_at(&s, steps / 3)));
		break;
	}
	case 'd': {
		static const struct {
			const char *name;
			double min, max;
		} opts[] = {{"lr", 0, SL_MAX_LR},
			    {"weight-decay", 0, SL_MAX_WEIGHT_DECAY},
			    {"beta1", 0, SL_MAX_ADAM_BETA},
			    {"eps", SL_MIN_ADAM_EPS, SL_MAX_ADAM_EPS},
			    {"grad-clip", 0, SL_MAX_GRAD_CLIP}};
		for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
			if (!sl_cli_parse_double(&sl_cmd_train, opts[i].name, text, opts[i].min,
						 opts[i].max, &x)) {
				fuzz_assert(isfinite(x) && x >= opts[i].min && x <= opts[i].max);
				struct sl_lr_schedule s = {x, x / 10, 10, 100};
				fuzz_assert(isfinite(sl_lr_at(&s, 50)));
			}
		break;
	}
	case 'c':
		if (!sl_cli_parse_double(&sl_cmd_plan, "max-cost", text, 1e-12, SL_MAX_COST_USD, &x))
			fuzz_assert(isfinite(x) && x > 0);
		if (!sl_cli_parse_double(&sl_cmd_plan, "min-throughput", text, 1e-12,
					 SL_MAX_THROUGHPUT_IT_S, &x))
			fuzz_assert(isfinite(x) && x > 0);
		if (!sl_cli_parse_long(&sl_cmd_plan, "top", text, 1, SL_MAX_TOP_PLANS, &v))
			fuzz_assert(v >= 1 && v <= SL_MAX_TOP_PLANS);
		if (!sl_cli_parse_long(&sl_cmd_plan, "max-stages", text, 1, SL_PLAN_MAX_STAGES, &v))
			fuzz_assert(v >= 1 && v <= SL_PLAN_MAX_STAGES);
		break;
	case 'i':
		if (!sl_cli_parse_long(&sl_cmd_train, "threads", text, 1, SL_MAX_THREADS, &v))
			fuzz_assert(v >= 1 && v <= SL_MAX_THREADS);
		if (!sl_cli_parse_long(&sl_cmd_train, "micro-batch", text, 1, SL_MAX_MICRO_BATCH, &v))
			fuzz_assert(v >= 1 && v <= SL_MAX_MICRO_BATCH);
		if (!sl_cli_parse_long(&sl_cmd_train, "seq-len", text, 1, SL_MAX_SEQ_LEN, &v))
			fuzz_assert(v >= 1 && v <= SL_MAX_SEQ_LEN);
		break;
	default:
		break;
	}
	return 0;
}
