/* `sailor validate`: simulates every measured run in a folder and reports the relative error of
 * iteration time and peak memory per run and summarised (mean, median, max of |error|). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cluster/cluster_file.h"
#include "cluster/catalogue.h"
#include "sim/validate.h"
#include "util/json.h"

static int run_validate(int argc, char **argv);

static const struct sl_cli_option options[] = {
	{"model", 'm', "NAME|FILE", "model the runs trained", NULL},
	{"cost-model", 'c', "NAME", "sailor or sosp25", "sailor"},
	{"profiles", 0, "DIR", SL_CLI_PROFILES_HELP, "none"},
	{"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	{"network", 0, "FILE", SL_CLI_NETWORK_HELP, "none"},
	{"cluster", 0, "FILE", SL_CLI_CLUSTER_HELP, "none"},
	{"zones", 0, "FILE", SL_CLI_ZONES_HELP, "none"},
	{"json", 0, NULL, "print one JSON object (schema sailor.validation/1) on stdout", NULL},
};

const struct sl_cli_command sl_cmd_validate = {
	.name = "validate",
	.synopsis = "--model M DIR [--cost-model sailor|sosp25] [--profiles DIR] [--gpus FILE]\n"
		    "           [--network FILE] [--cluster FILE] [--zones FILE] [--json]",
	.summary = "compare the simulator with measured runs (files with real and max_mem)",
	.description = "DIR holds plan files that carry the measured iteration time (\"real\", s)\n"
		       "and peak GPU memory (\"max_mem\", bytes), like the SOSP'25 validation files.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_validate,
};

/* --zones of the command line (sl_cli_load_environment_files adds them) */
static struct sl_cli_zones zones;

/* The command line, as given. */
struct validate_args {
	const char *model, *profiles, *network, *cluster_path, *dir;
	enum sl_cost_model cm;
	int json;
};

/* 0 to go on, -1 after --help (exit 0), else the exit status of a bad command line. */
static int parse_args(int argc, char **argv, struct validate_args *a)
{
	struct sl_err err = {0};
	struct sl_cli_parser parser;
	/* options may come before or after DIR ("--model M DIR --json"): parse, take one
	 * positional argument, and parse the rest again */
	int base = 0;
	for (;;) {
		sl_cli_parser_init(&parser, &sl_cmd_validate, argc - base, argv + base);
		for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
			if (idx == SL_CLI_ERROR)
				return 2;
			if (idx == SL_CLI_HELP)
				return -1;
			const char *name = options[idx].name;
			if (!strcmp(name, "model"))
				a->model = parser.arg;
			else if (!strcmp(name, "cost-model")) {
				if (sl_cost_model_parse(parser.arg, &a->cm, &err))
					return sl_cli_usage_error(&sl_cmd_validate, "--cost-model: %s",
								  err.msg);
			} else if (!strcmp(name, "profiles")) {
				a->profiles = parser.arg;
			} else if (!strcmp(name, "gpus")) {
				if (sl_catalogue_set_overlay(parser.arg, &err)) {
					sl_cli_error(&sl_cmd_validate, "%s", err.msg);
					return 1;
				}
			}
			else if (!strcmp(name, "network"))
				a->network = parser.arg;
			else if (!strcmp(name, "cluster"))
				a->cluster_path = parser.arg;
			else if (!strcmp(name, "zones") &&
				 sl_cli_zones_add(&sl_cmd_validate, &zones, parser.arg))
				return 2;
			else if (!strcmp(name, "json"))
				a->json = 1;
		}
		int pos = base + parser.next_index;
		if (pos >= argc)
			break;
		if (a->dir)
			return sl_cli_usage_error(&sl_cmd_validate, "unexpected argument '%s' (one "
						  "folder only)", argv[pos]);
		if (!strcmp(argv[pos], "--")) {
			if (pos + 1 < argc)
				a->dir = argv[pos + 1];
			if (pos + 2 < argc)
				return sl_cli_usage_error(&sl_cmd_validate, "unexpected argument '%s'",
							  argv[pos + 2]);
			break;
		}
		a->dir = argv[pos];
		base = pos; /* argv[base] plays the program name for the next round */
	}
	if (!a->model)
		return sl_cli_usage_error(&sl_cmd_validate, "--model is required");
	if (!a->dir)
		return sl_cli_usage_error(&sl_cmd_validate, "expected a folder of measured runs");
	return 0;
}

/* The readable report: one line per run, then the summary of |relative error|. */
static void print_table(const struct sl_sim_env *env, const struct validate_args *a,
			const struct sl_validation *v)
{
	const char *overlay = sl_sim_env_profile_overlay(env);
	printf("model %s, cost model %s%s%s, %d measured runs in %s\n\n", env->model.name,
	       sl_cost_model_name(a->cm), overlay ? ", profiles " : "", overlay ? overlay : "",
	       v->run_count, a->dir);
	printf("%-32s %2s %3s %4s %5s %9s %9s %8s %9s %9s %8s\n", "run", "P", "D", "mbs", "G",
	       "real s", "sim s", "error", "real GB", "sim GB", "error");
	for (int i = 0; i < v->run_count; i++) {
		const struct sl_validation_run *r = &v->runs[i];
		printf("%-32s %2d %3d %4d %5lld %9.4f %9.4f %+7.1f%% %9.2f %9.2f %+7.1f%%\n",
		       r->file, r->stages, r->pipelines, r->micro_batch, r->global_batch, r->real_s,
		       r->sim_s, 100 * r->time_error, r->real_mem_bytes / 1e9,
		       r->sim_mem_bytes / 1e9, 100 * r->memory_error);
	}
	printf("\n%-22s %8s %8s %8s\n", "|relative error|", "mean", "median", "max");
	printf("%-22s %7.1f%% %7.1f%% %7.1f%%\n", "iteration time", 100 * v->time.mean_abs,
	       100 * v->time.median_abs, 100 * v->time.max_abs);
	printf("%-22s %7.1f%% %7.1f%% %7.1f%%\n", "peak memory", 100 * v->memory.mean_abs,
	       100 * v->memory.median_abs, 100 * v->memory.max_abs);
	for (int kind = 0; v->kind_runs[1] > 0 && kind < 2; kind++) {
		if (v->kind_runs[kind] == 0)
			continue;
		char label[64];
		snprintf(label, sizeof(label), "%s time (%d)", kind ? "islands" : "synchronous",
			 v->kind_runs[kind]);
		printf("%-22s %7.1f%% %7.1f%% %7.1f%%\n", label, 100 * v->kind_time[kind].mean_abs,
		       100 * v->kind_time[kind].median_abs, 100 * v->kind_time[kind].max_abs);
		snprintf(label, sizeof(label), "%s memory", kind ? "islands" : "synchronous");
		printf("%-22s %7.1f%% %7.1f%% %7.1f%%\n", label,
		       100 * v->kind_memory[kind].mean_abs, 100 * v->kind_memory[kind].median_abs,
		       100 * v->kind_memory[kind].max_abs);
	}
	if (v->skipped)
		printf("(%d plan files without a measured real and max_mem (missing or 0) "
		       "skipped)\n", v->skipped);
}

static int run_validate(int argc, char **argv)
{
	struct validate_args a = {.cm = SL_COST_SAILOR};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct sl_err err = {0};
	struct sl_cluster cluster;
	int have_cluster = 0;
	struct sl_sim_env *env = NULL;
	struct sl_validation v;
	rc = sl_cli_load_environment_files(a.network, a.cluster_path, &zones, NULL, &cluster,
					   &have_cluster, &err);
	if (!rc)
		rc = sl_sim_env_load_overlaid(a.model, NULL, a.profiles, &env, &err);
	if (!rc && have_cluster)
		sl_sim_env_set_cluster(env, &cluster);
	if (!rc)
		rc = sl_validation_run(env, a.dir, a.cm, &v, &err);
	if (rc) {
		sl_sim_env_free(env);
		if (have_cluster)
			sl_cluster_free(&cluster);
		sl_cli_error(&sl_cmd_validate, "%s", err.msg);
		return sl_err_exit_status(rc);
	}
	if (a.json) {
		json_t *o = sl_validation_to_json(env, &v);
		sl_json_print(stdout, o);
		json_decref(o);
	} else {
		print_table(env, &a, &v);
	}
	sl_validation_free(&v);
	sl_sim_env_free(env);
	if (have_cluster)
		sl_cluster_free(&cluster);
	return 0;
}
