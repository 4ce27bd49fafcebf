/* Roles from the plan: which part of a plan each rank of a distributed job executes.
 *
 * A plan (plan/plan.h) has P stages and D pipelines; replica (k, j) is stage k of pipeline j and
 * runs on tp ranks of one host. The role table numbers the ranks stage-major, then pipeline,
 * then TP rank:
 *   rank = sum over earlier replicas (k', j') in order (k' < k, or k' == k and j' < j) of their
 *          tp, plus t.
 * so the ranks of one replica are consecutive and replica (k, j)'s first rank is
 * replica_first_rank[k * D + j]. Every group of the runtime (TP group of a replica, the
 * data-parallel ranks of a stage, pipeline neighbours, the tied-embedding group) is derived from
 * this one table, on every rank alike, so all ranks agree on them without talking. There is no
 * `world = tp x pp x dp` grid: replicas of a stage may differ in GPU type and TP degree.
 *
 * Micro-batches: pipeline j runs microbatches[j] micro-batches of micro_batch samples per step;
 * they sum to global_batch / micro_batch. Pipeline j takes the global micro-batches
 * first_microbatch[j] .. first_microbatch[j] + microbatches[j] - 1 of the step, in the order
 * single-process training consumes them, so the step sees the same samples.
 *
 * Islands (plan/islands.h): pipeline j belongs to island island_of[j] (all 0 without the
 * section); a rank's `island` and `island_pipeline` (its pipeline's index among its island's
 * pipelines, in pipeline order) say where it sits; island_microbatches[i] is what island i trains
 * per inner step (the sum of its pipelines' counts).
 *
 * Ownership: sl_role_table_build() allocates roles, replica_first_rank, microbatches,
 * first_microbatch, island_of and island_microbatches; sl_role_table_free() releases them.
 */
#ifndef SL_PLAN_ROLES_H
#define SL_PLAN_ROLES_H

#include "plan/plan.h"
#include "util/err.h"

struct sl_role {
	int rank;          /* world rank */
	int stage;         /* k, 0 .. P-1 */
	int pipeline;      /* j, 0 .. D-1 */
	int tp_rank;       /* t, 0 .. tp-1 */
	int tp;            /* the replica's TP degree */
	int first_layer;   /* the stage's plan layers, inclusive */
	int last_layer;
	int gpu, zone;     /* catalogue indices of the replica */
	int host;          /* index into the cluster's hosts; -1 = this host (no cluster file) */
	int island;        /* 0 .. num_islands-1 (0 without islands) */
	int island_pipeline; /* index of this rank's pipeline among its island's, 0-based */
};

struct sl_role_table {
	int world_size;
	int num_stages;            /* P */
	int num_pipelines;         /* D */
	int micro_batch;
	long long global_batch;
	struct sl_role *roles;     /* world_size entries, roles[r].rank == r */
	int *replica_first_rank;   /* P*D: rank of TP rank 0 of replica (k, j) */
	int *microbatches;         /* D: micro-batches of pipeline j per step */
	int *first_microbatch;     /* D: global index of pipeline j's first micro-batch */
	int num_islands;           /* 1 without an "islands" section */
	int *island_of;            /* D: island of pipeline j */
	int *island_microbatches;  /* num_islands: micro-batches an island trains per inner step */
	int *island_pipelines;     /* num_islands: pipelines of island i */
};

/* Builds the table for plan with global batch G (> 0). Uneven counts come from the plan's
 * microbatches_per_pipeline; without them G must be a multiple of micro_batch * D (otherwise the
 * error says to give microbatches_per_pipeline). Errors name plan->path. */
int sl_role_table_build(const struct sl_plan *plan, long long global_batch,
			struct sl_role_table *table, struct sl_err *err);
void sl_role_table_free(struct sl_role_table *table);

/* The role of replica (stage, pipeline)'s TP rank t. */
static inline const struct sl_role *sl_role_of(const struct sl_role_table *table, int stage,
					       int pipeline, int t)
{
	return &table->roles[table->replica_first_rank[stage * table->num_pipelines + pipeline] + t];
}

#endif
