/* `sailor plan`: finds the plan to run on a pool (or on each step of an availability trace) for
 * an objective under constraints, and reports it with the simulator's estimate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cluster/cluster_file.h"
#include "cluster/catalogue.h"
#include "cluster/pool.h"
#include "cluster/slurm.h"
#include "cli/plan_islands_report.h"
#include "cli/sync_args.h"
#include "search/islands_search.h"
#include "search/search.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "util/heap_pages.h"
#include "util/json.h"
#include "util/limits.h"

static int run_plan(int argc, char **argv);

enum {
	OPT_MODEL, OPT_POOL, OPT_TRACE, OPT_OBJECTIVE, OPT_MAX_COST, OPT_MIN_THROUGHPUT,
	OPT_GLOBAL_BATCH, OPT_TOP, OPT_PARETO, OPT_COST_MODEL, OPT_MAX_STAGES, OPT_UNEVEN, OPT_JSON,
	OPT_OUTPUT, OPT_PROFILES, OPT_GPUS, OPT_NETWORK, OPT_CLUSTER,
	OPT_MEMORY_OPTIONS, OPT_SLURM, OPT_PARTITION, OPT_ZONES, OPT_SYNC, OPT_MAX_INNER_STEPS,
	OPT_TOKEN_VALUE,
};

static const struct sl_cli_option plan_options[] = {
	[OPT_MODEL] = {"model", 'm', "NAME|FILE", "model to plan for (OPT-350, GPT-Neo-2.7, LLAMA-3-8, OPT-30 or a hyper-parameter file)", NULL},
	[OPT_POOL] = {"pool", 0, "FILE", "available GPUs (sailor.pool/1 JSON): plans once", NULL},
	[OPT_TRACE] = {"trace", 0, "CSV", "availability trace (SOSP'25 CSV): plans once per step", NULL},
	[OPT_OBJECTIVE] = {"objective", 0, "throughput|cost", "maximise iterations/s, or minimise $ per iteration", "throughput"},
	[OPT_MAX_COST] = {"max-cost", 0, "USD_PER_ITER", "budget: only plans costing at most this per iteration", "none"},
	[OPT_MIN_THROUGHPUT] = {"min-throughput", 0, "IT_PER_S", "only plans reaching at least this many iterations/s", "none"},
	[OPT_GLOBAL_BATCH] = {"global-batch", 'g', "G", "samples per iteration", "the model's"},
	[OPT_TOP] = {"top", 'k', "K", "show the K best plans", "1"},
	[OPT_PARETO] = {"pareto", 0, NULL, "also show the throughput-versus-$ frontier (of the plans that meet --max-cost and --min-throughput)", NULL},
	[OPT_COST_MODEL] = {"cost-model", 0, "sailor|sosp25", "simulator that ranks the plans", "sailor"},
	[OPT_MAX_STAGES] = {"max-stages", 0, "P", "deepest pipeline to consider", "all layers"},
	[OPT_UNEVEN] = {"uneven-microbatches", 0, NULL, "also consider giving faster pipelines more micro-batches (sailor run executes them)", NULL},
	[OPT_JSON] = {"json", 0, NULL, "print one JSON document {\"steps\": [...]} on stdout", NULL},
	[OPT_OUTPUT] = {"output", 'o', "PLAN.json", "write the best plan (of the last step) to this file", NULL},
	[OPT_PROFILES] = {"profiles", 0, "DIR", SL_CLI_PROFILES_HELP, "none"},
	[OPT_GPUS] = {"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	[OPT_NETWORK] = {"network", 0, "FILE", SL_CLI_NETWORK_HELP, "none"},
	[OPT_CLUSTER] = {"cluster", 0, "FILE", SL_CLI_CLUSTER_HELP, "none"},
	[OPT_MEMORY_OPTIONS] = {"memory-options", 0, "on|off", "also search, per stage, activation recomputation and ZeRO-1 (sailor cost model; off: plans without them, the search as before)", "on"},
	[OPT_SLURM] = {"slurm", 0, NULL, "the pool is what Slurm offers: the GPUs (Gres=gpu:N) of nodes neither drained nor down, by the GPU type and zone their Features name (SLURM_CONF is honoured)", NULL},
	[OPT_PARTITION] = {"partition", 0, "P", "with --slurm: only the nodes of this partition", "every node"},
	[OPT_ZONES] = {"zones", 0, "FILE", SL_CLI_ZONES_HELP, "none"},
	[OPT_SYNC] = {"sync", 0, "every-step|islands|auto", SL_CLI_SYNC_HELP, "every-step"},
	[OPT_MAX_INNER_STEPS] = {"max-inner-steps", 0, "H", SL_CLI_MAX_INNER_STEPS_HELP, "50"},
	[OPT_TOKEN_VALUE] = {"island-token-value", 0, "V|FILE", SL_CLI_TOKEN_VALUE_HELP, "the measurements in data/islands/token_value.json"},
};

const struct sl_cli_command sl_cmd_plan = {
	.name = "plan",
	.synopsis = "--model M (--pool FILE | --trace CSV | --slurm [--partition P]) [options]",
	.summary = "find the best plan for a GPU pool (or each step of a trace)",
	.description =
		"Searches which GPUs to use and how to split the job (pipeline depth, layer split,\n"
		"micro-batch size, data-parallel degree, per replica GPU type, zone and TP degree).\n"
		"Every plan is ranked by the simulator: the estimate shown is exactly what\n"
		"'sailor simulate --plan' prints for the emitted plan under the same cost model.\n"
		"Exit status: 0 a plan was found, 1 none meets the constraints or bad input, 2 usage.",
	.options = plan_options,
	.option_count = sizeof(plan_options) / sizeof(plan_options[0]),
	.run = run_plan,
};

/* Where the report goes: a memory buffer that reaches stdout only when the whole command
 * succeeds, so a command that ends in an error prints nothing there (README "sailor plan"). */
static FILE *report;

/* The token values island plans are ranked with (run_plan loads them once); NULL under
 * --sync every-step, whose report stays as it was. */
static const struct sl_token_value *token_value;

struct plan_args {
	const char *model, *pool, *trace, *output, *profiles, *network, *cluster;
	struct sl_search_request req;
	int json;
	int slurm;               /* the pool from Slurm */
	const char *partition;
	struct sl_cli_zones zones;
	struct sl_cli_sync sync;  /* --sync and the islands' flags */
};

static void print_replica_groups(const struct sl_sim_env *env, const struct sl_plan *plan, int k)
{
	const struct sl_catalogue *cat = &env->catalogue;
	int j = 0;
	while (j < plan->num_pipelines) {
		const struct sl_replica *r = sl_plan_replica(plan, k, j);
		int n = 1;
		while (j + n < plan->num_pipelines &&
		       !memcmp(sl_plan_replica(plan, k, j + n), r, sizeof(*r)))
			n++;
		fprintf(report, "%s%d x %s tp%d %s", j ? ", " : "", n, cat->gpus[r->gpu].name,
			r->tp, cat->zones[r->zone].name);
		j += n;
	}
}

static void print_candidate(const struct sl_sim_env *env, const struct sl_pool *pool,
			    const struct sl_search_candidate *c)
{
	const struct sl_plan *plan = &c->plan;
	const struct sl_sim_result *res = &c->result;
	char counts[32];
	sl_sim_microbatches_text(plan, res, counts, sizeof(counts));
	fprintf(report,
		"  micro-batch %d, %s micro-batches per pipeline, %d pipeline%s, %d stage%s\n",
	       plan->micro_batch, counts, plan->num_pipelines,
	       plan->num_pipelines == 1 ? "" : "s", plan->num_stages, plan->num_stages == 1 ? "" : "s");
	fprintf(report, "  %-6s %-9s %s\n", "stage", "layers",
		"replicas (GPU type, TP degree, zone)");
	for (int k = 0; k < plan->num_stages; k++) {
		fprintf(report, "  %-6d %3d-%-5d ", k, plan->stages[k].first_layer, plan->stages[k].last_layer);
		print_replica_groups(env, plan, k);
		const struct sl_plan_stage *s = &plan->stages[k];
		if (s->recompute != SL_RECOMPUTE_NONE || s->zero)
			fprintf(report, "  [%s%s%s%s]",
				s->recompute != SL_RECOMPUTE_NONE ? "recompute " : "",
				s->recompute != SL_RECOMPUTE_NONE ? sl_recompute_name(s->recompute) : "",
				s->recompute != SL_RECOMPUTE_NONE && s->zero ? ", " : "",
				s->zero ? "ZeRO-1" : "");
		fprintf(report, "\n");
	}
	fprintf(report, "  predicted: %.4f it/s, %.1f samples/s, %.0f tokens/s (iteration %.3f s)\n",
	       res->throughput_it_s, res->samples_per_s, res->tokens_per_s, res->iteration_time_s);
	if (token_value) /* --sync islands or auto: say which sync each plan uses */
		sl_cli_plan_sync_print(report, env, plan, res, token_value);
	if (res->time_estimated)
		fprintf(report, "  (layer times estimated: no profile of %s on some GPU type used, see "
		       "'sailor simulate')\n", env->model.name);
	fprintf(report, "  cost: %.4f $/iteration (GPU rent %.4f, egress %.4f), %.2f $/hour\n",
	       res->cost_usd_per_iter, res->gpu_cost_usd_per_iter, res->egress_cost_usd_per_iter,
	       res->cost_usd_per_iter * res->throughput_it_s * 3600.0);
	const struct sl_catalogue *cat = &env->catalogue;
	for (int g = 0; g < cat->gpu_count; g++) {
		long long used = 0;
		double peak = 0;
		for (int k = 0; k < plan->num_stages; k++)
			for (int j = 0; j < plan->num_pipelines; j++) {
				const struct sl_replica *r = sl_plan_replica(plan, k, j);
				if (r->gpu != g)
					continue;
				used += r->tp;
				struct sl_sim_replica_query query =
					sl_sim_replica_query_of(plan, k, j, res->microbatches);
				double mem = sl_sim_replica_memory(env, res->cost_model, &query, NULL);
				if (mem > peak)
					peak = mem;
			}
		long long avail = sl_pool_gpu_total(pool, g);
		if (!used && !avail)
			continue;
		fprintf(report, "  %-9s %4lld of %4lld GPUs used", cat->gpus[g].name, used, avail);
		if (used)
			fprintf(report, ", peak memory %.1f of %.1f GiB", peak / (1 << 30),
			       cat->gpus[g].memory_bytes / (1 << 30));
		fprintf(report, "\n");
	}
}

static json_t *candidate_json(const struct sl_sim_env *env, const struct sl_search_candidate *c)
{
	json_t *obj = json_object();
	json_object_set_new(obj, "plan", sl_plan_to_json(&c->plan, &env->catalogue));
	json_object_set_new(obj, "estimate", sl_cli_plan_estimate_json(env, &c->plan, &c->result));
	json_object_set_new(obj, "sync", sl_cli_plan_sync_json(env, &c->plan, &c->result,
							       token_value));
	return obj;
}

static void describe_failure(const struct plan_args *a, const struct sl_search_outcome *out)
{
	const struct sl_search_request *req = &a->req;
	if (!out->cheapest && !out->fastest) {
		fprintf(stderr, "sailor plan: no plan fits in memory on this pool%s: add GPUs with more "
				"memory, or more GPUs per zone for a higher TP degree%s\n",
			req->memory_options && req->cost_model == SL_COST_SAILOR
				? ", even with activation recomputation and ZeRO-1"
				: "",
			!req->memory_options && req->cost_model == SL_COST_SAILOR
				? " (or drop --memory-options off: recomputation and ZeRO-1 may fit it)"
				: "");
		return;
	}
	if (req->max_cost_usd_per_iter > 0 && out->cheapest) {
		const struct sl_sim_result *c = &out->cheapest->result;
		fprintf(stderr, "sailor plan: no plan within %.4g $/iter%s; the cheapest is %.4g $/iter "
				"at %.4g it/s (raise --max-cost, or add cheaper GPUs)\n",
			req->max_cost_usd_per_iter,
			req->min_throughput_it_s > 0 ? " at the throughput asked" : "",
			c->cost_usd_per_iter, c->throughput_it_s);
	}
	if (req->min_throughput_it_s > 0 && out->fastest) {
		const struct sl_sim_result *f = &out->fastest->result;
		fprintf(stderr, "sailor plan: no plan reaches %.4g it/s%s; the fastest is %.4g it/s at "
				"%.4g $/iter (lower --min-throughput, or add GPUs)\n",
			req->min_throughput_it_s,
			req->max_cost_usd_per_iter > 0 ? " within the budget" : "", f->throughput_it_s,
			f->cost_usd_per_iter);
	}
}

/* The --json entry of a trace step where every GPU is gone: the pool, and no plan. */
static json_t *no_gpus_step_json(const struct sl_sim_env *env, const struct sl_pool *pool,
				 int step)
{
	json_t *s = json_object();
	json_object_set_new(s, "step", json_integer(step));
	json_object_set_new(s, "duration_s", json_real(pool->duration_s));
	json_object_set_new(s, "pool", sl_pool_to_json(pool, &env->catalogue));
	json_object_set_new(s, "plan", json_null());
	json_object_set_new(s, "estimate", json_null());
	return s;
}

/* every plan shown or written names its model, so that `simulate` and `run` take it as it is; a
 * hyper-parameter file too long to name falls back to the model's own name */
static void name_model(const struct plan_args *a, const struct sl_sim_env *env,
		       struct sl_search_outcome *out)
{
	const char *model_ref = strlen(a->model) < SL_MODEL_NAME_MAX ? a->model : env->model.name;
	for (int i = 0; i < out->count; i++)
		sl_plan_set_model(&out->best[i].plan, model_ref);
	for (int i = 0; i < out->pareto_count; i++)
		sl_plan_set_model(&out->pareto[i].plan, model_ref);
	if (out->cheapest)
		sl_plan_set_model(&out->cheapest->plan, model_ref);
	if (out->fastest)
		sl_plan_set_model(&out->fastest->plan, model_ref);
}

/* The search's own figures in a step's --json entry: time, plans simulated per phase, shapes. */
static void set_search_figures(json_t *s, const struct sl_search_outcome *out)
{
	json_object_set_new(s, "search_time_s", json_real(out->search_time_s));
	json_object_set_new(s, "plans_simulated", json_integer(out->plans_simulated));
	json_t *phases = json_object();
	for (int ph = 0; ph < SL_SEARCH_PHASES; ph++) {
		json_t *p = json_object();
		json_object_set_new(p, "simulated", json_integer(out->stats.simulated[ph]));
		json_object_set_new(p, "time_s", json_real(out->stats.time_s[ph]));
		json_object_set_new(phases, sl_search_phase_name(ph), p);
	}
	json_object_set_new(s, "search_phases", phases);
	json_object_set_new(s, "shapes", json_integer(out->stats.shapes));
	json_object_set_new(s, "shapes_skipped", json_integer(out->stats.skipped_shapes));
	json_object_set_new(s, "shapes_pruned_by_gpus", json_integer(out->stats.gpu_pruned_shapes));
	json_object_set_new(s, "island_searches", json_integer(out->stats.island_searches));
	json_object_set_new(s, "island_searches_reused",
			    json_integer(out->stats.island_searches_reused));
}

/* A searched step's --json entry: its pool, the search's figures, the best plan with its
 * estimate (or, without one, the cheapest and fastest plans), then --top and --pareto's. */
static json_t *step_json(const struct plan_args *a, const struct sl_sim_env *env,
			 const struct sl_pool *pool, int step, const struct sl_search_outcome *out)
{
	json_t *s = json_object();
	json_object_set_new(s, "step", json_integer(step));
	json_object_set_new(s, "duration_s", json_real(pool->duration_s));
	json_object_set_new(s, "pool", sl_pool_to_json(pool, &env->catalogue));
	set_search_figures(s, out);
	if (out->count) {
		json_object_set_new(s, "plan",
				    sl_plan_to_json(&out->best[0].plan, &env->catalogue));
		json_object_set_new(s, "estimate", sl_cli_plan_estimate_json(env, &out->best[0].plan,
									      &out->best[0].result));
		json_object_set_new(s, "sync", sl_cli_plan_sync_json(env, &out->best[0].plan,
								     &out->best[0].result,
								     token_value));
	} else {
		json_object_set_new(s, "plan", json_null());
		json_object_set_new(s, "estimate", json_null());
		if (out->cheapest)
			json_object_set_new(s, "cheapest", candidate_json(env, out->cheapest));
		if (out->fastest)
			json_object_set_new(s, "fastest", candidate_json(env, out->fastest));
	}
	if (a->req.top_k > 1) {
		json_t *top = json_array();
		for (int i = 0; i < out->count; i++)
			json_array_append_new(top, candidate_json(env, &out->best[i]));
		json_object_set_new(s, "top", top);
	}
	if (a->req.pareto) {
		json_t *front = json_array();
		for (int i = 0; i < out->pareto_count; i++)
			json_array_append_new(front, candidate_json(env, &out->pareto[i]));
		json_object_set_new(s, "pareto", front);
	}
	return s;
}

/* A step's readable report, for a step with a plan: its plans, the frontier, the search. */
static void print_step(const struct plan_args *a, const struct sl_sim_env *env,
		       const struct sl_pool *pool, int step, int steps,
		       const struct sl_search_outcome *out)
{
	if (steps > 1)
		fprintf(report, "== step %d of %d (lasts %.0f s): %lld GPUs available\n", step,
			steps, pool->duration_s, sl_pool_total(pool));
	for (int i = 0; i < out->count; i++) {
		fprintf(report, out->count > 1 ? "plan %d of %d:\n" : "plan:\n", i + 1, out->count);
		print_candidate(env, pool, &out->best[i]);
	}
	if (a->req.pareto && out->pareto_count) {
		fprintf(report, "throughput-versus-$ frontier (%d plans):\n", out->pareto_count);
		fprintf(report, "  %10s %12s %6s  %s\n", "it/s", "$/iter", "GPUs", "shape");
		for (int i = 0; i < out->pareto_count; i++) {
			const struct sl_search_candidate *c = &out->pareto[i];
			fprintf(report, "  %10.4f %12.4f %6lld  P=%d D=%d mbs=%d", c->result.throughput_it_s,
				c->result.cost_usd_per_iter, c->result.num_gpus, c->plan.num_stages,
				c->plan.num_pipelines, c->plan.micro_batch);
			if (c->plan.islands) /* its it/s and $ are effective (sl_search_effective_result) */
				fprintf(report, ", %d islands", c->plan.islands->count);
			fprintf(report, "\n");
		}
	}
	fprintf(report, "search: %.3f s, %lld plans simulated, cost model %s%s%s\n",
		out->search_time_s, out->plans_simulated, sl_cost_model_name(a->req.cost_model),
		a->req.sync != SL_SYNC_EVERY_STEP ? ", sync " : "",
		a->req.sync != SL_SYNC_EVERY_STEP ? sl_sync_mode_name(a->req.sync) : "");
}

/* One step's search, made before any step is reported (search_steps). */
struct step_search {
	struct sl_search_outcome out;
	struct sl_err err;
	int rc;
};

/* A trace step where every GPU is gone has nothing to search. */
static int step_searched(const struct sl_pool_trace *trace, int s)
{
	return trace->step_count == 1 || sl_pool_total(&trace->steps[s]) > 0;
}

static void search_step(const struct plan_args *a, const struct sl_sim_env *env,
			const struct sl_pool_trace *trace, int s, struct step_search *found)
{
	if (step_searched(trace, s))
		found->rc = sl_search_plan(env, &trace->steps[s], &a->req, &found->out, &found->err);
}

/* Every step's search, into found[]. A trace's steps are searched side by side, one per thread
 * (the searches inside a step then run on its thread: search.c), the largest pools first so
 * that no thread is left with a large one at the end; one step searches on every thread.
 * Steps do not share a search, so each step's plans are what it finds alone, as on one thread. */
static void search_steps(const struct plan_args *a, const struct sl_sim_env *env,
			 const struct sl_pool_trace *trace, struct step_search *found)
{
	int n = trace->step_count;
	int *order = malloc((size_t)n * sizeof(int));
	int threads = n > 1 && order ? sl_search_threads() : 1;
	if (threads > n)
		threads = n;
	for (int i = 0; i < n; i++) {
		if (order)
			order[i] = i;
		sl_search_outcome_init(&found[i].out);
		found[i].err = (struct sl_err){0};
		found[i].rc = 0;
	}
	for (int i = 1; order && i < n; i++) /* by GPUs, most first, ties in step order */
		for (int k = i; k > 0 && sl_pool_total(&trace->steps[order[k]]) >
						 sl_pool_total(&trace->steps[order[k - 1]]); k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	/* one step: no parallel construct at all, not even an inactive one (islands_search.c's
	 * run_tasks says why) */
	if (threads > 1) {
		/* tasks, not a loop's iterations: a thread that is done takes any task left, a step
		 * or a part of one (islands_search.c runs --sync auto's two searches as tasks) */
#pragma omp parallel num_threads(threads)
#pragma omp single
		for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
			search_step(a, env, trace, order[i], &found[order[i]]);
		}
	} else {
		for (int i = 0; i < n; i++)
			search_step(a, env, trace, i, &found[i]);
	}
	free(order);
}

static int plan_step(const struct plan_args *a, const struct sl_sim_env *env,
		     const struct sl_pool *pool, int step, int steps, struct step_search *found,
		     json_t *json_steps, struct sl_plan *last_best, int *found_all)
{
	struct sl_search_outcome out = found->out;
	struct sl_err err = found->err;
	sl_search_outcome_init(&found->out); /* out owns it now */
	if (steps > 1 && sl_pool_total(pool) == 0) {
		/* a trace step where every GPU is gone is a state of the pool, not bad input: say it
		 * and go on with the next step */
		fprintf(stderr, "sailor plan: step %d: no GPUs available, nothing to run\n", step);
		*found_all = 0;
		if (a->json)
			json_array_append_new(json_steps, no_gpus_step_json(env, pool, step));
		return 0;
	}
	int rc = found->rc;
	if (rc) {
		sl_cli_error(&sl_cmd_plan, "%s", err.msg);
		sl_search_outcome_free(&out);
		return rc;
	}
	name_model(a, env, &out);
	if (out.count == 0) {
		*found_all = 0;
		if (steps > 1)
			fprintf(stderr, "sailor plan: step %d: ", step);
		describe_failure(a, &out);
	}
	if (a->json)
		json_array_append_new(json_steps, step_json(a, env, pool, step, &out));
	else if (out.count)
		print_step(a, env, pool, step, steps, &out);
	if (out.count)
		rc = sl_plan_copy(last_best, &out.best[0].plan, &err);
	sl_search_outcome_free(&out);
	return rc;
}

/* What the flags say together. */
static int check_args(struct plan_args *a)
{
	if (!a->model)
		return sl_cli_usage_error(&sl_cmd_plan, "--model is required");
	if ((a->pool != NULL) + (a->trace != NULL) + a->slurm != 1)
		return sl_cli_usage_error(&sl_cmd_plan, "give exactly one of --pool FILE, --trace CSV "
					  "or --slurm");
	if (a->partition && !a->slurm)
		return sl_cli_usage_error(&sl_cmd_plan, "--partition applies to --slurm only");
	return sl_cli_sync_finish(&sl_cmd_plan, &a->req, &a->sync);
}

static int parse_args(int argc, char **argv, struct plan_args *a)
{
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_plan, argc, argv);
	a->req.top_k = 1;
	a->req.memory_options = 1;
	for (int idx, rc; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		long long v = 0;
		struct sl_err err = {0};
		switch (idx) {
		case SL_CLI_ERROR: return 2;
		case SL_CLI_HELP: return -1;
		case OPT_MODEL: a->model = parser.arg; break;
		case OPT_POOL: a->pool = parser.arg; break;
		case OPT_TRACE: a->trace = parser.arg; break;
		case OPT_OUTPUT: a->output = parser.arg; break;
		case OPT_PROFILES: a->profiles = parser.arg; break;
		case OPT_NETWORK: a->network = parser.arg; break;
		case OPT_CLUSTER: a->cluster = parser.arg; break;
		case OPT_ZONES: if (sl_cli_zones_add(&sl_cmd_plan, &a->zones, parser.arg)) return 2; break;
		case OPT_GPUS:
			if (sl_catalogue_set_overlay(parser.arg, &err)) {
				sl_cli_error(&sl_cmd_plan, "%s", err.msg);
				return 1;
			}
			break;
		case OPT_JSON: a->json = 1; break;
		case OPT_SLURM: a->slurm = 1; break;
		case OPT_PARTITION: a->partition = parser.arg; break;
		case OPT_PARETO: a->req.pareto = 1; break;
		case OPT_UNEVEN: a->req.uneven_microbatches = 1; break;
		case OPT_MEMORY_OPTIONS:
			if (!strcmp(parser.arg, "on"))
				a->req.memory_options = 1;
			else if (!strcmp(parser.arg, "off"))
				a->req.memory_options = 0;
			else
				return sl_cli_usage_error(&sl_cmd_plan, "--memory-options: '%s' is neither "
								      "'on' nor 'off'", parser.arg);
			break;
		case OPT_OBJECTIVE:
			if (!strcmp(parser.arg, "throughput"))
				a->req.objective = SL_OBJECTIVE_THROUGHPUT;
			else if (!strcmp(parser.arg, "cost"))
				a->req.objective = SL_OBJECTIVE_COST;
			else
				return sl_cli_usage_error(&sl_cmd_plan, "--objective: '%s' is neither "
								      "'throughput' nor 'cost'", parser.arg);
			break;
		case OPT_COST_MODEL:
			if (sl_cost_model_parse(parser.arg, &a->req.cost_model, &err))
				return sl_cli_usage_error(&sl_cmd_plan, "--cost-model: %s", err.msg);
			break;
		case OPT_MAX_COST:
			if (sl_cli_parse_double(&sl_cmd_plan, "max-cost", parser.arg, 1e-12,
						SL_MAX_COST_USD, &a->req.max_cost_usd_per_iter))
				return 2;
			break;
		case OPT_MIN_THROUGHPUT:
			if (sl_cli_parse_double(&sl_cmd_plan, "min-throughput", parser.arg, 1e-12,
						SL_MAX_THROUGHPUT_IT_S, &a->req.min_throughput_it_s))
				return 2;
			break;
		case OPT_GLOBAL_BATCH:
			if (sl_cli_parse_long(&sl_cmd_plan, "global-batch", parser.arg, 1,
					      SL_MAX_GLOBAL_BATCH, &v))
				return 2;
			a->req.global_batch = v;
			break;
		case OPT_TOP:
			if (sl_cli_parse_long(&sl_cmd_plan, "top", parser.arg, 1, SL_MAX_TOP_PLANS, &v))
				return 2;
			a->req.top_k = (int)v;
			break;
		case OPT_SYNC:
		case OPT_MAX_INNER_STEPS:
		case OPT_TOKEN_VALUE:
			if ((rc = sl_cli_sync_take(&sl_cmd_plan, plan_options[idx].name, parser.arg,
						   &a->req, &a->sync)))
				return rc;
			break;
		case OPT_MAX_STAGES:
			if (sl_cli_parse_long(&sl_cmd_plan, "max-stages", parser.arg, 1,
					      SL_PLAN_MAX_STAGES, &v))
				return 2;
			a->req.max_stages = (int)v;
			break;
		}
	}
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_plan, "unexpected argument '%s'",
					  argv[parser.next_index]);
	return check_args(a);
}

/* The steps to plan for: the pool file or Slurm's pool as one step, or the trace's steps. */
static int load_steps(const struct plan_args *a, const struct sl_sim_env *env,
		      struct sl_pool_trace *trace, struct sl_err *err)
{
	int rc;
	if (a->pool || a->slurm) {
		trace->steps = calloc(1, sizeof(*trace->steps));
		trace->step_count = 1;
		char nodes[1024] = "";
		rc = !trace->steps ? sl_err_set(err, SL_ENOMEM, "out of memory")
		     : a->pool ? sl_pool_load(a->pool, &env->catalogue, &trace->steps[0], err)
		     : sl_slurm_load_pool(a->partition, &env->catalogue, &trace->steps[0], NULL,
					  nodes, sizeof(nodes), err);
		if (!rc && a->slurm)
			fprintf(stderr, "sailor plan: slurm %s\n", nodes);
	} else {
		rc = sl_trace_load(a->trace, &env->catalogue, trace, err);
	}
	if (!rc && trace->step_count == 0)
		rc = sl_err_set(err, SL_EINPUT, "trace '%s': no step has any GPU", a->trace);
	return rc;
}

/* --json's document (schema sailor.planning/1) into the report; it takes steps. searches_s: the
 * wall time of every step's search together (they overlap: search_steps). */
static void print_planning_json(const struct plan_args *a, const struct sl_sim_env *env,
				json_t *steps, double searches_s)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("sailor.planning/1"));
	json_object_set_new(doc, "model", json_string(env->model.name));
	json_object_set_new(doc, "cost_model", json_string(sl_cost_model_name(a->req.cost_model)));
	json_object_set_new(doc, "objective", json_string(sl_objective_name(a->req.objective)));
	json_object_set_new(doc, "searches_s", json_real(searches_s));
	json_object_set_new(doc, "steps", steps);
	sl_json_print(report, doc);
	json_decref(doc);
}

static int run_plan(int argc, char **argv)
{
	struct plan_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	sl_heap_prefer_huge_pages(SL_HEAP_PLANNER_RESERVE_BYTES); /* before any thread */
	struct sl_err err = {0};
	struct sl_sim_env *env = NULL;
	/* static: the environment borrows it until the process ends */
	static struct sl_cluster cluster;
	int have_cluster = 0;
	if ((rc = sl_cli_load_environment_files(a.network, a.cluster, &a.zones, a.pool, &cluster,
						&have_cluster, &err)) ||
	    (rc = sl_sim_env_load_overlaid(a.model, NULL, a.profiles, &env, &err))) {
		sl_cli_error(&sl_cmd_plan, "%s", err.msg);
		return sl_err_exit_status(rc);
	}
	if (have_cluster)
		sl_sim_env_set_cluster(env, &cluster);
	token_value = a.req.token_value;
	struct sl_pool_trace trace = {0};
	if ((rc = load_steps(&a, env, &trace, &err))) {
		sl_cli_error(&sl_cmd_plan, "%s", err.msg);
		sl_pool_trace_free(&trace);
		sl_sim_env_free(env);
		return sl_err_exit_status(rc);
	}
	char *buf = NULL;
	size_t buf_bytes = 0;
	report = open_memstream(&buf, &buf_bytes);
	if (!report) {
		fprintf(stderr, "sailor plan: out of memory\n");
		sl_pool_trace_free(&trace);
		sl_sim_env_free(env);
		return 1;
	}
	json_t *steps = a.json ? json_array() : NULL;
	struct sl_plan best;
	sl_plan_init(&best);
	int found_all = 1, unplanned = 0;
	struct step_search *searches = calloc((size_t)trace.step_count, sizeof(*searches));
	double searches_start_s = sl_now_s();
	if (!searches) {
		fprintf(stderr, "sailor plan: out of memory\n");
		rc = SL_ENOMEM;
	} else {
		search_steps(&a, env, &trace, searches);
	}
	double searches_s = sl_now_s() - searches_start_s;
	/* reported in step order, up to the first that failed, as if searched one after another */
	for (int s = 0; s < trace.step_count && !rc; s++) {
		int found = 1;
		rc = plan_step(&a, env, &trace.steps[s], s + 1, trace.step_count, &searches[s], steps,
			       &best, &found);
		unplanned += !found;
		found_all &= found;
	}
	for (int s = 0; searches && s < trace.step_count; s++)
		sl_search_outcome_free(&searches[s].out);
	free(searches);
	/* A step without a plan fails the command: exit 1, nothing on stdout, no -o file (the steps
	 * that have no plan are named on stderr). Otherwise -o is written first, so that a failed
	 * write also leaves stdout empty. */
	if (!rc && found_all && a.json) {
		print_planning_json(&a, env, steps, searches_s);
		steps = NULL;
	}
	json_decref(steps);
	if (!rc && found_all && a.output) {
		rc = sl_plan_save(&best, &env->catalogue, a.output, &err);
		if (rc)
			sl_cli_error(&sl_cmd_plan, "%s", err.msg);
	}
	int closed = fclose(report);
	report = NULL;
	if (!rc && !found_all && trace.step_count > 1)
		fprintf(stderr, "sailor plan: %d of %d steps have no plan: nothing printed%s\n",
			unplanned, trace.step_count, a.output ? ", no plan written" : "");
	if (!rc && found_all) {
		if (closed != 0 || fwrite(buf, 1, buf_bytes, stdout) != buf_bytes ||
		    fflush(stdout) != 0) {
			fprintf(stderr, "sailor plan: cannot write the report on stdout\n");
			rc = SL_EIO;
		}
	}
	free(buf);
	sl_plan_free(&best);
	sl_pool_trace_free(&trace);
	sl_sim_env_free(env);
	if (rc)
		return sl_err_exit_status(rc);
	return found_all ? 0 : 1;
}
