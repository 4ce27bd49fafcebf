/* One (micro-batch size, TP degree) measurement of the layer profiler (profiler.h), private to
 * profiler.c and profiler_measure.c: the phases of an iteration, and the job a measurement
 * fills in. Ownership: the caller owns a job and its times arrays; sl_profiler_measure only
 * writes into them. */
#ifndef SL_PROFILER_PROFILER_MEASURE_H
#define SL_PROFILER_PROFILER_MEASURE_H

#include <stddef.h>

#include "model/model_config.h"
#include "util/err.h"

struct sl_comm;

#define MAX_TP 64

/* Phases of one iteration, in the order they run. The last is not a layer's own pass: the
 * attention core's forward (scores, softmax, weighted sum) rerun on a block forward filled, what
 * selective recomputation adds to a block's backward (gpt_layers.c). The core is memory-bound,
 * so its share of a block's time is not its share of the FLOPs; measured here, the simulator
 * uses it (sim/memory_options.c). Last, so that the other phases run as they did without it. */
enum { F_EMB, F_BLK, F_HEAD, B_HEAD, B_BLK, B_EMB, U_EMB, U_BLK, U_HEAD, R_ATT, PHASES };

struct job {
	const struct sl_model_config *model;
	int mbs, tp, seq, threads, iterations; /* iterations = warmup + repeats */
	double min_sample_s;  /* a timed sample of a phase lasts at least this long */
	int calls[PHASES];    /* calls of the phase per timed sample (set after iteration 0) */
	int calls_known;      /* calls came from an earlier pass: iteration 0 does not count */
	double *times;        /* [iteration][PHASES], the slowest rank's per call (rank 0) */
	double *cpu_times;    /* [iteration][PHASES], the largest CPU time of a rank per call */
	size_t layer_param_bytes[3], layer_cache_bytes[3], workspace_bytes;
	double rss_bytes;
	double runtime_rss_bytes; /* rss_bytes less the tensors: process, libraries, MPI */
};

/* Runs one (mbs, tp) measurement: j->iterations iterations on j->tp TP ranks, threads of this
 * process (comm NULL) or the ranks of comm's job; j->times gets iterations x PHASES seconds. */
int sl_profiler_measure(struct job *j, struct sl_comm *comm, struct sl_err *err);

#endif
