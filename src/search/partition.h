/* Layer partitions the planner tries for a pipeline of P stages.
 *
 * A partition is P contiguous layer ranges covering 0..L-1; stage k is
 * [first[k], first[k+1] - 1] with first[P] = L. Candidates, deduplicated, in this order:
 *   1. the SOSP'25 planner's near-uniform split (L / P layers each, the remainder to the last
 *      stages; SIMULATOR.md section 3), so our search space contains that system's;
 *   2. for each GPU type given, the split that minimises the slowest stage's compute time on that
 *      type (exact, by dynamic programming over the per-layer times), because the embedding and
 *      the head are much lighter / heavier than a block and uniform splits leave time on the table;
 *   3. every contiguous split when there are at most SL_PARTITION_ENUMERATE_MAX of them (small
 *      models), so small search spaces are searched completely.
 */
#ifndef SL_SEARCH_PARTITION_H
#define SL_SEARCH_PARTITION_H

#include "plan/plan.h"

#define SL_PARTITION_ENUMERATE_MAX 16
#define SL_PARTITION_MAX_CANDIDATES (SL_PARTITION_ENUMERATE_MAX + SL_MAX_GPU_TYPES + 1)

struct sl_partition {
	int num_stages;
	int first[SL_PLAN_MAX_STAGES + 1]; /* first[num_stages] = num_layers */
};

#define SL_PARTITION_MAX_LAYERS 512

/* The tables of the balanced split's dynamic programme, with room for any model and depth: the
 * caller's (a search keeps one per thread), not static per thread, because every thread's copy
 * of a static thread-local table is zeroed in full when the thread starts (0.4 MB, ~100 page
 * faults each), though a split touches only its rows. */
struct sl_partition_scratch {
	double prefix[SL_PARTITION_MAX_LAYERS + 1];
	double best[SL_PLAN_MAX_STAGES + 1][SL_PARTITION_MAX_LAYERS + 1];
	int cut[SL_PLAN_MAX_STAGES + 1][SL_PARTITION_MAX_LAYERS + 1];
};

/* layer_time_s[g] (NULL entries skipped) holds per-layer times of GPU type g, num_layers long.
 * Writes up to max_out partitions into out and returns their count. scratch: any contents. */
int sl_partition_candidates(int num_layers, int num_stages, const double *const *layer_time_s,
			    int gpu_count, struct sl_partition_scratch *scratch,
			    struct sl_partition *out, int max_out);

/* Number of contiguous splits of n layers into p stages, C(n-1, p-1), saturating at limit. */
long long sl_partition_count(int num_layers, int num_stages, long long limit);

/* Visits every contiguous split; stops early and returns the visitor's non-zero value. */
int sl_partition_each(int num_layers, int num_stages,
		      int (*visit)(const struct sl_partition *part, void *ctx), void *ctx);

#endif
