/* `sailor control`: the long-running elastic job (src/ctl/controller.h): plans on the pool in
 * force, runs the plan as a generation of `sailor run`, re-plans and resumes when the pool
 * changes or a worker dies. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "cli/args.h"
#include "cli/sync_args.h"
#include "search/islands_search.h"
#include "util/limits.h"
#include "cluster/cluster_file.h"
#include "ctl/controller.h"
#include "sim/sim.h"
#include "util/log.h"

static int run_control(int argc, char **argv);

enum {
	OPT_MODEL, OPT_DATA, OPT_CLUSTER, OPT_POOL, OPT_TRACE, OPT_TIME_SCALE, OPT_CKPT_DIR,
	OPT_RUN_DIR, OPT_STEPS, OPT_GLOBAL_BATCH, OPT_SEQ_LEN, OPT_SEED, OPT_CKPT_EVERY,
	OPT_THREADS, OPT_OBJECTIVE, OPT_MAX_COST, OPT_MIN_THROUGHPUT, OPT_COST_MODEL,
	OPT_MAX_STAGES, OPT_PROFILES, OPT_HTTP, OPT_JSON, OPT_STOP_TIMEOUT, OPT_HANG_TIMEOUT,
	OPT_EXCLUDE_AFTER, OPT_MAX_FAILURES, OPT_SYNC_CKPT, OPT_SLURM, OPT_PARTITION, OPT_GPUS,
	OPT_NETWORK, OPT_ZONES, OPT_VAL_DATA, OPT_EVAL_EVERY, OPT_VAL_WINDOWS, OPT_ISLANDS,
	OPT_SYNC, OPT_MAX_INNER_STEPS, OPT_TOKEN_VALUE,
};

/* --sync and the islands' flags (the token values live as long as the process) */
static struct sl_cli_sync sync_flags;

/* --zones of the command line, added after the options (sl_cli_use_zones) */
static struct sl_cli_zones zones;

static const struct sl_cli_option options[] = {
	[OPT_MODEL] = {"model", 'm', "NAME|FILE", "model to train (data/models/<name>.json or a file)", NULL},
	[OPT_DATA] = {"data", 'd', "FILE", "token file (sailor data)", NULL},
	[OPT_CLUSTER] = {"cluster", 'c', "FILE", "hosts with their GPU type, zone and slots (sailor.cluster/1)", NULL},
	[OPT_POOL] = {"pool", 0, "FILE", "available GPUs (sailor.pool/1), re-read whenever the file changes", NULL},
	[OPT_TRACE] = {"trace", 0, "CSV", "availability trace (SOSP'25 CSV) replayed in time", NULL},
	[OPT_TIME_SCALE] = {"time-scale", 0, "X", "wall seconds per trace second", "1"},
	[OPT_CKPT_DIR] = {"ckpt-dir", 0, "DIR", "checkpoints shared by every generation", NULL},
	[OPT_RUN_DIR] = {"run-dir", 0, "DIR", "event log, step log and every generation's output", "<ckpt-dir>.run"},
	[OPT_STEPS] = {"steps", 'n', "N", "train until step N", NULL},
	[OPT_GLOBAL_BATCH] = {"global-batch", 'g', "G", "sequences per step (the same in every generation)", "8"},
	[OPT_SEQ_LEN] = {"seq-len", 's', "S", "tokens per sequence", "the model's"},
	[OPT_SEED] = {"seed", 0, "S", "seed of the weights and the data order", "sailor run's"},
	[OPT_CKPT_EVERY] = {"ckpt-every", 0, "K", "checkpoint every K steps (work lost on a crash: at most K steps)", "10"},
	[OPT_THREADS] = {"threads-per-rank", 't', "T", "CPU threads of each rank", "1"},
	[OPT_OBJECTIVE] = {"objective", 0, "throughput|cost", "maximise iterations/s, or minimise $ per iteration", "throughput"},
	[OPT_MAX_COST] = {"max-cost", 0, "USD_PER_ITER", "budget: only plans costing at most this per iteration", "none"},
	[OPT_MIN_THROUGHPUT] = {"min-throughput", 0, "IT_PER_S", "only plans reaching at least this many iterations/s", "none"},
	[OPT_COST_MODEL] = {"cost-model", 0, "sailor|sosp25", "simulator that ranks the plans", "sailor"},
	[OPT_MAX_STAGES] = {"max-stages", 0, "P", "deepest pipeline to consider", "all layers"},
	[OPT_PROFILES] = {"profiles", 0, "DIR", SL_CLI_PROFILES_HELP, "none"},
	[OPT_HTTP] = {"http", 0, "HOST:PORT", "serve GET /status and /metrics there (port 0: any free one, see events.jsonl)", "off"},
	[OPT_JSON] = {"json", 0, NULL, "print every event as a JSON line on stdout", NULL},
	[OPT_STOP_TIMEOUT] = {"stop-timeout", 0, "SECONDS", "after SIGTERM, kill a generation that has not stopped", "30"},
	[OPT_HANG_TIMEOUT] = {"hang-timeout", 0, "SECONDS", "a generation silent this long has failed (0: never)", "120"},
	[OPT_EXCLUDE_AFTER] = {"exclude-after", 0, "F", "leave a host out after F failures, until the pool changes", "2"},
	[OPT_MAX_FAILURES] = {"max-failures", 0, "F", "give up after F generations in a row fail before their first step", "3"},
	[OPT_SYNC_CKPT] = {"sync-checkpoints", 0, NULL, "write checkpoints synchronously (for comparison)", NULL},
	[OPT_SLURM] = {"slurm", 0, NULL, "hosts and pool from Slurm's nodes (Features: GPU type and zone; Gres=gpu:N), polled every 0.5 s; each generation a Slurm job (srun --mpi=pmix), ended with scancel; instead of --cluster and --pool/--trace", NULL},
	[OPT_PARTITION] = {"partition", 0, "P", "with --slurm: the nodes of this partition only", "every node"},
	[OPT_GPUS] = {"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	[OPT_NETWORK] = {"network", 0, "FILE", SL_CLI_NETWORK_HELP, "none"},
	[OPT_ZONES] = {"zones", 0, "FILE", SL_CLI_ZONES_HELP " (the generations get them too)", "none"},
	[OPT_VAL_DATA] = {"val-data", 0, "FILE", "held-out token file every generation evaluates on (sailor run --val-data; checked at start)", "none"},
	[OPT_EVAL_EVERY] = {"eval-every", 0, "K", "with --val-data: evaluate after every K-th step and the last; the newest loss is in /status and /metrics", NULL},
	[OPT_VAL_WINDOWS] = {"val-windows", 0, "N", "with --val-data: evaluate its first N windows", "sailor run's (64)"},
	[OPT_ISLANDS] = {"islands", 0, "FILE", "run every plan as islands: its pipelines grouped by region (or zone), DiLoCo outer steps between them, settings from FILE (docs/formats.md#islands-template); checked at start", "synchronous plans"},
	[OPT_SYNC] = {"sync", 0, "every-step|islands|auto", SL_CLI_SYNC_HELP " (docs/plan.md#islands-when-a-per-step-sync-costs-more-than-it-gives)", "every-step"},
	[OPT_MAX_INNER_STEPS] = {"max-inner-steps", 0, "H", SL_CLI_MAX_INNER_STEPS_HELP, "50"},
	[OPT_TOKEN_VALUE] = {"island-token-value", 0, "V|FILE", SL_CLI_TOKEN_VALUE_HELP, "the measurements in data/islands/token_value.json"},
};

const struct sl_cli_command sl_cmd_control = {
	.name = "control",
	.synopsis = "--model M --data T.bin (--cluster C.json (--pool P.json | --trace T.csv) | "
		    "--slurm [--partition P]) --ckpt-dir D --steps N [options] "
		    "[-- sailor-run-options]",
	.summary = "elastic training: re-plan and resume when the pool changes or a worker dies",
	.description =
		"Plans on the GPUs the pool offers (and the cluster file has hosts for), runs the plan\n"
		"as a generation of 'sailor run', and watches it. When the pool changes it re-plans:\n"
		"the same plan keeps running; another plan makes the generation checkpoint at its next\n"
		"step and stop, and the next generation resumes from that checkpoint under the new plan.\n"
		"When a rank dies, the next generation resumes from the newest checkpoint. Every step\n"
		"trains the samples an uninterrupted run would. Events: RUNDIR/events.jsonl; steps:\n"
		"RUNDIR/steps.jsonl; each generation's output: RUNDIR/gen-<n>/ ('sailor report RUNDIR'\n"
		"draws them). Options after '--' go to every 'sailor run' (e.g. --lr, --warmup-steps).\n"
		"SIGINT/SIGTERM: checkpoint, stop, exit 1. Exit status: 0 step N reached, 1 failure.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_control,
};

/* A whole-number option (the steps, batch, sequence, seed, checkpoint interval, threads, stages,
 * failure counts) into o: 0, or 2 for a value out of its range. */
static int take_count(int idx, const char *arg, struct sl_ctl_options *o)
{
	long long v = 0;
	if (sl_cli_parse_long(&sl_cmd_control, options[idx].name, arg, idx == OPT_SEED ? 0 : 1,
			      idx == OPT_SEED ? INT64_MAX
			      : idx == OPT_GLOBAL_BATCH ? SL_MAX_GLOBAL_BATCH
			      : idx == OPT_SEQ_LEN ? SL_MAX_SEQ_LEN
			      : idx == OPT_THREADS ? SL_MAX_THREADS
			      : idx == OPT_VAL_WINDOWS ? SL_MAX_VAL_WINDOWS : SL_MAX_STEPS,
			      &v))
		return 2;
	if (idx == OPT_STEPS) o->steps = v;
	if (idx == OPT_GLOBAL_BATCH) o->global_batch = v;
	if (idx == OPT_SEQ_LEN) o->seq_len = (int)v;
	if (idx == OPT_SEED) { o->seed = (unsigned long long)v; o->seed_given = 1; }
	if (idx == OPT_CKPT_EVERY) o->ckpt_every = v;
	if (idx == OPT_THREADS) o->threads_per_rank = (int)v;
	if (idx == OPT_MAX_STAGES) o->req.max_stages = (int)v;
	if (idx == OPT_EXCLUDE_AFTER) o->exclude_after = (int)v;
	if (idx == OPT_MAX_FAILURES) o->max_failures = (int)v;
	if (idx == OPT_EVAL_EVERY) o->eval_every = v;
	if (idx == OPT_VAL_WINDOWS) o->val_windows = v;
	return 0;
}

/* --gpus and --network: overlays of the whole process, read as they come (--network against
 * the catalogue --gpus left). 0, or 1 with the file's error said. */
static int take_overlay(int idx, const char *arg)
{
	struct sl_err err = {0};
	struct sl_cluster none;
	int have = 0;
	int rc = idx == OPT_GPUS ? sl_catalogue_set_overlay(arg, &err)
				 : sl_cli_load_environment_files(arg, NULL, NULL, NULL, &none, &have,
								 &err);
	if (rc) {
		sl_cli_error(&sl_cmd_control, "%s", err.msg);
		return 1;
	}
	return 0;
}

/* One option of the command line into o: 0, or the exit status of a bad value. */
static int take_option(int idx, const char *arg, struct sl_ctl_options *o)
{
	const struct sl_cli_command *cmd = &sl_cmd_control;
	double d = 0;
	struct sl_err err = {0};
	switch (idx) {
	case OPT_MODEL: o->model = arg; break;
	case OPT_DATA: o->data = arg; break;
	case OPT_VAL_DATA: o->val_data = arg; break;
	case OPT_ISLANDS: o->islands = arg; break;
	case OPT_SYNC:
	case OPT_MAX_INNER_STEPS:
	case OPT_TOKEN_VALUE:
		return sl_cli_sync_take(cmd, options[idx].name, arg, &o->req, &sync_flags);
	case OPT_CLUSTER: o->cluster = arg; break;
	case OPT_POOL: o->pool = arg; break;
	case OPT_TRACE: o->trace = arg; break;
	case OPT_CKPT_DIR: o->ckpt_dir = arg; break;
	case OPT_RUN_DIR: o->run_dir = arg; break;
	case OPT_PROFILES: o->profiles = arg; break;
	case OPT_HTTP: o->http = arg; break;
	case OPT_JSON: o->json = 1; break;
	case OPT_SYNC_CKPT: o->sync_checkpoints = 1; break;
	case OPT_SLURM: o->slurm = 1; break;
	case OPT_PARTITION: o->partition = arg; break;
	case OPT_ZONES: return sl_cli_zones_add(cmd, &zones, arg) ? 2 : 0;
	case OPT_GPUS:
	case OPT_NETWORK:
		return take_overlay(idx, arg);
	case OPT_TIME_SCALE:
		if (sl_cli_parse_double(cmd, "time-scale", arg, 1e-9, 1e9, &o->time_scale))
			return 2;
		break;
	case OPT_STOP_TIMEOUT:
		if (sl_cli_parse_double(cmd, "stop-timeout", arg, 0.1, SL_MAX_TIME_S,
					&o->stop_timeout_s))
			return 2;
		break;
	case OPT_HANG_TIMEOUT:
		if (sl_cli_parse_double(cmd, "hang-timeout", arg, 0, SL_MAX_TIME_S,
					&o->hang_timeout_s))
			return 2;
		break;
	case OPT_MAX_COST:
		if (sl_cli_parse_double(cmd, "max-cost", arg, 1e-12, SL_MAX_COST_USD, &d))
			return 2;
		o->req.max_cost_usd_per_iter = d;
		break;
	case OPT_MIN_THROUGHPUT:
		if (sl_cli_parse_double(cmd, "min-throughput", arg, 1e-12, SL_MAX_THROUGHPUT_IT_S,
					&d))
			return 2;
		o->req.min_throughput_it_s = d;
		break;
	case OPT_OBJECTIVE:
		if (!strcmp(arg, "throughput"))
			o->req.objective = SL_OBJECTIVE_THROUGHPUT;
		else if (!strcmp(arg, "cost"))
			o->req.objective = SL_OBJECTIVE_COST;
		else
			return sl_cli_usage_error(cmd, "--objective: '%s' is neither "
						  "'throughput' nor 'cost'", arg);
		break;
	case OPT_COST_MODEL:
		if (sl_cost_model_parse(arg, &o->req.cost_model, &err))
			return sl_cli_usage_error(cmd, "--cost-model: %s", err.msg);
		break;
	default:
		return take_count(idx, arg, o);
	}
	return 0;
}

/* The arguments after '--', for every `sailor run`: none may be one the controller sets. */
static int take_run_options(int argc, char **argv, int next, struct sl_ctl_options *o)
{
	const struct sl_cli_command *cmd = &sl_cmd_control;
	if (next < argc && !strcmp(argv[next - 1], "--")) {
		o->extra = argv + next;
		o->extra_count = argc - next;
	} else if (next < argc) {
		return sl_cli_usage_error(cmd, "unexpected argument '%s' (options for 'sailor run' "
					  "go after '--')", argv[next]);
	}
	for (int i = 0; i < o->extra_count; i++) {
		static const char *const owned[] = {"--plan", "--cluster", "--model", "--data",
						    "--steps", "--global-batch", "--ckpt-dir",
						    "--ckpt-every", "--resume", "--json",
						    "--events-file", "--slurm", "--partition", "--gpus",
						    "--val-data", "--eval-every", "--val-windows"};
		for (size_t k = 0; k < sizeof(owned) / sizeof(owned[0]); k++)
			if (!strncmp(o->extra[i], owned[k], strlen(owned[k])) &&
			    (o->extra[i][strlen(owned[k])] == 0 || o->extra[i][strlen(owned[k])] == '='))
				return sl_cli_usage_error(cmd, "'%s' after '--': the controller sets it "
							  "for every generation (use its own option)",
							  o->extra[i]);
	}
	return 0;
}

/* The options together: the sources of hosts and pool, and what is required. */
static int check_options(const struct sl_ctl_options *o)
{
	const struct sl_cli_command *cmd = &sl_cmd_control;
	if (o->slurm && (o->cluster || o->pool || o->trace))
		return sl_cli_usage_error(cmd, "--slurm takes hosts and pool from Slurm: give no "
					  "--cluster, --pool or --trace with it");
	if (o->partition && !o->slurm)
		return sl_cli_usage_error(cmd, "--partition applies to --slurm only");
	if (!o->model || !o->data || (!o->cluster && !o->slurm) || !o->ckpt_dir || !o->steps)
		return sl_cli_usage_error(cmd, "--model, --data, --cluster (or --slurm), --ckpt-dir "
					  "and --steps are required");
	if (!o->slurm && !o->pool == !o->trace)
		return sl_cli_usage_error(cmd, "give exactly one of --pool FILE or --trace CSV");
	if (o->time_scale != 1.0 && !o->trace)
		return sl_cli_usage_error(cmd, "--time-scale applies to --trace only");
	if (o->eval_every && !o->val_data)
		return sl_cli_usage_error(cmd, "--eval-every needs --val-data FILE (a held-out token "
					  "file, e.g. from 'sailor data --val-fraction')");
	if (o->val_data && !o->eval_every)
		return sl_cli_usage_error(cmd, "--val-data needs --eval-every K (evaluate after every "
					  "K-th step and after the last)");
	if (o->val_windows && !o->val_data)
		return sl_cli_usage_error(cmd, "--val-windows needs --val-data FILE and --eval-every K");
	if (o->islands && o->req.sync != SL_SYNC_EVERY_STEP)
		return sl_cli_usage_error(cmd, "--islands groups the synchronous plans the planner "
					  "chooses; with --sync %s the planner draws the islands itself: "
					  "give one of them", sl_sync_mode_name(o->req.sync));
	return 0;
}

/* 0 to go on, -1 after --help (exit 0), else the exit status of a bad command line. */
static int parse(int argc, char **argv, struct sl_ctl_options *o, char *run_dir, size_t size)
{
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_control, argc, argv);
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		if (idx == SL_CLI_ERROR)
			return 2;
		if (idx == SL_CLI_HELP)
			return -1;
		int rc = take_option(idx, parser.arg, o);
		if (rc)
			return rc;
	}
	int rc = take_run_options(argc, argv, parser.next_index, o);
	if (!rc)
		rc = check_options(o);
	if (!rc)
		rc = sl_cli_sync_finish(&sl_cmd_control, &o->req, &sync_flags);
	if (rc)
		return rc;
	if (!o->run_dir) {
		snprintf(run_dir, size, "%s.run", o->ckpt_dir);
		o->run_dir = run_dir;
	}
	return 0;
}

static int run_control(int argc, char **argv)
{
	struct sl_ctl_options o;
	memset(&o, 0, sizeof(o));
	o.time_scale = 1.0;
	o.global_batch = 8;
	o.ckpt_every = 10;
	o.stop_timeout_s = 30;
	o.hang_timeout_s = 120;
	o.exclude_after = 2;
	o.max_failures = 3;
	o.req.top_k = 1;
	char run_dir[4200];
	int rc = parse(argc, argv, &o, run_dir, sizeof(run_dir));
	if (rc)
		return rc < 0 ? 0 : rc;
	struct sl_err err = {0};
	rc = sl_cli_use_zones(&zones, o.pool, o.cluster, &err);
	if (!rc)
		rc = sl_ctl_run(&o, &err);
	if (rc) {
		if (rc == SL_EUSAGE)
			return sl_cli_usage_error(&sl_cmd_control, "%s", err.msg);
		sl_cli_error(&sl_cmd_control, "%s", err.msg);
		return 1;
	}
	return 0;
}
