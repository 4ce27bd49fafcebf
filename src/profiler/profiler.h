/* The layer profiler: measures our own runtime's layers (train/gpt_layers.h) on this host and
 * returns a profile in the format the simulator reads (profile.h).
 *
 * For each (micro-batch size, TP degree) it builds the three kinds of layer of the model (the
 * embedding, one transformer block, the head with its own copy of the token table, as a stage
 * holding the head without layer 0 has) on each of tp TP ranks, then runs `warmup` untimed and
 * one timed iteration, `repeats` times over: pass r builds and times every (micro-batch, TP)
 * entry once, so that a slow spell of the machine falls on a few samples of each entry rather
 * than on all samples of some. An iteration is: forward embedding, block, head; backward head, block,
 * embedding; then per layer the gradient norm and AdamW over its parameters (the runtime's
 * optimizer step). The block phases go through as many copies of the block as the model has
 * blocks, one call each in turn, as a stage runs its blocks: one block called over and over
 * would find its weights in the cache every time. Each phase of a timed iteration is called as
 * many times as make it last
 * min_sample_s (counted after the first iteration) and its time divided by the calls: short
 * phases on a device that is a CPU quota would otherwise be timed as whole quota bursts. A layer's time in one iteration is the slowest TP rank's; the profile keeps
 * the median over the repeats. All blocks of a model have the same shape, so the one block's
 * times stand for layers 1..N.
 *
 * TP ranks are either threads of this process with an in-process all-reduce (a barrier, then a
 * sum in rank order; no mpirun needed), or, with options.comm, the ranks of an MPI job placed on
 * one host the way `sailor run` places a replica (`sailor profile --cluster F --host H`): the
 * all-reduces then go through MPI and each rank runs on its own device, which is what a run's
 * TP group does (on the testbed, devices that are CPU quotas and MPI ranks that poll make TP
 * groups much slower than threads suggest). Each rank computes on `threads` OpenMP threads.
 *
 * The profile (profile.h's format, readable by sl_profile_load):
 *   {"schema": "sailor.profile/1",
 *    "source": {provenance: host, date, model, device type, threads, OpenBLAS core, warmup,
 *               repeats, seq_len, command; per entry "<mbs>/<tp>": spread of each measured
 *               phase ((max - min) / median over the repeats), the AdamW time per parameter,
 *               and memory: parameter bytes (values, gradients, two moments) and activation
 *               cache bytes per layer kind, the workspace, and this process's resident set},
 *    "<mbs>": {"<tp>": {"<layer>": [forward_s, backward_s, update_s], ...}, ...}, ...}
 * update_s is, as in the shipped files, the optimizer step of a model of embedding + 2 blocks +
 * head (SIMULATOR.md 2.2: what sl_sim_profiled_model_params counts), copied into every layer.
 *
 * Ownership: sl_profiler_run returns a new jansson object the caller json_decref()s.
 */
#ifndef SL_PROFILER_PROFILER_H
#define SL_PROFILER_PROFILER_H

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

struct sl_comm;

#define SL_PROFILER_MAX_SIZES 8
#define SL_PROFILER_MAX_TP 64
#define SL_PROFILE_SCHEMA "sailor.profile/1"

struct sl_profiler_options {
	const char *model;        /* a name in data/models/ or a hyper-parameter file */
	const char *gpu;          /* the device type the numbers stand for (catalogue name) */
	int mbs[SL_PROFILER_MAX_SIZES];
	int mbs_count;
	int tp[SL_PROFILER_MAX_SIZES];
	int tp_count;
	int seq_len;              /* tokens per sequence; 0 = the model's */
	int threads;              /* CPU threads of each TP rank (>= 1) */
	int repeats;              /* timed iterations (>= 1); the median is kept */
	int warmup;               /* untimed iterations before them (>= 0) */
	double min_sample_s;      /* each timed sample of a phase repeats it until it lasts this
				   * long (0: one call); the time kept is per call */
	double cpu_quota_cores;   /* the device's CPU quota (catalogue cpu_quota.cores) when it is
				   * one, else 0: with one thread per rank, times are then the
				   * ranks' CPU time / cores (the time at the quota's average rate) */
	const char *command;      /* the command line, for provenance (may be NULL) */
	int verbose;              /* one line per entry on stderr */
	struct sl_comm *comm;     /* NULL: TP ranks are threads; else this process is TP rank
				   * comm->rank of an MPI job of exactly tp ranks (one tp value),
				   * as `sailor run` would run them (rank 0 returns the profile) */
};

/* Measures every (mbs, tp) of o and returns the profile in *out. Errors: the model cannot be
 * loaded, a TP degree that does not divide heads and ffn_hidden, a sequence longer than the
 * model's, memory. */
int sl_profiler_run(const struct sl_profiler_options *o, json_t **out, struct sl_err *err);

/* Writes the profile to "<dir>/<model>/<gpu>.json" (creating the folders; atomically: a
 * temporary file, then rename) and the path written into path_out (may be NULL). When that file
 * already holds a sailor profile, its (mbs, tp) entries that this profile lacks are merged into
 * profile first (so TP degrees can be measured in separate runs); a file there that is not one
 * is an error and is left alone. */
int sl_profiler_write(json_t *profile, const char *dir, const char *model,
		      const char *gpu, char *path_out, size_t path_size, struct sl_err *err);

/* Parses a comma-separated list of whole numbers in [min, max] ("1,2,4"), at most max_count,
 * no duplicates; sorted ascending on return. */
int sl_profiler_parse_list(const char *text, int min, int max, int *out, int max_count,
			   int *count, struct sl_err *err);

#endif
