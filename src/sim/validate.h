/* Accuracy against measured runs: simulate every plan file in a folder that carries a measured
 * iteration time ("real", seconds) and peak memory ("max_mem", bytes) — the SOSP'25 validation
 * files — and compare. Relative error = (simulated - measured) / measured. A plan with islands
 * (two or more) is predicted by sl_simulate as every plan is (sim/islands.c: the time per run step
 * over whole rounds, memory with the outer step's copies); its measured figure must be the same
 * statistic (bench/testbed/run_to_validation.py). Where a folder holds both kinds, each kind is
 * also summarised on its own.
 *
 * Ownership: sl_validation_run allocates out->runs; sl_validation_free frees it. Runs are in file
 * name order (stable). */
#ifndef SL_SIM_VALIDATE_H
#define SL_SIM_VALIDATE_H

#include <jansson.h>

#include "sim/sim.h"

struct sl_validation_run {
	char file[256];            /* file name within the folder */
	int stages, pipelines, micro_batch;
	long long global_batch;
	double real_s, sim_s, time_error;
	double real_mem_bytes, sim_mem_bytes, memory_error;
	double red_grads_s;        /* measured, 0 when absent */
	double sim_dp_sync_s;      /* simulated exposed data-parallel sync */
	int islands;               /* the plan's islands; 1 for a synchronous plan */
};

struct sl_error_summary {
	double mean_abs, median_abs, max_abs;
};

struct sl_validation {
	enum sl_cost_model cost_model;
	int run_count;
	int skipped;               /* plan files without real/max_mem */
	struct sl_validation_run *runs;
	struct sl_error_summary time, memory;
	/* by kind, [0] synchronous plans, [1] plans with islands: runs and their summaries */
	int kind_runs[2];
	struct sl_error_summary kind_time[2], kind_memory[2];
};

int sl_validation_run(const struct sl_sim_env *env, const char *dir, enum sl_cost_model cm,
		      struct sl_validation *out, struct sl_err *err);
void sl_validation_free(struct sl_validation *v);

/* {"schema": "sailor.validation/1", "model", "cost_model", "runs": [...], "summary": {...}};
 * each run has "islands"; where some run has islands, the summary has "synchronous" and
 * "islands", each {"runs", "time", "memory"}. */
json_t *sl_validation_to_json(const struct sl_sim_env *env, const struct sl_validation *v);

#endif
