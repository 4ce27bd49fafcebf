/* `sailor simulate`: iteration time, peak memory and $ of one plan, as a readable breakdown or
 * (--json) one JSON object on stdout. Errors go to stderr with exit 1 (bad input) or 2 (usage);
 * nothing is printed on stdout unless the simulation succeeded. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "sim/sim.h"
#include "util/atomic_file.h"
#include "util/heap_pages.h"
#include "util/json.h"
#include "util/limits.h"

static int run_simulate(int argc, char **argv);

static const struct sl_cli_option options[] = {
	{"model", 'm', "NAME|FILE", "model: OPT-350, GPT-Neo-2.7, LLAMA-3-8, OPT-30 or a "
				    "hyper-parameter JSON file", "the plan's \"model\""},
	{"plan", 'p', "FILE", "plan to simulate (sailor.plan/1 or a SOSP'25 plan file)", NULL},
	{"global-batch", 'g', "N", "samples per iteration", "the plan's, else the model's"},
	{"cost-model", 'c', "NAME", "sailor (ours) or sosp25 (the SOSP'25 simulator exactly)",
	 "sailor"},
	{"profiles", 0, "DIR", SL_CLI_PROFILES_HELP, "none"},
	{"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	{"network", 0, "FILE", SL_CLI_NETWORK_HELP, "none"},
	{"cluster", 0, "FILE", SL_CLI_CLUSTER_HELP, "none"},
	{"zones", 0, "FILE", SL_CLI_ZONES_HELP, "none"},
	{"json", 0, NULL, "print one JSON object (schema sailor.simulation/1) on stdout", NULL},
	{"timeline", 0, "FILE", "write the runtime model's step, rank by rank and instruction by "
				"instruction, to FILE (schema sailor.timeline/1, as `sailor run "
				"--timeline` records a run); plans modelled as our runtime only",
	 "none"},
};

const struct sl_cli_command sl_cmd_simulate = {
	.name = "simulate",
	.synopsis = "--model M --plan FILE [--global-batch G] [--cost-model sailor|sosp25]\n"
		    "           [--profiles DIR] [--gpus FILE] [--network FILE] [--cluster FILE]\n"
		    "           [--zones FILE] [--json] [--timeline FILE]",
	.summary = "iteration time, peak memory and $ per iteration of a plan",
	.description =
		"Simulates one training iteration of the plan: per stage compute, point-to-point,\n"
		"pipeline bubble, data-parallel sync, optimizer and memory per GPU against its\n"
		"capacity; then iteration time, throughput and cost (GPU rent + egress).\n"
		"When every device type of the plan has a profile of our runtime (written by\n"
		"`sailor profile`), the plan is modelled as `sailor run` executes it: its instruction\n"
		"lists, MPI transfers and all-reduces, and memory as the ranks' resident memory.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_simulate,
};

/* --zones of the command line (sl_cli_load_environment_files adds them) */
static struct sl_cli_zones zones;

static int fail(struct sl_err *err)
{
	sl_cli_error(&sl_cmd_simulate, "%s", err->msg);
	return sl_err_exit_status(err->code);
}

/* The command line, as given. */
struct simulate_args {
	const char *model, *plan_path, *profiles, *network, *cluster_path, *timeline_path;
	long long global_batch;
	enum sl_cost_model cm;
	int json;
};

/* 0 to go on, -1 after --help (exit 0), else the exit status of a bad command line. */
static int parse_args(int argc, char **argv, struct simulate_args *a)
{
	struct sl_err err = {0};
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_simulate, argc, argv);
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		if (idx == SL_CLI_ERROR)
			return 2;
		if (idx == SL_CLI_HELP)
			return -1;
		const char *name = options[idx].name;
		if (!strcmp(name, "model")) {
			a->model = parser.arg;
		} else if (!strcmp(name, "plan")) {
			a->plan_path = parser.arg;
		} else if (!strcmp(name, "global-batch")) {
			if (sl_cli_parse_long(&sl_cmd_simulate, name, parser.arg, 1,
					      SL_MAX_GLOBAL_BATCH, &a->global_batch))
				return 2;
		} else if (!strcmp(name, "cost-model")) {
			if (sl_cost_model_parse(parser.arg, &a->cm, &err))
				return sl_cli_usage_error(&sl_cmd_simulate, "--cost-model: %s", err.msg);
		} else if (!strcmp(name, "profiles")) {
			a->profiles = parser.arg;
		} else if (!strcmp(name, "gpus")) {
			if (sl_catalogue_set_overlay(parser.arg, &err))
				return fail(&err);
		} else if (!strcmp(name, "network")) {
			a->network = parser.arg;
		} else if (!strcmp(name, "cluster")) {
			a->cluster_path = parser.arg;
		} else if (!strcmp(name, "zones")) {
			if (sl_cli_zones_add(&sl_cmd_simulate, &zones, parser.arg))
				return 2;
		} else if (!strcmp(name, "json")) {
			a->json = 1;
		} else if (!strcmp(name, "timeline")) {
			a->timeline_path = parser.arg;
		}
	}
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_simulate, "unexpected argument '%s'",
					  argv[parser.next_index]);
	if (!a->plan_path)
		return sl_cli_usage_error(&sl_cmd_simulate, "--plan FILE is required");
	return 0;
}

/* What the command line adds to the environment and the plan, checked before anything is
 * simulated: the plan's model against --model, the cluster, --global-batch, the plan against
 * the model, and whether --timeline can be written. The timeline is attached to the
 * environment whenever --timeline is given and the checks before it passed. */
static int apply_args(const struct simulate_args *a, struct sl_sim_env *env,
		      struct sl_plan *plan, const struct sl_cluster *cluster,
		      struct sl_sim_timeline *timeline, struct sl_err *err)
{
	if (a->model && plan->model[0] && strcmp(plan->model, a->model) &&
	    strcmp(plan->model, env->model.name))
		return sl_err_set(err, SL_EINPUT,
				  "plan '%s': model: the plan is for '%s' but --model is '%s': "
				  "drop --model or simulate it with --model %s", a->plan_path,
				  plan->model, a->model, plan->model);
	if (cluster)
		sl_sim_env_set_cluster(env, cluster);
	if (a->global_batch > 0)
		plan->global_batch = a->global_batch;
	int rc = sl_sim_check_plan(env, plan, 0, err);
	if (rc || !a->timeline_path)
		return rc;
	if (a->cm != SL_COST_SAILOR || !sl_sim_replay_uses(env, plan))
		rc = sl_err_set(err, SL_EINPUT,
				"--timeline: plan '%s' is not modelled as our runtime, and the "
				"timeline is that model's: give every GPU type of the plan a "
				"profile made by `sailor profile` (--profiles DIR), with "
				"--cost-model sailor", a->plan_path);
	else
		rc = sl_atomic_check(a->timeline_path, "timeline", err);
	sl_sim_env_set_timeline(env, timeline);
	return rc;
}

/* Loads the model's environment into *env (the caller frees it, also on failure), simulates the
 * plan into res and writes --timeline. */
static int simulate_plan(const struct simulate_args *a, struct sl_plan *plan,
			 const struct sl_cluster *cluster, struct sl_sim_env **env,
			 struct sl_sim_result *res, struct sl_err *err)
{
	static struct sl_sim_timeline timeline;
	int rc = sl_sim_env_load_overlaid(a->model ? a->model : plan->model, NULL, a->profiles,
					  env, err);
	if (!rc)
		rc = apply_args(a, *env, plan, cluster, &timeline, err);
	if (!rc)
		rc = sl_simulate(*env, plan, a->cm, res, err);
	if (!rc && a->timeline_path) {
		struct sl_timeline_meta meta = {.source = "simulate", .plan_path = a->plan_path,
						.model = (*env)->model.name,
						.cat = &(*env)->catalogue, .cluster = cluster};
		rc = sl_timeline_write(&timeline.spans, &timeline.roles, &meta, a->timeline_path,
				       err);
	}
	sl_sim_timeline_free(&timeline);
	return rc;
}

/* What simulate prints on success: the estimate as JSON, or as the readable breakdown and the
 * links' sources. */
static void print_result(int json, const struct sl_sim_env *env, const struct sl_plan *plan,
			 const struct sl_sim_result *res)
{
	if (json) {
		json_t *o = sl_sim_estimate_json(env, plan, res);
		sl_json_print(stdout, o);
		json_decref(o);
	} else {
		sl_sim_result_print(stdout, env, plan, res);
		sl_sim_links_print(stdout, env, plan);
	}
}

static int run_simulate(int argc, char **argv)
{
	struct simulate_args a = {.cm = SL_COST_SAILOR};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	sl_heap_prefer_huge_pages(SL_HEAP_PLANNER_RESERVE_BYTES); /* before any thread */
	struct sl_err err = {0};
	struct sl_cluster cluster;
	int have_cluster = 0;
	if (sl_cli_load_environment_files(a.network, a.cluster_path, &zones, NULL, &cluster,
					  &have_cluster, &err))
		return fail(&err);
	struct sl_catalogue cat;
	if (sl_catalogue_load(NULL, &cat, &err))
		return fail(&err);
	struct sl_plan plan;
	sl_plan_init(&plan);
	if (sl_plan_load(a.plan_path, &cat, &plan, &err)) {
		sl_plan_free(&plan);
		return fail(&err);
	}
	if (!a.model && !plan.model[0]) {
		sl_plan_free(&plan);
		return sl_cli_usage_error(&sl_cmd_simulate,
					  "--model is required (plan '%s' names no model)",
					  a.plan_path);
	}
	struct sl_sim_env *env = NULL;
	static struct sl_sim_result res;
	rc = simulate_plan(&a, &plan, have_cluster ? &cluster : NULL, &env, &res, &err);
	if (!rc)
		print_result(a.json, env, &plan, &res);
	sl_plan_free(&plan);
	sl_sim_env_free(env);
	if (have_cluster)
		sl_cluster_free(&cluster);
	return rc ? fail(&err) : 0;
}
