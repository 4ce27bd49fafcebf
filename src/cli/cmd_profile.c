/* `sailor profile`: measures what the simulator reads.
 *   layers   (--model M --gpu NAME -o DIR): our runtime's embedding, block and head, forward,
 *            backward and AdamW, per (micro-batch, TP degree) on this host -> DIR/<M>/<NAME>.json
 *            (profiler/profiler.h);
 *   network  (--network --cluster FILE -o FILE): bandwidth against message size between the
 *            cluster's zones and within a host, by MPI ranks on its hosts, fitted to the
 *            simulator's network model (profiler/netprof.h). Started by a person it launches
 *            itself with mpirun; inside that job it is one measuring rank.
 * Errors go to stderr: exit 1 for bad input or a failed measurement, 2 for usage. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cluster/catalogue.h"
#include "runtime/comm.h"
#include "runtime/launch.h"
#include "runtime/launch_run.h"
#include "profiler/netprof.h"
#include "profiler/profiler.h"
#include "util/log.h"

static int run_profile(int argc, char **argv);

enum {
	OPT_MODEL, OPT_GPU, OPT_TP, OPT_MBS, OPT_SEQ, OPT_THREADS, OPT_REPEATS, OPT_WARMUP,
	OPT_MIN_SAMPLE, OPT_OUTPUT, OPT_NETWORK, OPT_CLUSTER, OPT_SIZES, OPT_TIMEOUT, OPT_GPUS, OPT_QUIET,
	OPT_HOST,
};

static const struct sl_cli_option options[] = {
	[OPT_MODEL] = {"model", 'm', "NAME|FILE", "model whose layers to measure (data/models/)", NULL},
	[OPT_GPU] = {"gpu", 0, "NAME", "device type the measurements stand for (a catalogue name)", NULL},
	[OPT_TP] = {"tp", 0, "LIST", "TP degrees, e.g. 1,2 (TP ranks are threads of this process)", "1"},
	[OPT_MBS] = {"mbs", 0, "LIST", "micro-batch sizes, e.g. 1,2,4", "1,2,4"},
	[OPT_SEQ] = {"seq-len", 's', "S", "tokens per sequence", "the model's"},
	[OPT_THREADS] = {"threads", 't', "T", "CPU threads of each TP rank", "1"},
	[OPT_REPEATS] = {"repeats", 'r', "R", "timed repetitions per entry (the median is kept)", "5 (network: 3)"},
	[OPT_WARMUP] = {"warmup", 0, "W", "untimed repetitions before them", "1"},
	[OPT_MIN_SAMPLE] = {"min-sample-ms", 0, "MS", "a timed sample repeats a phase until it lasts this long (0: one call)", "200"},
	[OPT_OUTPUT] = {"output", 'o', "DIR|FILE", "layers: folder of <MODEL>/<GPU>.json (made, with any missing folder above it); network: the file", NULL},
	[OPT_NETWORK] = {"network", 0, NULL, "measure the network of --cluster instead of layers", NULL},
	[OPT_CLUSTER] = {"cluster", 'c', "FILE", "network: the hosts to measure between; layers: where --host is (sailor.cluster/1)", NULL},
	[OPT_SIZES] = {"sizes", 0, "LIST", "network: message sizes in bytes", "4096,65536,262144,1048576"},
	[OPT_TIMEOUT] = {"timeout", 0, "S", "network: stop the measurement after S seconds", "300"},
	[OPT_GPUS] = {"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	[OPT_QUIET] = {"quiet", 'q', NULL, "no progress lines on stderr", NULL},
	[OPT_HOST] = {"host", 0, "NAME", "layers: run the --tp TP ranks as MPI ranks on this host of --cluster, as `sailor run` would", "none: threads here"},
};

const struct sl_cli_command sl_cmd_profile = {
	.name = "profile",
	.synopsis = "--model M --gpu NAME [--tp 1,2] [--mbs 1,2,4] [--seq-len S] [--threads T]\n"
		    "                      [--repeats R] -o DIR\n"
		    "       sailor profile --network --cluster FILE [--sizes LIST] [--repeats R] -o FILE",
	.summary = "measure layer times (this host) or link bandwidths (a cluster) for the simulator",
	.description =
		"Layers: runs the runtime's own embedding, transformer block and head (forward,\n"
		"backward, AdamW), and the block's attention core alone (what selective\n"
		"recomputation reruns), for each micro-batch size and TP degree, and writes\n"
		"DIR/<MODEL>/<GPU>.json in the profile format `simulate --profiles DIR` reads, with\n"
		"provenance (host, date, threads, OpenBLAS core, repeats, spread) and per-layer memory.\n"
		"To measure a testbed device class, run it with the CPU of --tp devices of a host of\n"
		"that class: scripts/testbed exec DESC HOST --devices N -- sailor profile --tp N ...\n"
		"(entries already in the output file for other (mbs, tp) are kept, so TP degrees can\n"
		"be measured one run at a time).\n"
		"Network: places one MPI rank on every host of the cluster file (and a second on a\n"
		"host with two slots), measures point-to-point and all-reduce bandwidth against message\n"
		"size between every two zones (per GPU type) and within a host, and writes the fits in\n"
		"the format of data/network/zone_bandwidths.json.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_profile,
};

static int fail(const struct sl_err *err)
{
	sl_cli_error(&sl_cmd_profile, "%s", err->msg);
	return sl_err_exit_status(err->code);
}

static int parse_int(const char *name, const char *text, long long min, long long max, int *out)
{
	long long v;
	if (sl_cli_parse_long(&sl_cmd_profile, name, text, min, max, &v))
		return 2;
	*out = (int)v;
	return 0;
}

/* The command line, for the provenance of the files written. */
static void join_args(char *buf, size_t size, int argc, char **argv)
{
	size_t used = (size_t)snprintf(buf, size, "sailor profile");
	for (int i = 1; i < argc && used + 1 < size; i++)
		used += (size_t)snprintf(buf + used, size - used, " %s", argv[i]);
}

/* The end of a rank of a profiling job: a failure names the rank and stops the whole job (the
 * others would wait for it forever). */
static int finish_rank(struct sl_comm *comm, int rc, const struct sl_err *err)
{
	if (rc) {
		fprintf(stderr, "sailor profile: rank %d: %s\n", comm->rank, err->msg);
		fflush(stderr);
		sl_comm_abort(comm, 1);
	}
	sl_comm_finalize(comm);
	return 0;
}

/* "<this program> profile <options>": what every rank of a profiling job runs. */
static char **worker_argv(int argc, char **argv, char *self, size_t size)
{
	ssize_t len = readlink("/proc/self/exe", self, size - 1);
	self[len > 0 ? len : 0] = 0;
	char **worker = calloc((size_t)argc + 2, sizeof(char *));
	if (!worker)
		return NULL;
	worker[0] = len > 0 ? self : argv[-1];
	for (int i = 0; i < argc; i++)
		worker[i + 1] = argv[i];
	return worker;
}

/* Layers with MPI TP ranks: tp ranks on the host named, through the cluster's launcher. */
static int launch_layers(const char *cluster_path, const char *host, int tp, int timeout_s,
			 int argc, char **argv)
{
	struct sl_err err = {0};
	struct sl_catalogue cat;
	struct sl_cluster cluster;
	if (sl_catalogue_load(NULL, &cat, &err) || sl_cluster_load(cluster_path, &cat, &cluster, &err))
		return fail(&err);
	int h = -1;
	for (int i = 0; i < cluster.host_count; i++)
		if (!strcmp(cluster.hosts[i].name, host))
			h = i;
	int rc = 0;
	if (h < 0)
		rc = sl_err_set(&err, SL_EINPUT, "--host '%s': no such host in '%s'", host,
				cluster_path);
	else if (cluster.hosts[h].slots < tp)
		rc = sl_err_set(&err, SL_EINPUT, "--tp %d: host '%s' has %d slots: a TP group runs "
				"on one host", tp, host, cluster.hosts[h].slots);
	int rank_host[SL_PROFILER_MAX_TP];
	for (int r = 0; r < tp && r < SL_PROFILER_MAX_TP; r++)
		rank_host[r] = h;
	char self[PATH_MAX];
	char **worker = rc ? NULL : worker_argv(argc, argv, self, sizeof(self));
	if (!rc && !worker)
		rc = sl_err_set(&err, SL_ENOMEM, "out of memory");
	if (!rc)
		rc = sl_launch_run_on_hosts(&cluster, rank_host, tp, timeout_s,
					    (const char *const *)worker, "sailor profile", &err);
	if (rc == SL_ETIMEOUT)
		sl_err_set(&err, SL_EIO, "the profile took longer than %d s and was stopped: use "
			   "fewer --mbs, fewer --repeats, a smaller --min-sample-ms, or a larger "
			   "--timeout", timeout_s);
	free(worker);
	sl_cluster_free(&cluster);
	return rc ? fail(&err) : 0;
}

static int run_network(struct sl_netprof_options *no, int argc, char **argv)
{
	struct sl_err err = {0};
	struct sl_catalogue cat;
	if (sl_catalogue_load(NULL, &cat, &err))
		return fail(&err);
	if (sl_launch_in_mpi_job(NULL, NULL)) {
		struct sl_comm comm;
		if (sl_comm_mpi_init(&comm, &argc, &argv, &err))
			return fail(&err);
		return finish_rank(&comm, sl_netprof_worker(no, &cat, &comm, &err), &err);
	}
	char self[PATH_MAX];
	char **worker = worker_argv(argc, argv, self, sizeof(self));
	if (!worker)
		return 1;
	/* argv[0] is "profile": the worker runs "<self> profile <options>" */
	int rc = sl_netprof_launch(no, &cat, (const char *const *)worker, &err);
	free(worker);
	if (rc)
		return fail(&err);
	fprintf(stderr, "sailor profile: wrote '%s'\n", no->output);
	return 0;
}

/* The command line: the options of both kinds of measurement, and the lists as given. */
struct profile_args {
	struct sl_profiler_options po;
	struct sl_netprof_options no;
	int min_sample_ms;
	const char *output, *mbs, *tp, *sizes;
	int network, repeats;
	const char *host;
};

/* 0 to go on, -1 after --help (exit 0), else the exit status of a bad command line. */
static int parse_args(int argc, char **argv, struct profile_args *a)
{
	struct sl_profiler_options *po = &a->po;
	struct sl_err err = {0};
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_profile, argc, argv);
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		int rc = 0;
		switch (idx) {
		case SL_CLI_ERROR: return 2;
		case SL_CLI_HELP: return -1;
		case OPT_MODEL: po->model = parser.arg; break;
		case OPT_GPU: po->gpu = parser.arg; break;
		case OPT_TP: a->tp = parser.arg; break;
		case OPT_MBS: a->mbs = parser.arg; break;
		case OPT_SEQ:
			rc = parse_int("seq-len", parser.arg, 1, 1 << 20, &po->seq_len);
			break;
		case OPT_THREADS:
			rc = parse_int("threads", parser.arg, 1, 256, &po->threads);
			break;
		case OPT_REPEATS:
			rc = parse_int("repeats", parser.arg, 1, 1000, &a->repeats);
			break;
		case OPT_WARMUP: rc = parse_int("warmup", parser.arg, 0, 1000, &po->warmup); break;
		case OPT_MIN_SAMPLE:
			rc = parse_int("min-sample-ms", parser.arg, 0, 60000, &a->min_sample_ms);
			po->min_sample_s = 1e-3 * a->min_sample_ms;
			break;
		case OPT_OUTPUT: a->output = parser.arg; break;
		case OPT_NETWORK: a->network = 1; break;
		case OPT_CLUSTER: a->no.cluster = parser.arg; break;
		case OPT_SIZES: a->sizes = parser.arg; break;
		case OPT_TIMEOUT:
			rc = parse_int("timeout", parser.arg, 1, 86400, &a->no.timeout_s);
			break;
		case OPT_QUIET: po->verbose = 0; break;
		case OPT_HOST: a->host = parser.arg; break;
		case OPT_GPUS:
			if (sl_catalogue_set_overlay(parser.arg, &err))
				return fail(&err);
			break;
		}
		if (rc)
			return rc;
	}
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_profile, "unexpected argument '%s'",
					  argv[parser.next_index]);
	if (!a->output)
		return sl_cli_usage_error(&sl_cmd_profile, "-o is required (%s)",
					  a->network
						  ? "the network file to write"
						  : "the folder to write <MODEL>/<GPU>.json into");
	return 0;
}

/* --network: its options checked, then the measurement (run_network). */
static int profile_network(struct profile_args *a, char *command, int argc, char **argv)
{
	struct sl_netprof_options *no = &a->no;
	struct sl_err err = {0};
	if (!no->cluster)
		return sl_cli_usage_error(&sl_cmd_profile, "--network needs --cluster FILE");
	if (a->po.model || a->po.gpu)
		return sl_cli_usage_error(&sl_cmd_profile, "--network measures links: drop "
					  "--model and --gpu");
	int list[SL_NETPROF_MAX_SIZES];
	if (sl_profiler_parse_list(a->sizes, 1, 1 << 28, list, SL_NETPROF_MAX_SIZES,
				   &no->size_count, &err))
		return sl_cli_usage_error(&sl_cmd_profile, "--sizes %s", err.msg);
	for (int i = 0; i < no->size_count; i++)
		no->sizes[i] = list[i];
	no->repeats = a->repeats ? a->repeats : 3;
	no->min_sample_s = a->po.min_sample_s;
	no->output = a->output;
	no->command = command;
	return run_network(no, argc, argv);
}

/* The options of a layer profile checked and its lists parsed: 0, or the exit status. */
static int check_layer_args(struct profile_args *a)
{
	struct sl_profiler_options *po = &a->po;
	struct sl_err err = {0};
	if (!!a->no.cluster != !!a->host)
		return sl_cli_usage_error(&sl_cmd_profile, "layers on a host of a cluster need both "
					  "--cluster FILE and --host NAME");
	if (!po->model)
		return sl_cli_usage_error(&sl_cmd_profile, "--model is required");
	if (!po->gpu)
		return sl_cli_usage_error(&sl_cmd_profile, "--gpu NAME is required: the device type "
					  "the profile is for");
	if (sl_profiler_parse_list(a->mbs, 1, 1 << 16, po->mbs, SL_PROFILER_MAX_SIZES,
				   &po->mbs_count, &err))
		return sl_cli_usage_error(&sl_cmd_profile, "--mbs %s", err.msg);
	if (sl_profiler_parse_list(a->tp, 1, 64, po->tp, SL_PROFILER_MAX_SIZES, &po->tp_count,
				   &err))
		return sl_cli_usage_error(&sl_cmd_profile, "--tp %s", err.msg);
	return 0;
}

/* Inside the MPI job of --host: this process is one TP rank; rank 0 writes the profile. */
static int profile_layers_rank(struct sl_profiler_options *po, const struct sl_catalogue *cat,
			       const char *output, int argc, char **argv)
{
	struct sl_err err = {0};
	struct sl_comm comm;
	if (sl_comm_mpi_init(&comm, &argc, &argv, &err))
		return fail(&err);
	/* TP ranks wait the way a run's ranks on this device type wait */
	const struct sl_gpu_type *device = &cat->gpus[sl_catalogue_gpu_index(cat, po->gpu)];
	/* ranks placed as a run places them sit in their device's quota (the testbed's
	 * slot cgroups): time them by the CPU that quota pays for (profiler.c) */
	po->cpu_quota_cores = device->cpu_quota_cores;
	if (sl_comm_set_idle_wait(&comm, sl_comm_idle_wait_for(device->cpu_quota_cores), &err))
		return fail(&err);
	po->comm = &comm;
	if (comm.rank != 0)
		po->verbose = 0;
	json_t *prof = NULL;
	int rc = sl_profiler_run(po, &prof, &err);
	char path[4096];
	if (!rc && comm.rank == 0) {
		json_t *model_name = json_object_get(json_object_get(prof, "source"), "model");
		rc = sl_profiler_write(prof, output, json_string_value(model_name), po->gpu, path,
				       sizeof(path), &err);
		if (!rc)
			fprintf(stderr, "sailor profile: wrote '%s'\n", path);
	}
	json_decref(prof);
	return finish_rank(&comm, rc, &err);
}

/* Layers with TP ranks as threads of this process. */
static int profile_layers_here(const struct sl_profiler_options *po, const char *output)
{
	struct sl_err err = {0};
	json_t *prof = NULL;
	int rc = sl_profiler_run(po, &prof, &err);
	if (rc)
		return rc == SL_EUSAGE ? sl_cli_usage_error(&sl_cmd_profile, "%s", err.msg) : fail(&err);
	char path[4096];
	json_t *model_name = json_object_get(json_object_get(prof, "source"), "model");
	rc = sl_profiler_write(prof, output, json_string_value(model_name), po->gpu, path,
			       sizeof(path), &err);
	json_decref(prof);
	if (rc)
		return fail(&err);
	fprintf(stderr, "sailor profile: wrote '%s'\n", path);
	return 0;
}

/* Layers: checked, then measured here, launched on --host, or as a rank of that launch. */
static int profile_layers(struct profile_args *a, char *command, int argc, char **argv)
{
	struct sl_profiler_options *po = &a->po;
	struct sl_err err = {0};
	int rc = check_layer_args(a);
	if (rc)
		return rc;
	po->repeats = a->repeats ? a->repeats : 5;
	po->command = command;
	/* the file is named after a device type the simulator knows, or it would be ignored */
	struct sl_catalogue cat;
	if (sl_catalogue_load(NULL, &cat, &err))
		return fail(&err);
	if (sl_catalogue_gpu_index(&cat, po->gpu) < 0) {
		char names[512];
		return sl_cli_usage_error(&sl_cmd_profile, "--gpu '%s': not a device type of the "
					  "catalogue (%s); add it with --gpus FILE (sailor.gpus/1)",
					  po->gpu,
					  sl_catalogue_gpu_names(&cat, names, sizeof(names)));
	}
	if (!a->host && !sl_launch_in_mpi_job(NULL, NULL))
		return profile_layers_here(po, a->output);
	if (po->tp_count != 1)
		return sl_cli_usage_error(&sl_cmd_profile, "--tp: give one TP degree per run "
					  "with MPI ranks (--host); the output file keeps the "
					  "entries of earlier runs");
	if (!sl_launch_in_mpi_job(NULL, NULL))
		return launch_layers(a->no.cluster, a->host, po->tp[0], a->no.timeout_s, argc,
				     argv);
	return profile_layers_rank(po, &cat, a->output, argc, argv);
}

static int run_profile(int argc, char **argv)
{
	struct profile_args a = {
		.po = {.threads = 1, .repeats = 0, .warmup = 1, .verbose = 1, .min_sample_s = 0.2},
		.no = {.timeout_s = 300},
		.min_sample_ms = 200,
		.mbs = "1,2,4",
		.tp = "1",
		.sizes = "4096,65536,262144,1048576",
	};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	char command[2048];
	join_args(command, sizeof(command), argc, argv);
	if (a.network)
		return profile_network(&a, command, argc, argv);
	return profile_layers(&a, command, argc, argv);
}
